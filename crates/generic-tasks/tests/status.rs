//! States (docs/api.md §3.2): the four states on the wire, the transitions, and the mapping of every
//! state a generic upstream may report, case variants and unknown values included.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use tollgate_generic_tasks::{UpstreamStatus, VideoStatus};

use VideoStatus::{Completed, Failed, InProgress, Queued};

#[test]
fn video_status_wire_values() {
    for (status, wire) in [
        (Queued, "queued"),
        (InProgress, "in_progress"),
        (Completed, "completed"),
        (Failed, "failed"),
    ] {
        assert_eq!(
            serde_json::to_string(&status).unwrap(),
            format!("\"{wire}\"")
        );
        assert_eq!(status.as_str(), wire);
        assert_eq!(status.to_string(), wire);
        assert_eq!(
            serde_json::from_str::<VideoStatus>(&format!("\"{wire}\"")).unwrap(),
            status
        );
    }
}

#[test]
fn clients_read_succeeded_as_completed() {
    for wire in ["succeeded", "SUCCEEDED", "success", "SUCCESS", "Completed"] {
        assert_eq!(
            serde_json::from_str::<VideoStatus>(&format!("\"{wire}\"")).unwrap(),
            Completed,
            "{wire}"
        );
    }
    assert!(serde_json::from_str::<VideoStatus>("1").is_err());
}

#[test]
fn terminal_states() {
    assert_eq!(
        VideoStatus::ALL.map(|s| s.is_terminal()),
        [false, false, true, true]
    );
    assert_eq!(
        VideoStatus::ALL.map(|s| s.is_success()),
        [false, false, true, false]
    );
}

#[test]
fn transitions_follow_spec_3_2() {
    let allowed = [
        (Queued, InProgress),
        (Queued, Completed),
        (Queued, Failed),
        (InProgress, Completed),
        (InProgress, Failed),
    ];
    for from in VideoStatus::ALL {
        for to in VideoStatus::ALL {
            assert_eq!(
                from.can_transition_to(to),
                allowed.contains(&(from, to)),
                "{from} -> {to}"
            );
        }
    }
}

#[test]
fn upstream_mapping_table() {
    let table: &[(&str, UpstreamStatus, VideoStatus, bool)] = &[
        ("queued", UpstreamStatus::Queued, Queued, false),
        ("pending", UpstreamStatus::Pending, Queued, false),
        ("submitted", UpstreamStatus::Submitted, Queued, false),
        ("not_start", UpstreamStatus::NotStart, Queued, false),
        ("in_progress", UpstreamStatus::InProgress, InProgress, false),
        ("processing", UpstreamStatus::Processing, InProgress, false),
        ("running", UpstreamStatus::Running, InProgress, false),
        ("completed", UpstreamStatus::Completed, Completed, true),
        ("succeeded", UpstreamStatus::Succeeded, Completed, true),
        ("success", UpstreamStatus::Success, Completed, true),
        ("failed", UpstreamStatus::Failed, Failed, true),
        ("failure", UpstreamStatus::Failure, Failed, true),
        ("cancelled", UpstreamStatus::Cancelled, Failed, true),
        ("canceled", UpstreamStatus::Cancelled, Failed, true),
        ("expired", UpstreamStatus::Expired, Failed, true),
    ];
    for (reported, variant, mapped, terminal) in table {
        for spelling in [
            reported.to_string(),
            reported.to_uppercase(),
            capitalize(reported),
        ] {
            let status = UpstreamStatus::parse(&spelling);
            assert_eq!(&status, variant, "{spelling}");
            assert_eq!(status.video_status(), *mapped, "{spelling}");
            assert_eq!(status.is_terminal(), *terminal, "{spelling}");
            assert!(status.is_known());
        }
    }
}

fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    chars
        .next()
        .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

#[test]
fn new_api_capitals_and_separators() {
    // wire-formats §7.1: NOT_START, SUBMITTED, QUEUED, IN_PROGRESS, SUCCESS, FAILURE, UNKNOWN.
    assert_eq!(UpstreamStatus::parse("NOT_START"), UpstreamStatus::NotStart);
    assert_eq!(
        UpstreamStatus::parse("IN_PROGRESS"),
        UpstreamStatus::InProgress
    );
    assert_eq!(
        UpstreamStatus::parse("in-progress"),
        UpstreamStatus::InProgress
    );
    assert_eq!(
        UpstreamStatus::parse("In Progress"),
        UpstreamStatus::InProgress
    );
    assert_eq!(UpstreamStatus::parse(" queued\n"), UpstreamStatus::Queued);
    assert_eq!(UpstreamStatus::parse("FAILURE").video_status(), Failed);
    let unknown = UpstreamStatus::parse("UNKNOWN");
    assert_eq!(unknown, UpstreamStatus::Unknown("UNKNOWN".into()));
    assert_eq!(unknown.video_status(), InProgress);
}

#[test]
fn unknown_states_are_kept_and_still_running() {
    for reported in ["", "warming_up", "done", "50%", "queued!", "已完成"] {
        let status = UpstreamStatus::parse(reported);
        assert_eq!(status, UpstreamStatus::Unknown(reported.into()));
        assert_eq!(status.as_str(), reported);
        assert!(!status.is_known());
        assert!(!status.is_terminal());
        assert_eq!(status.video_status(), InProgress);
        assert_eq!(status.failure_code(), None);
        assert_eq!(
            serde_json::from_str::<VideoStatus>(&serde_json::to_string(reported).unwrap()).unwrap(),
            InProgress
        );
    }
}

#[test]
fn failure_codes() {
    assert_eq!(
        UpstreamStatus::Failed.failure_code(),
        Some("generation_failed")
    );
    assert_eq!(
        UpstreamStatus::Failure.failure_code(),
        Some("generation_failed")
    );
    assert_eq!(UpstreamStatus::Cancelled.failure_code(), Some("cancelled"));
    assert_eq!(UpstreamStatus::Expired.failure_code(), Some("expired"));
    assert_eq!(UpstreamStatus::Succeeded.failure_code(), None);
    assert_eq!(UpstreamStatus::Running.failure_code(), None);
}

#[test]
fn upstream_status_serde() {
    assert_eq!(
        serde_json::from_str::<UpstreamStatus>(r#""CANCELED""#).unwrap(),
        UpstreamStatus::Cancelled
    );
    assert_eq!(
        serde_json::to_string(&UpstreamStatus::Cancelled).unwrap(),
        r#""cancelled""#
    );
    assert_eq!(
        serde_json::to_string(&UpstreamStatus::Unknown("Weird".into())).unwrap(),
        r#""Weird""#
    );
    assert_eq!(
        "SUCCESS".parse::<UpstreamStatus>(),
        Ok(UpstreamStatus::Success)
    );
    assert_eq!(VideoStatus::from(&UpstreamStatus::Pending), Queued);
    assert_eq!(UpstreamStatus::from("running").to_string(), "running");
}

proptest! {
    #[test]
    fn parse_is_case_insensitive_and_never_panics(reported in "\\PC{0,16}") {
        let lower = UpstreamStatus::parse(&reported.to_ascii_lowercase());
        let upper = UpstreamStatus::parse(&reported.to_ascii_uppercase());
        prop_assert_eq!(lower.video_status(), upper.video_status());
        prop_assert_eq!(lower.is_known(), upper.is_known());
        // A known state serializes to a spelling that parses back to itself.
        let status = UpstreamStatus::parse(&reported);
        if status.is_known() {
            prop_assert_eq!(UpstreamStatus::parse(status.as_str()), status);
        }
    }
}
