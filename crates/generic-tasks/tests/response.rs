//! The create response and the task record (docs/api.md §2.8, §3.2): JSON shapes, `task_id` = `id`,
//! progress 100 and `url` (and `video_url` for the models that have it) on completion, `error`
//! on failure, lenient decoding of upstream records.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use tollgate_generic_tasks::models::{MODELS, spec};
use tollgate_generic_tasks::{
    CreateVideoResponse, UpstreamStatus, VIDEO_OBJECT, VideoError, VideoStatus, VideoTask,
};

const URL: &str = "https://gw.example/v1/media/vt_1?sig=abc";

#[test]
fn create_response_shape() {
    let created = CreateVideoResponse::new("vt_1", "wave-3-0-video", 1_767_240_000);
    assert_eq!(created.task_id, created.id);
    assert_eq!(created.object, VIDEO_OBJECT);
    assert_eq!(created.status, VideoStatus::Queued);
    assert_eq!(created.progress, 0);
    assert_eq!(
        serde_json::to_value(&created).unwrap(),
        json!({
            "id": "vt_1",
            "task_id": "vt_1",
            "object": "video",
            "model": "wave-3-0-video",
            "status": "queued",
            "progress": 0,
            "created_at": 1_767_240_000
        })
    );
    // Key order follows the spec's listing.
    assert_eq!(
        serde_json::to_string(&created).unwrap(),
        r#"{"id":"vt_1","task_id":"vt_1","object":"video","model":"wave-3-0-video","status":"queued","progress":0,"created_at":1767240000}"#
    );
}

#[test]
fn create_response_round_trips() {
    let created = CreateVideoResponse::new("task_abc123", "omni", 7);
    let text = serde_json::to_string(&created).unwrap();
    assert_eq!(
        serde_json::from_str::<CreateVideoResponse>(&text).unwrap(),
        created
    );
}

#[test]
fn create_response_decodes_new_api_and_openai_shapes() {
    // wire-formats §7.1 (new-api).
    let new_api: CreateVideoResponse = serde_json::from_str(
        r#"{"id":"task_abc123","task_id":"task_abc123","object":"video","model":"doubao-seedance-1-5-pro-251215","status":"queued","progress":0,"created_at":1767240000}"#,
    )
    .unwrap();
    assert_eq!(new_api.status, VideoStatus::Queued);
    // OpenAI has no task_id: it is the id.
    let openai: CreateVideoResponse = serde_json::from_str(
        r#"{"id":"video_123","object":"video","model":"sora-2","status":"queued","progress":0,"created_at":1767240000,"seconds":"4","size":"720x1280"}"#,
    )
    .unwrap();
    assert_eq!(openai.task_id, "video_123");
}

#[test]
fn queued_task_equals_the_create_response() {
    let task = VideoTask::queued("vt_1", "omni", 5);
    let created = CreateVideoResponse::new("vt_1", "omni", 5);
    assert_eq!(
        serde_json::to_value(&task).unwrap(),
        serde_json::to_value(&created).unwrap()
    );
    assert_eq!(VideoTask::from(created), task);
}

#[test]
fn in_progress_record() {
    let task = VideoTask::queued("vt_1", "omni", 5).in_progress(40);
    assert_eq!(
        serde_json::to_value(&task).unwrap(),
        json!({"id":"vt_1","task_id":"vt_1","object":"video","model":"omni","status":"in_progress","progress":40,"created_at":5})
    );
    // 100 means completed; an in-progress task stays below it.
    assert_eq!(task.clone().in_progress(100).progress, 99);
    assert_eq!(task.in_progress(0).progress, 0);
}

#[test]
fn completed_record_has_progress_100_and_url() {
    let task = VideoTask::queued("vt_1", "omni", 5)
        .in_progress(60)
        .completed(URL, None)
        .finished_at(65)
        .with_seconds(4);
    let value = serde_json::to_value(&task).unwrap();
    assert_eq!(
        value,
        json!({
            "id": "vt_1",
            "task_id": "vt_1",
            "object": "video",
            "model": "omni",
            "status": "completed",
            "progress": 100,
            "created_at": 5,
            "completed_at": 65,
            "url": URL,
            "seconds": "4"
        })
    );
    assert!(value.get("video_url").is_none());
    assert!(value.get("error").is_none());
    assert_eq!(task.seconds_value(), Some(4.0));
}

#[test]
fn completed_for_adds_video_url_only_for_the_models_that_have_it() {
    for m in MODELS {
        let task = VideoTask::queued("vt_1", m.id, 0).completed_for(m, URL);
        let value = serde_json::to_value(&task).unwrap();
        assert_eq!(value["status"], "completed", "{}", m.id);
        assert_eq!(value["progress"], 100, "{}", m.id);
        assert_eq!(value["url"], URL, "{}", m.id);
        if m.returns_video_url {
            assert_eq!(value["video_url"], URL, "{}", m.id);
        } else {
            assert!(value.get("video_url").is_none(), "{}", m.id);
        }
    }
    let wave = spec("wave-2-7-video").unwrap();
    let task = VideoTask::queued("vt_1", wave.id, 0).completed_for(wave, URL);
    assert_eq!(task.video_url.as_deref(), Some(URL));
}

#[test]
fn failed_record_has_error_and_no_links() {
    let task = VideoTask::queued("vt_2", "wave-3-0-video", 5)
        .in_progress(30)
        .failed(VideoError::new(
            "generation_failed",
            "the upstream could not generate the video",
        ))
        .finished_at(90);
    let value = serde_json::to_value(&task).unwrap();
    assert_eq!(
        value,
        json!({
            "id": "vt_2",
            "task_id": "vt_2",
            "object": "video",
            "model": "wave-3-0-video",
            "status": "failed",
            "progress": 30,
            "created_at": 5,
            "completed_at": 90,
            "error": {"code": "generation_failed", "message": "the upstream could not generate the video"}
        })
    );
    // Failing a completed record drops its links.
    let task = VideoTask::queued("vt_3", "wave-3-0-video", 5)
        .completed(URL, Some(URL.into()))
        .failed(VideoError::new("expired", "expired"));
    assert_eq!((task.url, task.video_url), (None, None));
    assert_eq!(task.status, VideoStatus::Failed);
}

#[test]
fn completing_clears_an_error() {
    let task = VideoTask::queued("vt_1", "omni", 0)
        .failed(VideoError::new("x", "y"))
        .completed(URL, None);
    assert_eq!(task.error, None);
}

#[test]
fn records_round_trip() {
    let base = VideoTask::queued("vt_1", "wave-2-7-video", 1);
    let wave = spec("wave-2-7-video").unwrap();
    for task in [
        base.clone(),
        base.clone().in_progress(12),
        base.clone()
            .completed_for(wave, URL)
            .finished_at(9)
            .with_seconds(5),
        base.clone()
            .failed(VideoError::new("cancelled", "cancelled upstream")),
    ] {
        let text = serde_json::to_string(&task).unwrap();
        assert_eq!(
            serde_json::from_str::<VideoTask>(&text).unwrap(),
            task,
            "{text}"
        );
    }
}

#[test]
fn openai_video_resource_decodes() {
    // wire-formats §7.2: every key present, several null, seconds a string.
    let task: VideoTask = serde_json::from_str(
        r#"{"id":"video_123","object":"video","model":"sora-2","status":"in_progress","progress":40,
            "created_at":1767240000,"completed_at":null,"expires_at":null,"prompt":"A calico cat playing piano",
            "size":"720x1280","seconds":"8","remixed_from_video_id":null,"error":null}"#,
    )
    .unwrap();
    assert_eq!(task.task_id, "video_123");
    assert_eq!(task.status, VideoStatus::InProgress);
    assert_eq!(task.progress, 40);
    assert_eq!(task.seconds_value(), Some(8.0));
    assert_eq!((task.completed_at, task.error), (None, None));
}

#[test]
fn upstream_records_decode_leniently() {
    let task: VideoTask = serde_json::from_value(json!({
        "id": "up_1",
        "status": "SUCCESS",
        "progress": "100%",
        "url": URL,
        "video_url": URL,
        "seconds": 5.5
    }))
    .unwrap();
    assert_eq!(task.status, VideoStatus::Completed);
    assert_eq!(task.progress, 100);
    assert_eq!(task.object, "video");
    assert_eq!(task.seconds.as_deref(), Some("5.5"));
    assert_eq!(task.seconds_value(), Some(5.5));

    let task: VideoTask = serde_json::from_value(json!({
        "id": "up_2", "status": "succeeded", "progress": 250
    }))
    .unwrap();
    assert_eq!((task.status, task.progress), (VideoStatus::Completed, 100));

    let task: VideoTask = serde_json::from_value(json!({
        "id": "up_3", "status": "failed", "error": "content policy violation", "progress": -3
    }))
    .unwrap();
    assert_eq!(task.status, VideoStatus::Failed);
    assert_eq!(task.progress, 0);
    assert_eq!(
        task.error,
        Some(VideoError::new("", "content policy violation"))
    );

    let task: VideoTask = serde_json::from_value(json!({
        "id": "up_4", "status": "warming_up", "progress": 33.6,
        "error": {"code": 1301, "message": "x"}
    }))
    .unwrap();
    assert_eq!((task.status, task.progress), (VideoStatus::InProgress, 34));
    assert_eq!(task.error.map(|e| e.code).as_deref(), Some("1301"));

    for (progress, expected) in [
        (json!("50%"), 50),
        (json!(" 7 % "), 7),
        (json!(""), 0),
        (json!(null), 0),
    ] {
        let task: VideoTask =
            serde_json::from_value(json!({"id": "p", "progress": progress.clone()})).unwrap();
        assert_eq!(task.progress, expected, "{progress}");
    }
    assert!(serde_json::from_value::<VideoTask>(json!({"id": "p", "progress": "half"})).is_err());
    assert!(serde_json::from_value::<VideoTask>(json!({"status": "queued"})).is_err());
}

#[test]
fn cancelled_and_expired_upstream_tasks_become_failed_records() {
    for reported in ["cancelled", "CANCELED", "expired"] {
        let upstream = UpstreamStatus::parse(reported);
        let code = upstream.failure_code().unwrap();
        let task = VideoTask::queued("vt", "omni", 0).failed(VideoError::new(code, reported));
        assert_eq!(task.status, upstream.video_status());
        let value = serde_json::to_value(&task).unwrap();
        assert_eq!(value["status"], "failed");
        assert_eq!(value["error"]["code"], code);
    }
}
