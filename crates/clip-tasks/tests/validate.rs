//! Every content rule and limit of docs/api.md §2.7 / §8, with the field path of the error, and what
//! a valid request yields for billing; the model series.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use tollgate_clip_tasks::series::{
    ClipSeries, Edition, MAX_INLINE_IMAGE_BYTES, MAX_REFERENCE_IMAGES, ModelId, RATIOS,
    RESOLUTIONS, Variant, series,
};
use tollgate_clip_tasks::{
    ArkError, ContentItem, CreateTaskRequest, FieldError, ImageRole, Rule, Tier, Validated,
    validate, validate_reference_seconds,
};

const V20: &str = "clipgen-cn-2.0-260128";
const V25: &str = "clipgen-intl-2.5-260301";

fn text() -> ContentItem {
    ContentItem::text("A fox runs through fresh snow.")
}

fn img(n: usize, role: Option<ImageRole>) -> ContentItem {
    ContentItem::image(format!("https://cdn.example.com/{n}.png"), role)
}

fn vid(n: usize) -> ContentItem {
    ContentItem::video(format!("https://cdn.example.com/{n}.mp4"))
}

fn req(model: &str, content: Vec<ContentItem>) -> CreateTaskRequest {
    CreateTaskRequest::new(model, content)
}

fn from_json(value: Value) -> CreateTaskRequest {
    serde_json::from_value(value).unwrap()
}

#[track_caller]
fn assert_refused(request: &CreateTaskRequest, field: &str, rule: Rule) -> FieldError {
    let err = validate(request).expect_err("expected a validation error");
    assert_eq!((err.field.as_str(), err.rule), (field, rule), "{err:?}");
    assert!(!err.message.is_empty());
    err
}

#[track_caller]
fn assert_ok(request: &CreateTaskRequest) -> Validated {
    match validate(request) {
        Ok(ok) => ok,
        Err(err) => panic!("refused: {err:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// model and series
// ---------------------------------------------------------------------------------------------

#[test]
fn model_is_required_and_of_a_known_series() {
    assert_refused(&req("", vec![text()]), "model", Rule::Required);
    for model in [
        "clipgen-cn-1.5-250101",
        "clipgen-cn-3.0-260128",
        "imagine-video",
        "ep-20260101-abc",
        "clipgen-cn-20-260128",
    ] {
        let err = assert_refused(&req(model, vec![text()]), "model", Rule::UnsupportedValue);
        assert!(err.message.contains(model), "{err}");
    }
    // Model is checked before content.
    assert_refused(&req("", vec![]), "model", Rule::Required);
}

#[test]
fn series_from_model_ids() {
    let cases = [
        ("clipgen-cn-2.0-260128", Some(ClipSeries::V2_0)),
        ("clipgen-intl-2.0-260128", Some(ClipSeries::V2_0)),
        ("clipgen-cn-2.0-fast-260128", Some(ClipSeries::V2_0)),
        ("clipgen-intl-2.5-fast-260301", Some(ClipSeries::V2_5)),
        ("clipgen-cn-2.5-mini-260301", Some(ClipSeries::V2_5)),
        ("doubao-seedance-2-0-260128", Some(ClipSeries::V2_0)),
        ("dreamina-seedance-2-5-fast-260301", Some(ClipSeries::V2_5)),
        ("seedance-2-0", Some(ClipSeries::V2_0)),
        ("doubao-seedance-1-5-pro-251215", None),
        ("doubao-seedance-1-0-pro-250528", None),
        ("clipgen-cn-260128", None),
        ("clipgen-cn-2.05-260128", None),
        ("clipgen-cn-2-260128", None),
        ("", None),
    ];
    for (model, expected) in cases {
        assert_eq!(series(model), expected, "{model}");
    }
}

#[test]
fn series_limits() {
    assert_eq!(ClipSeries::V2_0.duration_range(), 4..=15);
    assert_eq!(ClipSeries::V2_5.duration_range(), 4..=30);
    assert_eq!(
        (
            ClipSeries::V2_0.max_reference_videos(),
            ClipSeries::V2_5.max_reference_videos()
        ),
        (3, 10)
    );
    assert_eq!(
        (
            ClipSeries::V2_0.max_reference_seconds(),
            ClipSeries::V2_5.max_reference_seconds()
        ),
        (15, 30)
    );
    assert_eq!(
        serde_json::to_value(ClipSeries::V2_5).unwrap(),
        json!("2.5")
    );
    assert_eq!(
        serde_json::from_value::<ClipSeries>(json!("2.0")).unwrap(),
        ClipSeries::V2_0
    );
    assert_eq!(ClipSeries::from_version("2-5"), Some(ClipSeries::V2_5));
    assert_eq!(ClipSeries::V2_0.to_string(), "2.0");
    assert_eq!(MAX_REFERENCE_IMAGES, 30);
    assert_eq!(RESOLUTIONS, ["480p", "720p"]);
    assert_eq!(
        RATIOS,
        ["16:9", "9:16", "1:1", "4:3", "3:4", "21:9", "adaptive"]
    );
}

#[test]
fn strict_model_ids() {
    let id = ModelId::parse("clipgen-cn-2.5-mini-260301").unwrap();
    assert_eq!(
        (id.edition, id.series, id.variant, id.date_code.as_str()),
        (Edition::Cn, ClipSeries::V2_5, Variant::Mini, "260301")
    );
    let id = ModelId::parse("clipgen-intl-2.0-260128").unwrap();
    assert_eq!((id.edition, id.variant), (Edition::Intl, Variant::Standard));
    for bad in [
        "clipgen-cn-2.0",
        "clipgen-cn-2.0-fast",
        "clipgen-cn-2.0-turbo-260128",
        "clipgen-cn-2.0-26012",
        "clipgen-cn-2.0-260128-x",
        "clipgen-cn-1.5-260128",
        "doubao-seedance-2-0-260128",
        "clipgen-us-2.0-260128",
    ] {
        assert_eq!(ModelId::parse(bad), None, "{bad}");
    }
}

// ---------------------------------------------------------------------------------------------
// content: shape
// ---------------------------------------------------------------------------------------------

#[test]
fn content_is_required() {
    assert_refused(&req(V20, vec![]), "content", Rule::Required);
    assert_refused(
        &from_json(json!({"model": V20, "content": null})),
        "content",
        Rule::Required,
    );
}

#[test]
fn content_needs_a_text_an_image_or_a_draft_task() {
    // A reference video alone is not enough.
    assert_refused(&req(V20, vec![vid(0)]), "content", Rule::Required);
    assert_ok(&req(V20, vec![text()]));
    assert_ok(&req(V20, vec![img(0, None)]));
    assert_ok(&req(V20, vec![img(0, Some(ImageRole::ReferenceImage))]));
    assert_ok(&req(V20, vec![ContentItem::draft_task("cgt-draft-1")]));
}

#[test]
fn unknown_content_types_are_refused_naming_the_type() {
    let request = from_json(json!({"model": V20, "content": [
        {"type": "text", "text": "x"},
        {"type": "hologram", "hologram": {"url": "https://e.com/h"}}
    ]}));
    let err = assert_refused(&request, "content[1].type", Rule::UnsupportedValue);
    assert!(
        err.message.contains("hologram") && err.message.contains("image_url"),
        "{err}"
    );
}

#[test]
fn malformed_items_are_refused_naming_the_field() {
    let cases = [
        (
            json!({"type": "image_url", "image_url": "https://e.com/a.png"}),
            "content[0].image_url",
            Rule::Malformed,
        ),
        (
            json!({"type": "image_url"}),
            "content[0].image_url",
            Rule::Required,
        ),
        (
            json!({"type": "image_url", "image_url": null}),
            "content[0].image_url",
            Rule::Required,
        ),
        (
            json!({"type": "image_url", "image_url": {"url": 5}}),
            "content[0].image_url.url",
            Rule::Malformed,
        ),
        (
            json!({"type": "image_url", "image_url": {"url": "https://e.com/a.png"}, "role": "cover"}),
            "content[0].role",
            Rule::UnsupportedValue,
        ),
        (
            json!({"type": "image_url", "image_url": {"url": "https://e.com/a.png"}, "role": 1}),
            "content[0].role",
            Rule::UnsupportedValue,
        ),
        (
            json!({"type": "video_url", "video_url": 5}),
            "content[0].video_url",
            Rule::Malformed,
        ),
        (
            json!({"type": "audio_url"}),
            "content[0].audio_url",
            Rule::Required,
        ),
        (
            json!({"type": "text", "text": 5}),
            "content[0].text",
            Rule::Malformed,
        ),
        (
            json!({"type": "draft_task"}),
            "content[0].draft_task",
            Rule::Required,
        ),
        (
            json!({"type": "draft_task", "draft_task": "cgt-1"}),
            "content[0].draft_task",
            Rule::Malformed,
        ),
        (
            json!({"type": "draft_task", "draft_task": {"id": 1}}),
            "content[0].draft_task.id",
            Rule::Malformed,
        ),
        (
            json!({"text": "no type"}),
            "content[0].type",
            Rule::Required,
        ),
        (
            json!({"type": null, "text": "x"}),
            "content[0].type",
            Rule::Required,
        ),
        (json!({"type": 3}), "content[0].type", Rule::Malformed),
        (json!("a string"), "content[0]", Rule::Malformed),
        (json!(null), "content[0]", Rule::Malformed),
    ];
    for (item, field, rule) in cases {
        let request = from_json(json!({"model": V20, "content": [item]}));
        let err = validate(&request).expect_err("refused");
        assert_eq!(
            (err.field.as_str(), err.rule),
            (field, rule),
            "{item}: {err:?}"
        );
    }
}

#[test]
fn empty_values_are_required() {
    assert_refused(
        &req(V20, vec![ContentItem::text("")]),
        "content[0].text",
        Rule::Required,
    );
    assert_refused(
        &req(V20, vec![text(), ContentItem::image("", None)]),
        "content[1].image_url.url",
        Rule::Required,
    );
    assert_refused(
        &req(V20, vec![text(), ContentItem::video("")]),
        "content[1].video_url.url",
        Rule::Required,
    );
    assert_refused(
        &req(V20, vec![text(), img(0, None), ContentItem::audio("")]),
        "content[2].audio_url.url",
        Rule::Required,
    );
    assert_refused(
        &req(V20, vec![ContentItem::draft_task("")]),
        "content[0].draft_task.id",
        Rule::Required,
    );
    // `{"url": null}` is an empty URL.
    let request = from_json(json!({"model": V20, "content": [
        {"type": "text", "text": "x"},
        {"type": "video_url", "video_url": {"url": null}, "role": "reference_video"}
    ]}));
    assert_refused(&request, "content[1].video_url.url", Rule::Required);
}

// ---------------------------------------------------------------------------------------------
// content: URLs (docs/api.md §2.7 rule 4)
// ---------------------------------------------------------------------------------------------

#[test]
fn image_urls_must_be_public_http_or_bounded_inline_images() {
    let cases = [
        ("http://127.0.0.1/a.png", Rule::NotPublic),
        ("http://169.254.169.254/latest/meta-data/", Rule::NotPublic),
        ("http://[::1]/a.png", Rule::NotPublic),
        ("http://localhost:8080/a.png", Rule::NotPublic),
        ("http://2130706433/a.png", Rule::InvalidUrl),
        ("file:///etc/passwd", Rule::InvalidUrl),
        ("http://user@example.com/a.png", Rule::InvalidUrl),
        ("data:text/plain;base64,AAAA", Rule::InvalidUrl),
        ("data:image/png;base64,AA*A", Rule::InvalidUrl),
    ];
    for (url, rule) in cases {
        let request = req(V20, vec![text(), ContentItem::image(url, None)]);
        let err = assert_refused(&request, "content[1].image_url.url", rule);
        assert!(err.message.contains("content[1].image_url.url"), "{err}");
    }
    let too_large = format!(
        "data:image/png;base64,{}",
        "A".repeat(MAX_INLINE_IMAGE_BYTES + 4)
    );
    assert_refused(
        &req(V20, vec![text(), ContentItem::image(too_large, None)]),
        "content[1].image_url.url",
        Rule::TooLarge,
    );
    assert_ok(&req(
        V20,
        vec![
            text(),
            ContentItem::image("data:image/jpeg;base64,/9j/4AAQSkZJRg==", None),
        ],
    ));
}

#[test]
fn video_urls_must_be_public_http() {
    let cases = [
        ("http://10.0.0.8/v.mp4", Rule::NotPublic),
        ("http://printer.local/v.mp4", Rule::NotPublic),
        ("ftp://example.com/v.mp4", Rule::InvalidUrl),
        ("data:video/mp4;base64,AAAA", Rule::InvalidUrl),
        ("http://0x7f.1/v.mp4", Rule::InvalidUrl),
    ];
    for (url, rule) in cases {
        let request = req(V20, vec![text(), ContentItem::video(url)]);
        assert_refused(&request, "content[1].video_url.url", rule);
    }
}

#[test]
fn audio_urls_are_checked_like_images() {
    assert_refused(
        &req(
            V20,
            vec![
                text(),
                img(0, None),
                ContentItem::audio("http://192.168.0.2/a.mp3"),
            ],
        ),
        "content[2].audio_url.url",
        Rule::NotPublic,
    );
    let ok = assert_ok(&req(
        V20,
        vec![
            text(),
            img(0, None),
            ContentItem::audio("data:audio/wav;base64,UklGRg=="),
        ],
    ));
    assert_eq!((ok.reference_audios, ok.tier), (1, Tier::Standard));
}

#[test]
fn media_roles_are_checked() {
    let request = from_json(json!({"model": V20, "content": [
        {"type": "text", "text": "x"},
        {"type": "video_url", "video_url": {"url": "https://e.com/v.mp4"}, "role": "first_frame"}
    ]}));
    assert_refused(&request, "content[1].role", Rule::UnsupportedValue);
    let request = from_json(json!({"model": V20, "content": [
        {"type": "text", "text": "x"},
        {"type": "image_url", "image_url": {"url": "https://e.com/a.png"}},
        {"type": "audio_url", "audio_url": {"url": "https://e.com/a.mp3"}, "role": "reference_video"}
    ]}));
    assert_refused(&request, "content[2].role", Rule::UnsupportedValue);
    // Without a role is fine.
    let request = from_json(json!({"model": V20, "content": [
        {"type": "text", "text": "x"},
        {"type": "video_url", "video_url": {"url": "https://e.com/v.mp4"}}
    ]}));
    assert_eq!(assert_ok(&request).reference_videos, 1);
}

#[test]
fn reference_audio_needs_an_image_or_a_video() {
    assert_refused(
        &req(V20, vec![text(), ContentItem::audio("https://e.com/a.mp3")]),
        "content",
        Rule::Required,
    );
    assert_ok(&req(
        V20,
        vec![text(), vid(0), ContentItem::audio("https://e.com/a.mp3")],
    ));
}

// ---------------------------------------------------------------------------------------------
// content: frames and references (docs/api.md §2.7 rules 1–3)
// ---------------------------------------------------------------------------------------------

#[test]
fn frames_are_not_combined_with_reference_images() {
    use ImageRole::*;
    let cases = [
        (
            vec![
                text(),
                img(0, Some(FirstFrame)),
                img(1, Some(ReferenceImage)),
            ],
            "content[2].role",
        ),
        (
            vec![
                text(),
                img(0, Some(ReferenceImage)),
                img(1, Some(LastFrame)),
            ],
            "content[2].role",
        ),
        // An image without a role is a first frame.
        (
            vec![text(), img(0, None), img(1, Some(ReferenceImage))],
            "content[2].role",
        ),
        (
            vec![img(0, Some(ReferenceImage)), text(), img(1, None)],
            "content[2].role",
        ),
    ];
    for (content, field) in cases {
        let err = assert_refused(&req(V20, content), field, Rule::NotCombinable);
        assert!(err.message.contains("reference images"), "{err}");
    }
}

#[test]
fn at_most_one_first_and_one_last_frame() {
    use ImageRole::*;
    assert_refused(
        &req(
            V20,
            vec![text(), img(0, Some(FirstFrame)), img(1, Some(FirstFrame))],
        ),
        "content[2].role",
        Rule::TooMany,
    );
    assert_refused(
        &req(
            V20,
            vec![text(), img(0, Some(LastFrame)), img(1, Some(LastFrame))],
        ),
        "content[2].role",
        Rule::TooMany,
    );
    assert_refused(
        &req(V20, vec![text(), img(0, None), img(1, None), img(2, None)]),
        "content[3].role",
        Rule::TooMany,
    );
    // Two role-less images are a first and a last frame.
    let ok = assert_ok(&req(V20, vec![text(), img(0, None), img(1, None)]));
    assert!(ok.has_frames);
    assert_eq!((ok.reference_images, ok.tier), (0, Tier::Standard));
    assert_ok(&req(
        V20,
        vec![text(), img(0, Some(FirstFrame)), img(1, Some(LastFrame))],
    ));
}

#[test]
fn at_most_30_reference_images() {
    let mut content = vec![text()];
    content.extend((0..30).map(|n| img(n, Some(ImageRole::ReferenceImage))));
    let ok = assert_ok(&req(V20, content.clone()));
    assert_eq!((ok.reference_images, ok.has_frames), (30, false));
    content.push(img(30, Some(ImageRole::ReferenceImage)));
    let err = assert_refused(&req(V20, content), "content[31]", Rule::TooMany);
    assert!(err.message.contains("30"), "{err}");
}

#[test]
fn reference_videos_per_series() {
    let mut content = vec![text()];
    content.extend((0..3).map(vid));
    let ok = assert_ok(&req(V20, content.clone()));
    assert_eq!((ok.reference_videos, ok.tier), (3, Tier::ReferenceVideo));
    assert_eq!(ok.hold_reference_seconds(), 15);
    content.push(vid(3));
    assert_refused(&req(V20, content.clone()), "content[4]", Rule::TooMany);
    // 2.5 takes up to ten.
    content.extend((4..10).map(vid));
    let ok = assert_ok(&req(V25, content.clone()));
    assert_eq!(ok.reference_videos, 10);
    assert_eq!(ok.hold_reference_seconds(), 30);
    content.push(vid(10));
    let err = assert_refused(&req(V25, content), "content[11]", Rule::TooMany);
    assert!(err.message.contains("10"), "{err}");
}

#[test]
fn reference_seconds_in_total() {
    assert_eq!(validate_reference_seconds(ClipSeries::V2_0, &[]), Ok(()));
    assert_eq!(
        validate_reference_seconds(ClipSeries::V2_0, &[5.0, 5.0, 5.0]),
        Ok(())
    );
    let err = validate_reference_seconds(ClipSeries::V2_0, &[5.0, 5.0, 5.01]).unwrap_err();
    assert_eq!((err.field.as_str(), err.rule), ("content", Rule::TooLong));
    assert!(err.message.contains("15"), "{err}");
    assert_eq!(
        validate_reference_seconds(ClipSeries::V2_5, &[10.0, 20.0]),
        Ok(())
    );
    let err = validate_reference_seconds(ClipSeries::V2_5, &[10.0, 20.5]).unwrap_err();
    assert_eq!(err.rule, Rule::TooLong);
    for bad in [f64::NAN, f64::INFINITY, -1.0] {
        let err = validate_reference_seconds(ClipSeries::V2_5, &[1.0, bad]).unwrap_err();
        assert_eq!(
            (err.field.as_str(), err.rule),
            ("content", Rule::OutOfRange)
        );
    }
}

// ---------------------------------------------------------------------------------------------
// duration, resolution, ratio
// ---------------------------------------------------------------------------------------------

fn with_duration(model: &str, duration: i64) -> CreateTaskRequest {
    let mut request = req(model, vec![text()]);
    request.duration = Some(duration);
    request
}

#[test]
fn duration_within_the_series_range() {
    for (model, ok, bad) in [
        (V20, [4, 10, 15], [3, 16, 0]),
        (V25, [4, 20, 30], [3, 31, -2]),
    ] {
        for d in ok {
            let got = assert_ok(&with_duration(model, d));
            assert_eq!(i64::from(got.duration_seconds), d);
            assert!(!got.duration_chosen_by_model);
        }
        for d in bad {
            let err = assert_refused(&with_duration(model, d), "duration", Rule::OutOfRange);
            assert!(err.message.contains(&d.to_string()), "{err}");
        }
    }
    assert_refused(&with_duration(V20, i64::MAX), "duration", Rule::OutOfRange);
    assert_refused(&with_duration(V20, i64::MIN), "duration", Rule::OutOfRange);
}

#[test]
fn duration_minus_one_lets_the_model_choose_and_holds_the_maximum() {
    let ok = assert_ok(&with_duration(V20, -1));
    assert_eq!(
        (ok.duration_seconds, ok.duration_chosen_by_model),
        (15, true)
    );
    let ok = assert_ok(&with_duration(V25, -1));
    assert_eq!(ok.duration_seconds, 30);
}

#[test]
fn duration_defaults_to_5_or_follows_frames() {
    assert_eq!(assert_ok(&req(V20, vec![text()])).duration_seconds, 5);
    for (frames, seconds) in [
        (121, 5),
        (97, 4),
        (289, 12),
        (29, 4),
        (100_000, 15),
        (0, 5),
        (-3, 5),
    ] {
        let request = from_json(
            json!({"model": V20, "content": [{"type": "text", "text": "x"}],
                                       "frames": frames}),
        );
        assert_eq!(
            assert_ok(&request).duration_seconds,
            seconds,
            "frames {frames}"
        );
    }
    // `duration` wins over `frames`.
    let request = from_json(
        json!({"model": V20, "content": [{"type": "text", "text": "x"}],
                                   "frames": 289, "duration": 6}),
    );
    assert_eq!(assert_ok(&request).duration_seconds, 6);
}

#[test]
fn resolution_and_ratio_from_the_lists() {
    let mut request = req(V20, vec![text()]);
    let ok = assert_ok(&request);
    assert_eq!(
        (ok.resolution, ok.ratio, ok.generate_audio),
        ("720p", "adaptive", true)
    );
    for resolution in RESOLUTIONS {
        request.resolution = Some(resolution.into());
        assert_eq!(assert_ok(&request).resolution, resolution);
    }
    for bad in ["1080p", "720P", "", "4k"] {
        request.resolution = Some(bad.into());
        let err = assert_refused(&request, "resolution", Rule::UnsupportedValue);
        assert!(err.message.contains("480p, 720p"), "{err}");
    }
    request.resolution = None;
    for ratio in RATIOS {
        request.ratio = Some(ratio.into());
        assert_eq!(assert_ok(&request).ratio, ratio);
    }
    for bad in ["2:1", "16x9", "Adaptive", ""] {
        request.ratio = Some(bad.into());
        assert_refused(&request, "ratio", Rule::UnsupportedValue);
    }
    request.ratio = None;
    request.generate_audio = Some(false);
    assert!(!assert_ok(&request).generate_audio);
}

#[test]
fn rules_are_reported_in_field_order() {
    // Content problems come before duration, duration before resolution, resolution before ratio.
    let request = from_json(
        json!({"model": V20, "content": [{"type": "text", "text": ""}],
                                   "duration": 99, "resolution": "8k", "ratio": "2:1"}),
    );
    assert_refused(&request, "content[0].text", Rule::Required);
    let request = from_json(
        json!({"model": V20, "content": [{"type": "text", "text": "x"}],
                                   "duration": 99, "resolution": "8k", "ratio": "2:1"}),
    );
    assert_refused(&request, "duration", Rule::OutOfRange);
    let request = from_json(
        json!({"model": V20, "content": [{"type": "text", "text": "x"}],
                                   "resolution": "8k", "ratio": "2:1"}),
    );
    assert_refused(&request, "resolution", Rule::UnsupportedValue);
    // Within content, the first broken item wins.
    let request = req(
        V20,
        vec![
            ContentItem::image("http://127.0.0.1/", None),
            ContentItem::text(""),
        ],
    );
    assert_refused(&request, "content[0].image_url.url", Rule::NotPublic);
}

#[test]
fn validated_summary_for_billing() {
    let request = from_json(json!({
        "model": "clipgen-intl-2.5-fast-260301",
        "content": [
            {"type": "text", "text": "x"},
            {"type": "image_url", "image_url": {"url": "https://e.com/1.png"}, "role": "reference_image"},
            {"type": "image_url", "image_url": {"url": "https://e.com/2.png"}, "role": "reference_image"},
            {"type": "video_url", "video_url": {"url": "https://e.com/1.mp4"}, "role": "reference_video"},
            {"type": "audio_url", "audio_url": {"url": "https://e.com/1.mp3"}, "role": "reference_audio"}
        ],
        "duration": 8, "resolution": "480p", "ratio": "9:16", "generate_audio": false
    }));
    let ok = assert_ok(&request);
    assert_eq!(
        ok,
        Validated {
            series: ClipSeries::V2_5,
            duration_seconds: 8,
            duration_chosen_by_model: false,
            resolution: "480p",
            ratio: "9:16",
            generate_audio: false,
            reference_videos: 1,
            reference_images: 2,
            reference_audios: 1,
            has_frames: false,
            tier: Tier::ReferenceVideo,
        }
    );
    let standard = assert_ok(&req(
        V20,
        vec![text(), img(0, Some(ImageRole::ReferenceImage))],
    ));
    assert_eq!(
        (standard.tier, standard.hold_reference_seconds()),
        (Tier::Standard, 0)
    );
    assert_eq!(
        serde_json::to_value(Tier::ReferenceVideo).unwrap(),
        json!("reference_video")
    );
}

#[test]
fn field_errors_become_ark_error_bodies() {
    let err = assert_refused(&req(V20, vec![]), "content", Rule::Required);
    let body = ArkError::from(&err);
    assert_eq!(body.http_status(), 400);
    assert_eq!(
        serde_json::to_value(&body).unwrap(),
        json!({"error": {"code": "MissingParameter", "message": err.message, "param": "content",
                         "type": "BadRequest"}})
    );
    let err = assert_refused(&with_duration(V20, 99), "duration", Rule::OutOfRange);
    let body = ArkError::from(&err);
    assert_eq!(
        (
            body.error.code.as_str(),
            body.error.param.as_str(),
            body.error.kind.as_str()
        ),
        ("InvalidParameter", "duration", "BadRequest")
    );
}
