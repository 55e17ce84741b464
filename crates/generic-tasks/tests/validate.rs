//! The per-model table of docs/api.md §2.8 and `validate`: for each of the five models, the defaults,
//! both ends of the duration range (just inside and just outside), the resolutions and aspect
//! ratios offered and refused, and every parameter it does not take refused by name.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use tollgate_generic_tasks::models::{MODEL_DEFAULT, MODELS, ModelSpec, spec};
use tollgate_generic_tasks::{
    CreateVideoRequest, ErrorBody, FieldError, MAX_PROMPT_CHARS, Rule, Validated, validate,
};

#[track_caller]
fn model(id: &str) -> &'static ModelSpec {
    spec(id).unwrap_or_else(|| panic!("{id} is not in the table"))
}

fn request(id: &str) -> CreateVideoRequest {
    CreateVideoRequest::new(id, "A calm sea at dawn")
}

fn with_duration(id: &str, duration: f64) -> CreateVideoRequest {
    let mut req = request(id);
    req.duration = Some(duration);
    req
}

#[track_caller]
fn assert_error<T: std::fmt::Debug>(
    result: Result<T, FieldError>,
    field: &str,
    rule: Rule,
    message: &str,
) {
    let err = result.unwrap_err();
    assert_eq!(
        (err.field.as_str(), err.rule, err.message.as_str()),
        (field, rule, message)
    );
}

#[track_caller]
fn assert_refused_field<T: std::fmt::Debug>(
    result: Result<T, FieldError>,
    field: &str,
    rule: Rule,
) {
    let err = result.unwrap_err();
    assert_eq!((err.field.as_str(), err.rule), (field, rule), "{err}");
}

#[track_caller]
fn duration_ok(id: &str, asked: f64) -> u32 {
    validate(&with_duration(id, asked), model(id))
        .unwrap()
        .duration_seconds
}

#[track_caller]
fn duration_refused(id: &str, asked: f64) {
    assert_refused_field(
        validate(&with_duration(id, asked), model(id)),
        "duration",
        Rule::OutOfRange,
    );
}

/// Refuses each parameter of `params` by name for model `id`.
#[track_caller]
fn assert_unsupported(id: &str, params: &[&str]) {
    for param in params {
        let mut req = request(id);
        match *param {
            "seed" => req.seed = Some(1),
            "negative_prompt" => req.negative_prompt = Some("blur".into()),
            "sound" => req.sound = Some(true),
            "watermark" => req.watermark = Some(true),
            "aspect_ratio" => req.aspect_ratio = Some("16:9".into()),
            other => panic!("unexpected parameter {other}"),
        }
        assert_error(
            validate(&req, model(id)),
            param,
            Rule::UnsupportedParameter,
            &format!("'{param}' is not supported by {id}"),
        );
    }
}

#[track_caller]
fn aspect_ratio(id: &str, asked: &str) -> Result<Validated, FieldError> {
    let mut req = request(id);
    req.aspect_ratio = Some(asked.into());
    validate(&req, model(id))
}

#[track_caller]
fn resolution(id: &str, asked: &str) -> Result<Validated, FieldError> {
    let mut req = request(id);
    req.resolution = Some(asked.into());
    validate(&req, model(id))
}

// ---- the table -------------------------------------------------------------------------------

#[test]
fn table_has_the_five_models_of_spec_2_8_and_the_sora_style_two() {
    let ids: Vec<&str> = MODELS.iter().map(|m| m.id).collect();
    assert_eq!(
        ids,
        [
            "imagine-video",
            "horse-1.1-t2v",
            "wave-2-7-video",
            "wave-3-0-video",
            "omni",
            "sora-2",
            "sora-2-pro"
        ]
    );
    let ranges: Vec<_> = MODELS.iter().map(|m| m.duration.clone()).collect();
    assert_eq!(
        ranges,
        [1..=15, 3..=15, 2..=15, 2..=30, 4..=4, 4..=12, 4..=12]
    );
    let defaults: Vec<&str> = MODELS.iter().map(|m| m.default_resolution).collect();
    assert_eq!(
        defaults,
        [
            MODEL_DEFAULT,
            "1080P",
            "720p",
            "480p",
            "720p",
            "720p",
            "720p"
        ]
    );
}

#[test]
fn a_sora_style_model_makes_its_few_sizes_and_lengths_only() {
    let pro = model("sora-2-pro");
    let ask = |seconds: Option<f64>, resolution: Option<&str>, ratio: Option<&str>| {
        let mut req = request("sora-2-pro");
        req.duration = seconds;
        req.resolution = resolution.map(str::to_owned);
        req.aspect_ratio = ratio.map(str::to_owned);
        validate(&req, pro)
    };
    // The vendor's defaults: 4 seconds at 720x1280.
    let ok = ask(None, None, None).unwrap();
    assert_eq!(
        (
            ok.duration_seconds,
            ok.resolution.as_str(),
            ok.aspect_ratio.as_deref()
        ),
        (4, "720p", Some("9:16"))
    );
    let ok = ask(Some(8.0), Some("1024p"), None).unwrap();
    assert_eq!(ok.aspect_ratio.as_deref(), Some("4:7"));
    assert!(ask(Some(12.0), Some("1024p"), Some("7:4")).is_ok());
    // Between the lengths it makes, and sizes it does not make.
    let err = ask(Some(6.0), None, None).unwrap_err();
    assert_eq!(err.field, "duration");
    assert!(
        err.message.contains("one of 4, 8, 12 seconds"),
        "{}",
        err.message
    );
    assert_refused_field(
        ask(None, Some("1024p"), Some("16:9")),
        "aspect_ratio",
        Rule::UnsupportedValue,
    );
    assert_refused_field(
        ask(None, Some("720p"), Some("7:4")),
        "aspect_ratio",
        Rule::UnsupportedValue,
    );
    assert_refused_field(
        validate(&with_resolution_of("sora-2", "1024p"), model("sora-2")),
        "resolution",
        Rule::UnsupportedValue,
    );
}

fn with_resolution_of(id: &str, resolution: &str) -> CreateVideoRequest {
    let mut req = request(id);
    req.resolution = Some(resolution.into());
    req
}

#[test]
fn every_row_is_consistent() {
    for m in MODELS {
        assert!(m.duration.contains(&m.default_duration), "{}", m.id);
        assert!(m.resolutions.contains(&m.default_resolution), "{}", m.id);
        assert!(
            m.supports.aspect_ratio || m.aspect_ratios.is_empty(),
            "{}",
            m.id
        );
        assert_eq!(spec(m.id), Some(m));
    }
}

#[test]
fn supports_per_model() {
    let row = |id: &str| {
        let s = model(id).supports;
        (
            s.aspect_ratio,
            s.seed,
            s.negative_prompt,
            s.sound,
            s.watermark,
        )
    };
    assert_eq!(row("imagine-video"), (true, true, true, false, false));
    assert_eq!(row("horse-1.1-t2v"), (true, true, true, false, false));
    assert_eq!(row("wave-2-7-video"), (true, false, false, false, false));
    assert_eq!(row("wave-3-0-video"), (true, false, false, true, true));
    assert_eq!(row("omni"), (true, false, false, false, false));
}

#[test]
fn video_url_only_for_wave_models() {
    let with: Vec<&str> = MODELS
        .iter()
        .filter(|m| m.returns_video_url)
        .map(|m| m.id)
        .collect();
    assert_eq!(with, ["wave-2-7-video", "wave-3-0-video"]);
}

#[test]
fn spec_lookup_is_exact() {
    assert!(spec("imagine-video").is_some());
    assert!(spec("Imagine-Video").is_none());
    assert!(spec(" omni").is_none());
    assert!(spec("").is_none());
    assert!(spec("wave-2-7").is_none());
}

// ---- imagine-video ---------------------------------------------------------------------------

#[test]
fn imagine_video_defaults() {
    let ok = validate(&request("imagine-video"), model("imagine-video")).unwrap();
    assert_eq!(
        ok,
        Validated {
            duration_seconds: 5,
            resolution: "default".into(),
            aspect_ratio: None
        }
    );
}

#[test]
fn imagine_video_duration_limits() {
    assert_eq!(duration_ok("imagine-video", 1.0), 1);
    assert_eq!(duration_ok("imagine-video", 15.0), 15);
    assert_eq!(duration_ok("imagine-video", 0.5), 1);
    duration_refused("imagine-video", 0.0);
    duration_refused("imagine-video", 16.0);
    duration_refused("imagine-video", 15.2);
    assert_error(
        validate(
            &with_duration("imagine-video", 16.0),
            model("imagine-video"),
        ),
        "duration",
        Rule::OutOfRange,
        "'duration' must be between 1 and 15 seconds for imagine-video, got 16",
    );
}

#[test]
fn imagine_video_resolution_is_only_default() {
    assert_eq!(
        resolution("imagine-video", "default").unwrap().resolution,
        "default"
    );
    assert_eq!(
        resolution("imagine-video", "DEFAULT").unwrap().resolution,
        "default"
    );
    assert_error(
        resolution("imagine-video", "720p"),
        "resolution",
        Rule::UnsupportedValue,
        "'resolution' must be default for imagine-video, got '720p'",
    );
    assert_refused_field(
        resolution("imagine-video", ""),
        "resolution",
        Rule::UnsupportedValue,
    );
}

#[test]
fn imagine_video_aspect_ratios() {
    for ratio in ["16:9", "9:16", "1:1"] {
        assert_eq!(
            aspect_ratio("imagine-video", ratio)
                .unwrap()
                .aspect_ratio
                .as_deref(),
            Some(ratio)
        );
    }
    for ratio in ["4:3", "auto", "21:9", ""] {
        assert_refused_field(
            aspect_ratio("imagine-video", ratio),
            "aspect_ratio",
            Rule::UnsupportedValue,
        );
    }
    assert_error(
        aspect_ratio("imagine-video", "4:3"),
        "aspect_ratio",
        Rule::UnsupportedValue,
        "'aspect_ratio' must be one of 16:9, 9:16, 1:1 for imagine-video, got '4:3'",
    );
}

#[test]
fn imagine_video_takes_seed_and_negative_prompt() {
    let mut req = request("imagine-video");
    req.seed = Some(42);
    req.negative_prompt = Some("text, watermark".into());
    req.aspect_ratio = Some("9:16".into());
    assert!(validate(&req, model("imagine-video")).is_ok());
}

#[test]
fn imagine_video_refuses_sound_and_watermark() {
    assert_unsupported("imagine-video", &["sound", "watermark"]);
}

// ---- horse-1.1-t2v ---------------------------------------------------------------------------

#[test]
fn horse_defaults() {
    let ok = validate(&request("horse-1.1-t2v"), model("horse-1.1-t2v")).unwrap();
    assert_eq!(
        (ok.duration_seconds, ok.resolution.as_str(), ok.aspect_ratio),
        (5, "1080P", None)
    );
}

#[test]
fn horse_duration_limits() {
    assert_eq!(duration_ok("horse-1.1-t2v", 3.0), 3);
    assert_eq!(duration_ok("horse-1.1-t2v", 15.0), 15);
    assert_eq!(duration_ok("horse-1.1-t2v", 2.5), 3);
    duration_refused("horse-1.1-t2v", 2.0);
    duration_refused("horse-1.1-t2v", 16.0);
    assert_error(
        validate(&with_duration("horse-1.1-t2v", 2.0), model("horse-1.1-t2v")),
        "duration",
        Rule::OutOfRange,
        "'duration' must be between 3 and 15 seconds for horse-1.1-t2v, got 2",
    );
}

#[test]
fn horse_resolutions_case_insensitive() {
    assert_eq!(
        resolution("horse-1.1-t2v", "1080P").unwrap().resolution,
        "1080P"
    );
    assert_eq!(
        resolution("horse-1.1-t2v", "1080p").unwrap().resolution,
        "1080P"
    );
    assert_eq!(
        resolution("horse-1.1-t2v", "720p").unwrap().resolution,
        "720P"
    );
    for asked in ["480p", "4K", "default", "1080"] {
        assert_refused_field(
            resolution("horse-1.1-t2v", asked),
            "resolution",
            Rule::UnsupportedValue,
        );
    }
    assert_error(
        resolution("horse-1.1-t2v", "480p"),
        "resolution",
        Rule::UnsupportedValue,
        "'resolution' must be one of 1080P, 720P for horse-1.1-t2v, got '480p'",
    );
}

#[test]
fn horse_aspect_ratios() {
    for ratio in ["16:9", "9:16", "1:1"] {
        assert!(aspect_ratio("horse-1.1-t2v", ratio).is_ok(), "{ratio}");
    }
    for ratio in ["auto", "3:4"] {
        assert_refused_field(
            aspect_ratio("horse-1.1-t2v", ratio),
            "aspect_ratio",
            Rule::UnsupportedValue,
        );
    }
}

#[test]
fn horse_takes_seed_and_negative_prompt() {
    let mut req = request("horse-1.1-t2v");
    req.seed = Some(-1);
    req.negative_prompt = Some(String::new());
    assert!(validate(&req, model("horse-1.1-t2v")).is_ok());
}

#[test]
fn horse_refuses_sound_and_watermark() {
    assert_unsupported("horse-1.1-t2v", &["sound", "watermark"]);
}

// ---- wave-2-7-video --------------------------------------------------------------------------

#[test]
fn wave_2_7_defaults() {
    let ok = validate(&request("wave-2-7-video"), model("wave-2-7-video")).unwrap();
    assert_eq!(
        (ok.duration_seconds, ok.resolution.as_str(), ok.aspect_ratio),
        (5, "720p", None)
    );
}

#[test]
fn wave_2_7_duration_limits() {
    assert_eq!(duration_ok("wave-2-7-video", 2.0), 2);
    assert_eq!(duration_ok("wave-2-7-video", 15.0), 15);
    duration_refused("wave-2-7-video", 1.0);
    duration_refused("wave-2-7-video", 16.0);
}

#[test]
fn wave_2_7_resolution_and_aspect_ratio() {
    assert_eq!(
        resolution("wave-2-7-video", "720P").unwrap().resolution,
        "720p"
    );
    assert_error(
        resolution("wave-2-7-video", "1080p"),
        "resolution",
        Rule::UnsupportedValue,
        "'resolution' must be 720p for wave-2-7-video, got '1080p'",
    );
    assert_eq!(
        aspect_ratio("wave-2-7-video", "16:9")
            .unwrap()
            .aspect_ratio
            .as_deref(),
        Some("16:9")
    );
    for ratio in ["9:16", "1:1", "auto"] {
        assert_refused_field(
            aspect_ratio("wave-2-7-video", ratio),
            "aspect_ratio",
            Rule::UnsupportedValue,
        );
    }
}

#[test]
fn wave_2_7_refuses_every_optional_parameter() {
    assert_unsupported(
        "wave-2-7-video",
        &["seed", "negative_prompt", "sound", "watermark"],
    );
}

// ---- wave-3-0-video --------------------------------------------------------------------------

#[test]
fn wave_3_0_defaults() {
    let ok = validate(&request("wave-3-0-video"), model("wave-3-0-video")).unwrap();
    assert_eq!(
        (ok.duration_seconds, ok.resolution.as_str(), ok.aspect_ratio),
        (5, "480p", None)
    );
}

#[test]
fn wave_3_0_duration_limits() {
    assert_eq!(duration_ok("wave-3-0-video", 2.0), 2);
    assert_eq!(duration_ok("wave-3-0-video", 30.0), 30);
    assert_eq!(duration_ok("wave-3-0-video", 29.1), 30);
    duration_refused("wave-3-0-video", 1.0);
    duration_refused("wave-3-0-video", 31.0);
    duration_refused("wave-3-0-video", 30.01);
}

#[test]
fn wave_3_0_resolution_and_aspect_ratio() {
    assert_eq!(
        resolution("wave-3-0-video", "480p").unwrap().resolution,
        "480p"
    );
    assert_refused_field(
        resolution("wave-3-0-video", "720p"),
        "resolution",
        Rule::UnsupportedValue,
    );
    assert_eq!(
        aspect_ratio("wave-3-0-video", "AUTO")
            .unwrap()
            .aspect_ratio
            .as_deref(),
        Some("auto")
    );
    assert!(aspect_ratio("wave-3-0-video", "16:9").is_ok());
    assert_error(
        aspect_ratio("wave-3-0-video", "9:16"),
        "aspect_ratio",
        Rule::UnsupportedValue,
        "'aspect_ratio' must be one of 16:9, auto for wave-3-0-video, got '9:16'",
    );
}

#[test]
fn wave_3_0_takes_sound_and_watermark() {
    let mut req = request("wave-3-0-video");
    req.sound = Some(true);
    req.watermark = Some(false);
    req.duration = Some(30.0);
    let ok = validate(&req, model("wave-3-0-video")).unwrap();
    assert_eq!(ok.duration_seconds, 30);
}

#[test]
fn wave_3_0_refuses_seed_and_negative_prompt() {
    assert_unsupported("wave-3-0-video", &["seed", "negative_prompt"]);
}

// ---- omni ------------------------------------------------------------------------------------

#[test]
fn omni_defaults() {
    let ok = validate(&request("omni"), model("omni")).unwrap();
    assert_eq!(
        (ok.duration_seconds, ok.resolution.as_str(), ok.aspect_ratio),
        (4, "720p", None)
    );
}

#[test]
fn omni_is_fixed_at_four_seconds() {
    assert!(model("omni").is_fixed_duration());
    assert_eq!(duration_ok("omni", 4.0), 4);
    assert_eq!(duration_ok("omni", 3.5), 4);
    duration_refused("omni", 3.0);
    duration_refused("omni", 5.0);
    duration_refused("omni", 4.01);
    assert_error(
        validate(&with_duration("omni", 5.0), model("omni")),
        "duration",
        Rule::OutOfRange,
        "'duration' must be 4 seconds for omni, got 5",
    );
}

#[test]
fn omni_resolution_and_aspect_ratio() {
    assert!(resolution("omni", "720p").is_ok());
    assert_refused_field(
        resolution("omni", "480p"),
        "resolution",
        Rule::UnsupportedValue,
    );
    assert!(aspect_ratio("omni", "16:9").is_ok());
    assert_refused_field(
        aspect_ratio("omni", "1:1"),
        "aspect_ratio",
        Rule::UnsupportedValue,
    );
}

#[test]
fn omni_refuses_every_optional_parameter() {
    assert_unsupported("omni", &["seed", "negative_prompt", "sound", "watermark"]);
}

// ---- rules shared by every model -------------------------------------------------------------

#[test]
fn unsupported_parameters_are_refused_whatever_their_value() {
    let mut req = request("imagine-video");
    req.sound = Some(false);
    assert_refused_field(
        validate(&req, model("imagine-video")),
        "sound",
        Rule::UnsupportedParameter,
    );
    let mut req = request("omni");
    req.negative_prompt = Some(String::new());
    assert_refused_field(
        validate(&req, model("omni")),
        "negative_prompt",
        Rule::UnsupportedParameter,
    );
    let mut req = request("omni");
    req.seed = Some(0);
    assert_refused_field(
        validate(&req, model("omni")),
        "seed",
        Rule::UnsupportedParameter,
    );
}

#[test]
fn aspect_ratio_refused_by_a_model_without_it() {
    let no_ratio = ModelSpec {
        id: "test-model",
        supports: tollgate_generic_tasks::Supports::default(),
        aspect_ratios: &[],
        ..model("omni").clone()
    };
    let mut req = request("test-model");
    req.aspect_ratio = Some("16:9".into());
    assert_error(
        validate(&req, &no_ratio),
        "aspect_ratio",
        Rule::UnsupportedParameter,
        "'aspect_ratio' is not supported by test-model",
    );
}

#[test]
fn an_empty_aspect_ratio_list_passes_any_value() {
    let any_ratio = ModelSpec {
        id: "test-any",
        aspect_ratios: &[],
        ..model("horse-1.1-t2v").clone()
    };
    assert!(any_ratio.accepts_any_aspect_ratio());
    let mut req = request("test-any");
    req.aspect_ratio = Some("2.39:1".into());
    assert_eq!(
        validate(&req, &any_ratio).unwrap().aspect_ratio.as_deref(),
        Some("2.39:1")
    );
}

#[test]
fn model_and_prompt_are_required() {
    for id in MODELS.iter().map(|m| m.id) {
        let m = model(id);
        assert_error(
            validate(&CreateVideoRequest::new("", "p"), m),
            "model",
            Rule::Required,
            "'model' is required and must not be empty",
        );
        for prompt in ["", "   ", "\n\t"] {
            assert_error(
                validate(&CreateVideoRequest::new(id, prompt), m),
                "prompt",
                Rule::Required,
                "'prompt' is required and must not be empty",
            );
        }
    }
}

#[test]
fn prompt_length_limit() {
    let m = model("imagine-video");
    let at_limit = CreateVideoRequest::new("imagine-video", "é".repeat(MAX_PROMPT_CHARS));
    assert!(validate(&at_limit, m).is_ok());
    let over = CreateVideoRequest::new("imagine-video", "x".repeat(MAX_PROMPT_CHARS + 1));
    assert_error(
        validate(&over, m),
        "prompt",
        Rule::TooLong,
        "'prompt' has 4001 characters; at most 4000 are allowed",
    );
    let mut req = request("imagine-video");
    req.negative_prompt = Some("n".repeat(MAX_PROMPT_CHARS + 1));
    assert_refused_field(validate(&req, m), "negative_prompt", Rule::TooLong);
}

#[test]
fn non_finite_and_negative_durations_are_refused() {
    for id in MODELS.iter().map(|m| m.id) {
        for asked in [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -1.0,
            -0.5,
            0.0,
            1e300,
        ] {
            duration_refused(id, asked);
        }
    }
}

#[test]
fn errors_are_reported_in_field_order() {
    // Duration and sound both wrong: duration comes first.
    let mut req = with_duration("omni", 9.0);
    req.sound = Some(true);
    assert_refused_field(validate(&req, model("omni")), "duration", Rule::OutOfRange);
    // Prompt before everything else.
    req.prompt.clear();
    assert_refused_field(validate(&req, model("omni")), "prompt", Rule::Required);
}

#[test]
fn a_field_error_becomes_an_openai_error_body() {
    let mut req = request("imagine-video");
    req.watermark = Some(true);
    let err = validate(&req, model("imagine-video")).unwrap_err();
    assert_eq!(
        serde_json::to_value(ErrorBody::from(&err)).unwrap(),
        serde_json::json!({"error": {
            "message": "'watermark' is not supported by imagine-video",
            "type": "invalid_request_error",
            "param": "watermark",
            "code": "unsupported_parameter"
        }})
    );
}

#[test]
fn decoded_seconds_string_is_validated_like_duration() {
    let req: CreateVideoRequest =
        serde_json::from_str(r#"{"model":"wave-2-7-video","prompt":"p","seconds":"16"}"#).unwrap();
    assert_refused_field(
        validate(&req, model("wave-2-7-video")),
        "duration",
        Rule::OutOfRange,
    );
    let req: CreateVideoRequest =
        serde_json::from_str(r#"{"model":"wave-2-7-video","prompt":"p","seconds":"15"}"#).unwrap();
    assert_eq!(
        validate(&req, model("wave-2-7-video"))
            .unwrap()
            .duration_seconds,
        15
    );
}

proptest! {
    #[test]
    fn duration_accepted_iff_rounded_up_in_range(index in 0..MODELS.len(), asked in -5.0f64..40.0) {
        let m = &MODELS[index];
        let mut req = CreateVideoRequest::new(m.id, "p");
        req.duration = Some(asked);
        let rounded = asked.ceil();
        let in_range = asked > 0.0
            && rounded >= f64::from(*m.duration.start())
            && rounded <= f64::from(*m.duration.end())
            && (m.durations.is_empty() || m.durations.contains(&(rounded as u32)));
        match validate(&req, m) {
            Ok(ok) => {
                prop_assert!(in_range);
                prop_assert!(m.duration.contains(&ok.duration_seconds));
                prop_assert!(f64::from(ok.duration_seconds) >= asked);
                prop_assert!(f64::from(ok.duration_seconds) - asked < 1.0);
            }
            Err(err) => {
                prop_assert!(!in_range);
                prop_assert_eq!(err.field.as_str(), "duration");
            }
        }
    }

    #[test]
    fn validate_never_panics(
        index in 0..MODELS.len(),
        prompt in "\\PC{0,20}",
        duration in proptest::option::of(any::<f64>()),
        resolution in proptest::option::of("[0-9a-zA-Z:]{0,6}"),
        ratio in proptest::option::of("[0-9a-z:]{0,5}"),
        seed in proptest::option::of(any::<i64>()),
        sound in proptest::option::of(any::<bool>()),
    ) {
        let m = &MODELS[index];
        let mut req = CreateVideoRequest::new(m.id, prompt);
        req.duration = duration;
        req.resolution = resolution;
        req.aspect_ratio = ratio;
        req.seed = seed;
        req.sound = sound;
        if let Ok(ok) = validate(&req, m) {
            prop_assert!(m.duration.contains(&ok.duration_seconds));
            prop_assert!(m.resolutions.contains(&ok.resolution.as_str()));
            if !m.sizes.is_empty() {
                let ratio = ok.aspect_ratio.as_deref().unwrap_or_default();
                prop_assert!(m.sizes.contains(&(ok.resolution.as_str(), ratio)));
            }
        }
    }
}
