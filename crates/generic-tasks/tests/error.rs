//! The OpenAI-style error body of `/v1/video/*` (DESIGN §7, wire-formats §1.3).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use tollgate_generic_tasks::{ErrorBody, FieldError, INVALID_REQUEST_ERROR, Rule, SERVER_ERROR};

#[test]
fn all_four_keys_are_always_present() {
    let body = ErrorBody::new(SERVER_ERROR, "upstream unavailable");
    assert_eq!(
        serde_json::to_value(&body).unwrap(),
        json!({"error": {"message": "upstream unavailable", "type": "server_error", "param": null, "code": null}})
    );
}

#[test]
fn field_errors_map_to_param_and_code() {
    for rule in Rule::ALL {
        let err = FieldError::new("duration", rule, "m");
        let body = ErrorBody::from(err.clone());
        assert_eq!(body, ErrorBody::from(&err));
        assert_eq!(body.error.kind, INVALID_REQUEST_ERROR);
        assert_eq!(body.error.param.as_deref(), Some("duration"));
        assert_eq!(body.error.code.as_deref(), Some(rule.code()));
    }
}

#[test]
fn not_found_bodies() {
    assert_eq!(
        serde_json::to_value(ErrorBody::model_not_found("wave-9")).unwrap(),
        json!({"error": {
            "message": "The model `wave-9` does not exist or you do not have access to it.",
            "type": "invalid_request_error", "param": "model", "code": "model_not_found"
        }})
    );
    let body = ErrorBody::task_not_found("vt_404");
    assert_eq!(body.error.code.as_deref(), Some("task_not_found"));
    assert!(body.message().contains("vt_404"));
}

#[test]
fn lenient_decoding_and_round_trip() {
    let body: ErrorBody =
        serde_json::from_str(r#"{"error":{"message":null,"code":1008,"extra":1}}"#).unwrap();
    assert_eq!(body.error.message, "");
    assert_eq!(body.error.kind, "");
    assert_eq!(body.error.param, None);
    assert_eq!(body.error.code.as_deref(), Some("1008"));
    let full = ErrorBody::new(INVALID_REQUEST_ERROR, "x")
        .with_param("p")
        .with_code("c");
    let text = serde_json::to_string(&full).unwrap();
    assert_eq!(serde_json::from_str::<ErrorBody>(&text).unwrap(), full);
    assert!(serde_json::from_str::<ErrorBody>(r#"{"message":"no envelope"}"#).is_err());
}
