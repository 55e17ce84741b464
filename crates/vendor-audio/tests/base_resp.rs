//! The `base_resp` envelope, its codes and their HTTP statuses (wire-formats §3.4).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use tollgate_vendor_audio::base_resp::{BaseResp, codes, http_status};
use tollgate_vendor_audio::{FieldError, Rule};

#[test]
fn success_and_error_envelopes() {
    let ok = BaseResp::success();
    assert_eq!(
        serde_json::to_value(&ok).unwrap(),
        json!({"status_code": 0, "status_msg": "success"})
    );
    assert!(ok.is_success());
    assert_eq!(ok.http_status(), 200);

    let err = BaseResp::error(codes::INVALID_API_KEY, "invalid api key");
    assert!(!err.is_success());
    assert_eq!(err.status_code, 2049);
    assert_eq!(err.status_msg, "invalid api key");
    assert_eq!(err.http_status(), 401);
}

#[test]
fn a_missing_status_msg_decodes_as_empty() {
    let resp: BaseResp = serde_json::from_str(r#"{"status_code": 1004}"#).unwrap();
    assert_eq!(resp, BaseResp::error(1004, ""));
    assert!(!resp.is_success());
    let ok: BaseResp = serde_json::from_str(r#"{"status_code": 0}"#).unwrap();
    assert!(ok.is_success());
    assert!(serde_json::from_str::<BaseResp>(r#"{"status_msg": "success"}"#).is_err());
}

#[test]
fn a_field_error_is_invalid_parameters() {
    let err = FieldError::new(
        "voice_setting.pitch",
        Rule::OutOfRange,
        "'voice_setting.pitch' must be an integer between -12 and 12",
    );
    let resp = BaseResp::from(&err);
    assert_eq!(resp.status_code, codes::INVALID_PARAMETERS);
    assert_eq!(resp.status_msg, err.message);
    assert_eq!(resp.http_status(), 400);
}

#[test]
fn http_status_follows_the_reference_mapping() {
    let table: &[(&[i64], u16)] = &[
        (&[0], 200),
        (&[1002, 1039, 1041, 2045], 429),
        (&[1004, 2049], 401),
        (&[1008, 1028, 1030, 2056], 429),
        (&[2013, 1042, 20132], 400),
        (&[1026, 1027], 400),
        (&[1043, 1044, 2037, 2048], 400),
        (&[2038, 2042, 2061], 403),
        (&[2039], 409),
        (&[1001], 504),
        (&[1013, 1024, 1033], 500),
        (&[1000], 502),
        (
            &[1, -1, 999, 1003, 2000, 9999, 99999, i64::MIN, i64::MAX],
            502,
        ),
    ];
    for (codes, status) in table {
        for &code in *codes {
            assert_eq!(http_status(code), *status, "code {code}");
        }
    }
}

#[test]
fn every_known_code_has_a_meaning_and_an_error_status() {
    assert_eq!(codes::ALL.len(), 29);
    for (i, &(code, meaning)) in codes::ALL.iter().enumerate() {
        assert!(!meaning.is_empty());
        assert_eq!(codes::meaning(code), Some(meaning));
        assert!(
            !codes::ALL[..i].iter().any(|&(other, _)| other == code),
            "duplicate {code}"
        );
        let status = http_status(code);
        if code == codes::SUCCESS {
            assert_eq!(status, 200);
        } else {
            assert!((400..600).contains(&status), "{code} -> {status}");
        }
    }
    assert_eq!(
        codes::meaning(codes::INVALID_PARAMETERS),
        Some("invalid parameters")
    );
    assert_eq!(codes::meaning(31337), None);
}

#[test]
fn named_codes_have_the_reference_values() {
    assert_eq!(
        [
            codes::SUCCESS,
            codes::UNKNOWN,
            codes::TIMEOUT,
            codes::RATE_LIMIT,
            codes::AUTH,
            codes::INSUFFICIENT_BALANCE,
            codes::INTERNAL,
            codes::INVALID_PARAMETERS,
            codes::INVALID_API_KEY,
            codes::INVALID_SAMPLES_OR_VOICE_ID,
        ],
        [0, 1000, 1001, 1002, 1004, 1008, 1013, 2013, 2049, 20132]
    );
}
