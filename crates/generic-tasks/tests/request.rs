//! `POST /v1/video/generations`: decoding the create request — the `seconds` alias (number and
//! string), conflicts, explicit nulls, unknown fields kept for passthrough, type errors.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use serde_json::json;
use tollgate_generic_tasks::CreateVideoRequest;

fn decode(value: serde_json::Value) -> Result<CreateVideoRequest, serde_json::Error> {
    serde_json::from_value(value)
}

fn decode_str(body: &str) -> Result<CreateVideoRequest, serde_json::Error> {
    serde_json::from_str(body)
}

#[test]
fn full_request_decodes_every_field() {
    let req = decode(json!({
        "model": "horse-1.1-t2v",
        "prompt": "A horse",
        "duration": 6,
        "resolution": "1080P",
        "aspect_ratio": "9:16",
        "seed": -42,
        "negative_prompt": "blur",
        "sound": false,
        "watermark": true
    }))
    .unwrap();
    assert_eq!(req.model, "horse-1.1-t2v");
    assert_eq!(req.prompt, "A horse");
    assert_eq!(req.duration, Some(6.0));
    assert_eq!(req.resolution.as_deref(), Some("1080P"));
    assert_eq!(req.aspect_ratio.as_deref(), Some("9:16"));
    assert_eq!(req.seed, Some(-42));
    assert_eq!(req.negative_prompt.as_deref(), Some("blur"));
    assert_eq!(req.sound, Some(false));
    assert_eq!(req.watermark, Some(true));
    assert!(req.extra.is_empty());
}

#[test]
fn duration_as_number_and_fraction() {
    assert_eq!(decode(json!({"duration": 8})).unwrap().duration, Some(8.0));
    assert_eq!(
        decode(json!({"duration": 7.5})).unwrap().duration,
        Some(7.5)
    );
    // A numeric string under `duration` is accepted too.
    assert_eq!(
        decode(json!({"duration": "5"})).unwrap().duration,
        Some(5.0)
    );
}

#[test]
fn seconds_alias_as_number() {
    let req = decode(json!({"model": "omni", "prompt": "p", "seconds": 4})).unwrap();
    assert_eq!(req.duration, Some(4.0));
    assert!(!req.extra.contains_key("seconds"));
}

#[test]
fn seconds_alias_as_string() {
    // OpenAI-style clients send seconds as a string (wire-formats §7.2).
    let req = decode(json!({"model": "omni", "prompt": "p", "seconds": "8"})).unwrap();
    assert_eq!(req.duration, Some(8.0));
    let req = decode(json!({"seconds": "2.5"})).unwrap();
    assert_eq!(req.duration, Some(2.5));
}

#[test]
fn seconds_is_sent_on_as_duration() {
    let req = decode(json!({"model": "omni", "prompt": "p", "seconds": "4"})).unwrap();
    assert_eq!(
        serde_json::to_value(&req).unwrap(),
        json!({"model": "omni", "prompt": "p", "duration": 4.0})
    );
}

#[test]
fn both_keys_with_the_same_value_are_accepted() {
    let req = decode(json!({"duration": 8, "seconds": "8"})).unwrap();
    assert_eq!(req.duration, Some(8.0));
    let req = decode(json!({"seconds": 8.0, "duration": "8"})).unwrap();
    assert_eq!(req.duration, Some(8.0));
}

#[test]
fn both_keys_with_different_values_are_refused_naming_seconds() {
    for body in [
        r#"{"model":"omni","prompt":"p","duration":4,"seconds":"8"}"#,
        r#"{"model":"omni","prompt":"p","seconds":8,"duration":4}"#,
        r#"{"duration":4.5,"seconds":4}"#,
    ] {
        let err = decode_str(body).unwrap_err();
        let message = err.to_string();
        assert!(message.contains("'seconds'"), "{body}: {message}");
        assert!(message.contains("'duration'"), "{body}: {message}");
        assert!(err.is_data(), "{body}: {message}");
    }
    let message = decode_str(r#"{"duration":4,"seconds":"8"}"#)
        .unwrap_err()
        .to_string();
    assert!(
        message.starts_with("'seconds' (8) conflicts with 'duration' (4)"),
        "{message}"
    );
}

#[test]
fn one_key_null_and_the_other_set_is_not_a_conflict() {
    assert_eq!(
        decode(json!({"duration": null, "seconds": "6"}))
            .unwrap()
            .duration,
        Some(6.0)
    );
    assert_eq!(
        decode(json!({"duration": 6, "seconds": null}))
            .unwrap()
            .duration,
        Some(6.0)
    );
    assert_eq!(
        decode(json!({"seconds": null, "duration": 6}))
            .unwrap()
            .duration,
        Some(6.0)
    );
}

#[test]
fn non_numeric_durations_are_decode_errors() {
    for value in [
        json!("eight"),
        json!(""),
        json!("8s"),
        json!(" 8"),
        json!("NaN"),
        json!("inf"),
        json!("1e400"),
        json!(true),
        json!([8]),
        json!({"s": 8}),
    ] {
        assert!(
            decode(json!({"duration": value.clone()})).is_err(),
            "duration {value}"
        );
        let err = decode(json!({"seconds": value.clone()})).unwrap_err();
        assert!(
            err.to_string().contains("seconds"),
            "seconds {value}: {err}"
        );
    }
}

#[test]
fn explicit_nulls_are_absent_values() {
    let req = decode(json!({
        "model": null,
        "prompt": null,
        "duration": null,
        "seconds": null,
        "resolution": null,
        "aspect_ratio": null,
        "seed": null,
        "negative_prompt": null,
        "sound": null,
        "watermark": null
    }))
    .unwrap();
    assert_eq!(req, CreateVideoRequest::new("", ""));
    assert!(req.extra.is_empty());
}

#[test]
fn missing_required_fields_decode_as_empty() {
    let req = decode(json!({})).unwrap();
    assert_eq!(req.model, "");
    assert_eq!(req.prompt, "");
}

#[test]
fn unknown_fields_are_kept_for_passthrough() {
    let req = decode(json!({
        "model": "wave-2-7-video",
        "prompt": "p",
        "size": "1280x720",
        "metadata": {"ratio": "16:9"},
        "image": null
    }))
    .unwrap();
    assert_eq!(req.extra.len(), 3);
    assert_eq!(req.extra["size"], "1280x720");
    assert_eq!(req.extra["metadata"], json!({"ratio": "16:9"}));
    assert_eq!(req.extra["image"], serde_json::Value::Null);
    let back = serde_json::to_value(&req).unwrap();
    assert_eq!(
        back,
        json!({
            "model": "wave-2-7-video",
            "prompt": "p",
            "size": "1280x720",
            "metadata": {"ratio": "16:9"},
            "image": null
        })
    );
}

#[test]
fn wrong_types_are_decode_errors() {
    for body in [
        json!({"model": 1}),
        json!({"prompt": ["a"]}),
        json!({"seed": "7"}),
        json!({"seed": 1.5}),
        json!({"sound": "true"}),
        json!({"watermark": 1}),
        json!({"resolution": 720}),
        json!({"aspect_ratio": 1.7}),
        json!({"negative_prompt": false}),
        json!([]),
        json!("model"),
    ] {
        assert!(decode(body.clone()).is_err(), "{body}");
    }
}

#[test]
fn repeated_known_keys_are_refused() {
    for body in [
        r#"{"model":"a","model":"b"}"#,
        r#"{"duration":4,"duration":4}"#,
        r#"{"seconds":"4","seconds":"4"}"#,
        r#"{"sound":true,"sound":true}"#,
    ] {
        let err = decode_str(body).unwrap_err();
        assert!(err.to_string().contains("duplicate field"), "{body}: {err}");
    }
}

#[test]
fn full_round_trip() {
    let mut req = CreateVideoRequest::new("wave-3-0-video", "Rain on glass");
    req.duration = Some(12.0);
    req.resolution = Some("480p".into());
    req.aspect_ratio = Some("auto".into());
    req.sound = Some(true);
    req.watermark = Some(false);
    req.extra.insert("user".into(), json!("u-1"));
    let text = serde_json::to_string(&req).unwrap();
    assert_eq!(decode_str(&text).unwrap(), req);
}

#[test]
fn minimal_request_serializes_without_optional_fields() {
    let req = CreateVideoRequest::new("imagine-video", "p");
    assert_eq!(
        serde_json::to_string(&req).unwrap(),
        r#"{"model":"imagine-video","prompt":"p"}"#
    );
}

proptest! {
    #[test]
    fn seconds_string_and_number_agree(n in 0u32..100_000) {
        let from_string = decode(json!({"seconds": n.to_string()})).unwrap();
        let from_number = decode(json!({"seconds": n})).unwrap();
        prop_assert_eq!(from_string.duration, Some(f64::from(n)));
        prop_assert_eq!(from_number.duration, Some(f64::from(n)));
    }

    #[test]
    fn conflict_iff_different(a in 0u32..50, b in 0u32..50) {
        let result = decode(json!({"duration": a, "seconds": b.to_string()}));
        prop_assert_eq!(result.is_err(), a != b);
    }

    #[test]
    fn decoding_never_panics_and_round_trips(
        entries in proptest::collection::vec(
            (
                prop_oneof![
                    Just("model".to_owned()), Just("prompt".to_owned()), Just("duration".to_owned()),
                    Just("seconds".to_owned()), Just("seed".to_owned()), Just("sound".to_owned()),
                    "[a-z_]{1,8}",
                ],
                prop_oneof![
                    Just(serde_json::Value::Null),
                    any::<bool>().prop_map(serde_json::Value::from),
                    any::<i64>().prop_map(serde_json::Value::from),
                    (-1e6f64..1e6).prop_map(serde_json::Value::from),
                    "\\PC{0,8}".prop_map(serde_json::Value::from),
                ],
            ),
            0..8,
        )
    ) {
        let body: String = {
            let parts: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{}:{}", serde_json::to_string(k).unwrap(), v))
                .collect();
            format!("{{{}}}", parts.join(","))
        };
        if let Ok(req) = decode_str(&body) {
            let again = decode_str(&serde_json::to_string(&req).unwrap()).unwrap();
            prop_assert_eq!(again, req);
        }
    }
}
