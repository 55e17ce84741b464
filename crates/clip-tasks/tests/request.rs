//! The create request: decoding what the vendor SDK sends (explicit nulls, unmodelled fields),
//! round trips, content items, and the body passed upstream.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use tollgate_clip_tasks::request::{UPSTREAM_FIELDS, WITHHELD_FIELDS};
use tollgate_clip_tasks::{
    ContentItem, CreateTaskRequest, DraftTaskRef, ImageRole, MediaUrl, Tier, validate,
};

/// A body exactly as the vendor SDK sends it: every optional field an explicit `null`, the
/// fields docs/api.md §2.7 does not list, and items carrying the other item kinds' keys as `null`.
fn sdk_body() -> Value {
    json!({
        "model": "clipgen-cn-2.0-260128",
        "content": [
            {"type": "text", "text": "A paper boat drifts down a rainy street.",
             "image_url": null, "video_url": null, "audio_url": null, "draft_task": null, "role": null},
            {"type": "image_url", "text": null,
             "image_url": {"url": "https://example.com/first.png"}, "role": "first_frame"},
            {"type": "image_url", "image_url": {"url": "https://example.com/last.png"}, "role": "last_frame"}
        ],
        "duration": null,
        "resolution": null,
        "ratio": null,
        "generate_audio": null,
        "watermark": null,
        "seed": null,
        "callback_url": null,
        "return_last_frame": true,
        "service_tier": "flex",
        "execution_expires_after": 3600,
        "draft": false,
        "camera_fixed": null,
        "frames": null,
        "priority": null,
        "safety_identifier": null,
        "tools": [{"type": "web_search"}]
    })
}

#[test]
fn sdk_body_with_explicit_nulls_decodes() {
    let request: CreateTaskRequest = serde_json::from_value(sdk_body()).unwrap();
    assert_eq!(request.model, "clipgen-cn-2.0-260128");
    assert_eq!(request.duration, None);
    assert_eq!(request.resolution, None);
    assert_eq!(request.ratio, None);
    assert_eq!(request.generate_audio, None);
    assert_eq!(request.watermark, None);
    assert_eq!(request.seed, None);
    assert_eq!(
        request.content,
        vec![
            ContentItem::text("A paper boat drifts down a rainy street."),
            ContentItem::image("https://example.com/first.png", Some(ImageRole::FirstFrame)),
            ContentItem::image("https://example.com/last.png", Some(ImageRole::LastFrame)),
        ]
    );
    for key in [
        "callback_url",
        "return_last_frame",
        "service_tier",
        "execution_expires_after",
        "draft",
        "camera_fixed",
        "frames",
        "priority",
        "safety_identifier",
        "tools",
    ] {
        assert!(request.extra.contains_key(key), "{key} not kept");
    }
    assert_eq!(request.extra["return_last_frame"], true);
    assert_eq!(request.extra["tools"], json!([{"type": "web_search"}]));
    assert_eq!(request.resolution_or_default(), "720p");
    assert_eq!(request.ratio_or_default(), "adaptive");
    assert!(request.generate_audio_or_default());

    let ok = validate(&request).unwrap();
    assert_eq!(ok.duration_seconds, 5);
    assert!(ok.has_frames);
    assert_eq!(ok.tier, Tier::Standard);
}

#[test]
fn sdk_body_reserializes_keeping_the_extra_fields() {
    let request: CreateTaskRequest = serde_json::from_value(sdk_body()).unwrap();
    let out = serde_json::to_value(&request).unwrap();
    // The modelled nulls are left out; everything else is kept as given.
    let expected = json!({
        "model": "clipgen-cn-2.0-260128",
        "content": [
            {"type": "text", "text": "A paper boat drifts down a rainy street."},
            {"type": "image_url", "image_url": {"url": "https://example.com/first.png"}, "role": "first_frame"},
            {"type": "image_url", "image_url": {"url": "https://example.com/last.png"}, "role": "last_frame"}
        ],
        "callback_url": null,
        "return_last_frame": true,
        "service_tier": "flex",
        "execution_expires_after": 3600,
        "draft": false,
        "camera_fixed": null,
        "frames": null,
        "priority": null,
        "safety_identifier": null,
        "tools": [{"type": "web_search"}]
    });
    assert_eq!(out, expected);
    // And it decodes back to the same request.
    let again: CreateTaskRequest = serde_json::from_value(out).unwrap();
    assert_eq!(again, request);
}

#[test]
fn every_field_set_round_trips() {
    let body = json!({
        "model": "clipgen-intl-2.5-mini-260301",
        "content": [
            {"type": "text", "text": "prompt"},
            {"type": "image_url", "image_url": {"url": "https://example.com/r.png"}, "role": "reference_image"},
            {"type": "video_url", "video_url": {"url": "https://example.com/r.mp4"}, "role": "reference_video"},
            {"type": "audio_url", "audio_url": {"url": "https://example.com/r.mp3"}, "role": "reference_audio"},
            {"type": "draft_task", "draft_task": {"id": "cgt-draft"}}
        ],
        "duration": 12, "resolution": "480p", "ratio": "21:9",
        "generate_audio": false, "watermark": true, "seed": 42,
        "camera_fixed": false
    });
    let request: CreateTaskRequest = serde_json::from_value(body.clone()).unwrap();
    assert_eq!(request.duration, Some(12));
    assert_eq!(request.seed, Some(42));
    assert_eq!(request.generate_audio, Some(false));
    assert_eq!(request.watermark, Some(true));
    assert_eq!(request.content[4], ContentItem::draft_task("cgt-draft"));
    assert_eq!(
        request.content[2],
        ContentItem::video("https://example.com/r.mp4")
    );
    assert_eq!(
        request.content[3],
        ContentItem::audio("https://example.com/r.mp3")
    );
    assert_eq!(serde_json::to_value(&request).unwrap(), body);
}

#[test]
fn absent_and_null_model_and_content_decode_empty() {
    let request: CreateTaskRequest = serde_json::from_value(json!({})).unwrap();
    assert_eq!((request.model.as_str(), request.content.len()), ("", 0));
    let request: CreateTaskRequest =
        serde_json::from_value(json!({"model": null, "content": null})).unwrap();
    assert_eq!((request.model.as_str(), request.content.len()), ("", 0));
}

#[test]
fn duration_and_seed_accept_whole_floats_only() {
    let request: CreateTaskRequest =
        serde_json::from_value(json!({"model": "m", "content": [], "duration": 5.0, "seed": -1}))
            .unwrap();
    assert_eq!((request.duration, request.seed), (Some(5), Some(-1)));
    let err = serde_json::from_value::<CreateTaskRequest>(json!({"duration": 5.5})).unwrap_err();
    assert!(err.to_string().contains("whole number"), "{err}");
    assert!(serde_json::from_value::<CreateTaskRequest>(json!({"duration": "5"})).is_err());
    assert!(
        serde_json::from_value::<CreateTaskRequest>(json!({"duration": 1.0e30})).is_err(),
        "out of i64 range"
    );
}

#[test]
fn content_items_tolerate_nulls() {
    let item: ContentItem =
        serde_json::from_value(json!({"type": "text", "text": null, "role": null})).unwrap();
    assert_eq!(item, ContentItem::text(""));
    let item: ContentItem =
        serde_json::from_value(json!({"type": "image_url", "image_url": {"url": null}})).unwrap();
    assert_eq!(item, ContentItem::image("", None));
    let item: ContentItem = serde_json::from_value(
        json!({"type": "video_url", "video_url": {"url": "https://e.com/v.mp4"}, "role": null}),
    )
    .unwrap();
    assert_eq!(
        item,
        ContentItem::VideoUrl {
            video_url: MediaUrl::new("https://e.com/v.mp4"),
            role: None
        }
    );
    let item: ContentItem =
        serde_json::from_value(json!({"type": "draft_task", "draft_task": {"id": null}})).unwrap();
    assert_eq!(
        item,
        ContentItem::DraftTask {
            draft_task: DraftTaskRef { id: String::new() }
        }
    );
}

#[test]
fn unknown_and_malformed_items_decode_as_other() {
    for value in [
        json!({"type": "hologram", "hologram": {"url": "x"}}),
        json!({"type": "image_url", "image_url": "https://example.com/a.png"}),
        json!({"type": "image_url", "image_url": {"url": "https://e.com/a.png"}, "role": "cover"}),
        json!({"type": "image_url"}),
        json!({"text": "no type"}),
        json!({"type": 3}),
        json!("just a string"),
        json!(null),
    ] {
        let item: ContentItem = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(item, ContentItem::Other(value.clone()), "{value}");
        // Kept as given on the way out.
        assert_eq!(serde_json::to_value(&item).unwrap(), value);
    }
    let item: ContentItem = serde_json::from_value(json!({"type": "hologram"})).unwrap();
    assert_eq!(item.type_name(), Some("hologram"));
    assert_eq!(ContentItem::text("x").type_name(), Some("text"));
}

#[test]
fn image_roles_on_the_wire() {
    for role in ImageRole::ALL {
        assert_eq!(
            serde_json::to_value(role).unwrap(),
            Value::String(role.as_str().into())
        );
    }
    assert!(ImageRole::FirstFrame.is_frame() && ImageRole::LastFrame.is_frame());
    assert!(!ImageRole::ReferenceImage.is_frame());
}

#[test]
fn for_upstream_fills_defaults_and_passes_on_only_what_the_upstream_understands() {
    let mut body = sdk_body();
    body["unknown_field"] = json!("dropped");
    body["callback_url"] = json!("https://client.example.com/hook");
    let request: CreateTaskRequest = serde_json::from_value(body).unwrap();
    let upstream = request.for_upstream("doubao-seedance-2-0-260128");
    let out = serde_json::to_value(&upstream).unwrap();
    assert_eq!(
        out,
        json!({
            "model": "doubao-seedance-2-0-260128",
            "content": [
                {"type": "text", "text": "A paper boat drifts down a rainy street."},
                {"type": "image_url", "image_url": {"url": "https://example.com/first.png"}, "role": "first_frame"},
                {"type": "image_url", "image_url": {"url": "https://example.com/last.png"}, "role": "last_frame"}
            ],
            "duration": 5,
            "resolution": "720p",
            "ratio": "adaptive",
            "generate_audio": true,
            "return_last_frame": true,
            "service_tier": "flex",
            "execution_expires_after": 3600,
            "draft": false,
            "tools": [{"type": "web_search"}]
        })
    );
    assert!(
        WITHHELD_FIELDS
            .iter()
            .all(|f| !upstream.extra.contains_key(*f))
    );
    assert!(
        upstream
            .extra
            .keys()
            .all(|k| UPSTREAM_FIELDS.contains(&k.as_str()))
    );
}

#[test]
fn for_upstream_keeps_frames_instead_of_a_default_duration() {
    let request: CreateTaskRequest = serde_json::from_value(json!({
        "model": "clipgen-cn-2.0-260128",
        "content": [{"type": "text", "text": "x"}, {"type": "hologram"}],
        "frames": 121, "seed": 7, "watermark": false
    }))
    .unwrap();
    assert_eq!(request.frames(), Some(121));
    let upstream = request.for_upstream("up");
    assert_eq!(upstream.duration, None);
    assert_eq!(upstream.extra["frames"], 121);
    assert_eq!((upstream.seed, upstream.watermark), (Some(7), Some(false)));
    // The unknown item is not sent on.
    assert_eq!(upstream.content, vec![ContentItem::text("x")]);

    let chooses: CreateTaskRequest = serde_json::from_value(
        json!({"model": "m", "content": [{"type": "text", "text": "x"}], "duration": -1}),
    )
    .unwrap();
    assert!(chooses.model_chooses_duration());
    assert_eq!(chooses.for_upstream("up").duration, Some(-1));
}

#[test]
fn reference_videos_lists_index_and_url() {
    let request = CreateTaskRequest::new(
        "clipgen-cn-2.5-260301",
        vec![
            ContentItem::text("x"),
            ContentItem::video("https://e.com/1.mp4"),
            ContentItem::image("https://e.com/a.png", None),
            ContentItem::video("https://e.com/2.mp4"),
        ],
    );
    let videos: Vec<(usize, &str)> = request.reference_videos().collect();
    assert_eq!(
        videos,
        [(1, "https://e.com/1.mp4"), (3, "https://e.com/2.mp4")]
    );
}
