//! The task record, its status and state machine, the create response, DELETE semantics and
//! Ark's error body.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use tollgate_clip_tasks::task::{TASKS_PATH, task_id_from_path, task_path};
use tollgate_clip_tasks::{
    ArkError, CreateTaskResponse, DeleteEffect, Task, TaskContent, TaskError, TaskStatus, Usage,
    delete_effect,
};

/// The task record example of wire-formats §5.2.
fn reference_record() -> Value {
    json!({
        "id": "cgt-20260101123456-abcde",
        "model": "doubao-seedance-1-5-pro-251215",
        "status": "succeeded",
        "content": {"video_url": "https://ark-content-generation-...tos...volces.com/xxx.mp4",
                    "last_frame_url": "https://.../last.png"},
        "usage": {"completion_tokens": 108900, "total_tokens": 108900},
        "created_at": 1767240000, "updated_at": 1767240062,
        "seed": 42, "resolution": "720p", "ratio": "16:9", "duration": 5, "framespersecond": 24,
        "generate_audio": true, "draft": false, "service_tier": "default",
        "execution_expires_after": 172800, "priority": 0
    })
}

#[test]
fn reference_record_decodes() {
    let task: Task = serde_json::from_value(reference_record()).unwrap();
    assert_eq!(task.id, "cgt-20260101123456-abcde");
    assert_eq!(task.model, "doubao-seedance-1-5-pro-251215");
    assert_eq!(task.status, TaskStatus::Succeeded);
    assert_eq!(
        task.video_url(),
        Some("https://ark-content-generation-...tos...volces.com/xxx.mp4")
    );
    assert_eq!(
        task.content.as_ref().unwrap().last_frame_url.as_deref(),
        Some("https://.../last.png")
    );
    assert_eq!(task.completion_tokens(), Some(108_900));
    assert_eq!(task.usage.as_ref().unwrap().total_tokens, Some(108_900));
    assert_eq!(
        (task.created_at, task.updated_at),
        (Some(1_767_240_000), Some(1_767_240_062))
    );
    assert_eq!(task.seed, Some(42));
    assert_eq!(task.resolution.as_deref(), Some("720p"));
    assert_eq!(task.ratio.as_deref(), Some("16:9"));
    assert_eq!((task.duration, task.framespersecond), (Some(5), Some(24)));
    assert_eq!((task.generate_audio, task.draft), (Some(true), Some(false)));
    assert_eq!(task.service_tier.as_deref(), Some("default"));
    assert_eq!(
        (task.execution_expires_after, task.priority),
        (Some(172_800), Some(0))
    );
    assert_eq!(task.error, None);
    assert!(task.extra.is_empty(), "{:?}", task.extra);
    // And it re-serializes to the same JSON.
    assert_eq!(serde_json::to_value(&task).unwrap(), reference_record());
}

#[test]
fn failed_record_with_nulls_and_unmodelled_fields() {
    let task: Task = serde_json::from_value(json!({
        "id": "cgt-2", "model": null, "status": "failed",
        "content": null, "usage": null,
        "error": {"code": "OutputVideoSensitiveContentDetected", "message": "blocked", "param": null},
        "created_at": 1, "updated_at": null, "seed": null, "tools": [{"type": "web_search"}],
        "subdivisionlevel": "high", "fileformat": "mp4", "revised_prompt": "a cat",
        "draft_task_id": null, "safety_identifier": "user-1", "frames": 121
    }))
    .unwrap();
    assert_eq!(task.model, "");
    assert_eq!(task.status, TaskStatus::Failed);
    assert_eq!((&task.content, &task.usage), (&None, &None));
    let error = task.error.clone().unwrap();
    assert_eq!(
        (error.code.as_str(), error.message.as_str()),
        ("OutputVideoSensitiveContentDetected", "blocked")
    );
    assert_eq!(error.extra["param"], Value::Null);
    assert_eq!(task.tools, Some(json!([{"type": "web_search"}])));
    assert_eq!(task.extra["subdivisionlevel"], "high");
    assert_eq!(task.extra["fileformat"], "mp4");
    assert_eq!(task.revised_prompt.as_deref(), Some("a cat"));
    assert_eq!(task.frames, Some(121));
    assert_eq!(task.video_url(), None);
    assert_eq!(task.completion_tokens(), None);
}

#[test]
fn record_needs_id_and_status() {
    assert!(serde_json::from_value::<Task>(json!({"model": "m", "status": "queued"})).is_err());
    assert!(serde_json::from_value::<Task>(json!({"id": "x", "model": "m"})).is_err());
}

#[test]
fn built_record_serializes_only_what_is_set() {
    let mut task = Task::new("cgt-1", "clipgen-cn-2.0-260128", TaskStatus::Succeeded);
    task.content = Some(TaskContent {
        video_url: Some("https://cdn.example.com/v.mp4".into()),
        ..TaskContent::default()
    });
    task.usage = Some(Usage {
        completion_tokens: Some(87_300),
        total_tokens: Some(87_300),
        ..Usage::default()
    });
    task.duration = Some(4);
    assert_eq!(
        serde_json::to_value(&task).unwrap(),
        json!({"id": "cgt-1", "model": "clipgen-cn-2.0-260128", "status": "succeeded",
               "content": {"video_url": "https://cdn.example.com/v.mp4"},
               "usage": {"completion_tokens": 87300, "total_tokens": 87300}, "duration": 4})
    );
    let mut failed = Task::new("cgt-2", "m", TaskStatus::Failed);
    failed.error = Some(TaskError {
        code: "InternalServiceError".into(),
        message: "generation failed".into(),
        ..TaskError::default()
    });
    let back: Task = serde_json::from_value(serde_json::to_value(&failed).unwrap()).unwrap();
    assert_eq!(back, failed);
}

// ---------------------------------------------------------------------------------------------
// Status
// ---------------------------------------------------------------------------------------------

#[test]
fn every_status_decodes_and_encodes() {
    let cases = [
        ("queued", TaskStatus::Queued, false, false),
        ("running", TaskStatus::Running, false, false),
        ("succeeded", TaskStatus::Succeeded, true, true),
        ("failed", TaskStatus::Failed, true, false),
        ("cancelled", TaskStatus::Cancelled, true, false),
        ("expired", TaskStatus::Expired, true, false),
    ];
    let count = cases.len();
    for (wire, status, terminal, success) in cases {
        let decoded: TaskStatus = serde_json::from_value(json!(wire)).unwrap();
        assert_eq!(decoded, status);
        assert_eq!(serde_json::to_value(&status).unwrap(), json!(wire));
        assert_eq!(status.as_str(), wire);
        assert_eq!(status.to_string(), wire);
        assert_eq!(
            (status.is_terminal(), status.is_success()),
            (terminal, success),
            "{wire}"
        );
        assert_eq!(status.is_refunded(), terminal && !success, "{wire}");
    }
    assert_eq!(TaskStatus::KNOWN.len(), count);
}

#[test]
fn unknown_and_variant_statuses_decode() {
    let odd: TaskStatus = serde_json::from_value(json!("pending_review")).unwrap();
    assert_eq!(odd, TaskStatus::Unknown("pending_review".into()));
    assert!(!odd.is_terminal() && !odd.is_success() && !odd.is_refunded());
    assert_eq!(serde_json::to_value(&odd).unwrap(), json!("pending_review"));
    let empty: TaskStatus = serde_json::from_value(json!("")).unwrap();
    assert_eq!(empty, TaskStatus::Unknown(String::new()));
    assert_eq!(TaskStatus::parse("SUCCEEDED"), TaskStatus::Succeeded);
    assert_eq!(TaskStatus::parse("Running"), TaskStatus::Running);
    assert_eq!(TaskStatus::parse("canceled"), TaskStatus::Cancelled);
    // A record with an unknown status still decodes.
    let task: Task =
        serde_json::from_value(json!({"id": "x", "model": "m", "status": "paused"})).unwrap();
    assert_eq!(task.status, TaskStatus::Unknown("paused".into()));
    // Not a string is an error.
    assert!(serde_json::from_value::<TaskStatus>(json!(3)).is_err());
    assert_eq!(TaskStatus::default(), TaskStatus::Queued);
}

#[test]
fn state_machine() {
    use TaskStatus::*;
    let unknown = Unknown("paused".into());
    let all = [
        Queued,
        Running,
        Succeeded,
        Failed,
        Cancelled,
        Expired,
        unknown.clone(),
    ];
    let allowed: &[(TaskStatus, &[TaskStatus])] = &[
        (
            Queued,
            &[Queued, Running, Succeeded, Failed, Cancelled, Expired],
        ),
        (Running, &[Running, Succeeded, Failed, Expired]),
        (Succeeded, &[Succeeded]),
        (Failed, &[Failed]),
        (Cancelled, &[Cancelled]),
        (Expired, &[Expired]),
    ];
    for (from, nexts) in allowed {
        for next in &all {
            let expected = nexts.contains(next) || (*next == unknown && !from.is_terminal());
            assert_eq!(from.can_become(next), expected, "{from} -> {next}");
        }
    }
    for next in &all {
        assert!(unknown.can_become(next), "unknown -> {next}");
    }
}

// ---------------------------------------------------------------------------------------------
// Create response, paths
// ---------------------------------------------------------------------------------------------

#[test]
fn create_response_in_both_shapes() {
    let ours = CreateTaskResponse::queued("cgt-1", "clipgen-cn-2.0-260128", 1_767_240_000);
    assert_eq!(
        serde_json::to_value(&ours).unwrap(),
        json!({"id": "cgt-1", "model": "clipgen-cn-2.0-260128", "status": "queued",
               "created_at": 1767240000})
    );
    let vendor: CreateTaskResponse =
        serde_json::from_value(json!({"id": "cgt-2", "safety_identifier": "u-1"})).unwrap();
    assert_eq!(vendor.id, "cgt-2");
    assert_eq!(
        (vendor.model, vendor.status, vendor.created_at),
        (None, None, None)
    );
    assert_eq!(vendor.extra["safety_identifier"], "u-1");
    let nulls: CreateTaskResponse = serde_json::from_value(
        json!({"id": "cgt-3", "model": null, "status": null, "created_at": null}),
    )
    .unwrap();
    assert_eq!(nulls.status, None);
}

#[test]
fn task_paths() {
    assert_eq!(TASKS_PATH, "/api/v3/contents/generations/tasks");
    assert_eq!(task_path("abc"), "/api/v3/contents/generations/tasks/abc");
    assert_eq!(
        task_id_from_path("/api/v3/contents/generations/tasks/abc"),
        Some("abc")
    );
    for bad in [
        "/api/v3/contents/generations/tasks",
        "/api/v3/contents/generations/tasks/",
        "/api/v3/contents/generations/tasks/a/b",
        "/api/v3/contents/generations/tasksabc",
        "/v1/video/generations/abc",
    ] {
        assert_eq!(task_id_from_path(bad), None, "{bad}");
    }
}

// ---------------------------------------------------------------------------------------------
// DELETE
// ---------------------------------------------------------------------------------------------

#[test]
fn delete_effect_table() {
    let table = [
        (TaskStatus::Queued, DeleteEffect::Cancel),
        (TaskStatus::Running, DeleteEffect::Refuse),
        (TaskStatus::Succeeded, DeleteEffect::Remove),
        (TaskStatus::Failed, DeleteEffect::Remove),
        (TaskStatus::Expired, DeleteEffect::Remove),
        (TaskStatus::Cancelled, DeleteEffect::Refuse),
        (TaskStatus::Unknown("paused".into()), DeleteEffect::Refuse),
    ];
    for (status, effect) in table {
        assert_eq!(delete_effect(&status), effect, "{status}");
        assert_eq!(effect.is_allowed(), effect != DeleteEffect::Refuse);
    }
    // Cancelling moves the task along its state machine.
    assert!(TaskStatus::Queued.can_become(&TaskStatus::Cancelled));
}

// ---------------------------------------------------------------------------------------------
// Ark's error body
// ---------------------------------------------------------------------------------------------

#[test]
fn ark_error_reference_body() {
    let body = br#"{"error":{"code":"MissingParameter","message":"The request failed because it is missing one or multiple required parameters. Request id: 0217...","param":"content","type":"BadRequest"}}"#;
    let err = ArkError::parse(body).unwrap();
    assert_eq!(err.error.code, "MissingParameter");
    assert_eq!(err.error.param, "content");
    assert_eq!(err.error.kind, "BadRequest");
    assert_eq!(err.http_status(), 400);
    let typed: ArkError = serde_json::from_slice(body).unwrap();
    assert_eq!(typed, err);
    let again: Value = serde_json::to_value(&err).unwrap();
    assert_eq!(again, serde_json::from_slice::<Value>(body).unwrap());
}

#[test]
fn ark_error_parse_is_lenient() {
    // The SDK falls back to the body itself.
    let bare = ArkError::parse(
        br#"{"code": "AuthenticationError", "message": "bad key", "type": "Unauthorized"}"#,
    )
    .unwrap();
    assert_eq!(
        (bare.error.code.as_str(), bare.http_status()),
        ("AuthenticationError", 401)
    );
    let nulls = ArkError::parse(br#"{"error": {"code": "QuotaExceeded", "message": null, "param": null, "type": "TooManyRequests"}}"#)
        .unwrap();
    assert_eq!((nulls.error.param.as_str(), nulls.http_status()), ("", 429));
    assert_eq!(ArkError::new("Teapot", "X", "m", "").http_status(), 500);
    assert_eq!(ArkError::parse(b"not json"), None);
    assert_eq!(ArkError::parse(b"[1, 2]"), None);
    for (kind, status) in [
        ("Forbidden", 403),
        ("NotFound", 404),
        ("InternalServerError", 500),
        ("ServiceUnavailable", 503),
    ] {
        assert_eq!(ArkError::new(kind, "c", "m", "").http_status(), status);
    }
}
