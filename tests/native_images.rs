//! The native family's image output end to end (docs/api.md §2.9, docs/decisions.md "Images"):
//! `generateContent` and `streamGenerateContent` on image models through the gateway to the
//! simulator, which draws real PNGs. Every charge is worked out here by hand, to the nano-unit,
//! from the answer's own counts and the model's class prices: the images at the vendor's tokens
//! for the size decoded from their bytes, never above the size asked, a vendor claiming 100×
//! cut class by class, a stream cut before its image paying for no image, and the bad requests
//! refused by name before the vendor is called.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use base64::Engine;
use common::{TestGateway, amount, at};
use serde_json::{Value, json};
use tollgate_billing::Amount;
use tollgate_sim::KnobSettings;

const CONFIG: &str = r#"
[[channels]]
name = "genai"
format = "genai"
base_url = "sim"
first_byte_timeout_ms = 30000
idle_timeout_ms = 30000

[models."gen-2.5-flash-image"]
kind = "native-text"
channels = ["genai"]
price = { meter = "token_classes", per_million = { text_in = "0.30", image_in = "0.30", text_out = "2.50", image_out = "30" } }

[models."gen-3-pro-image-preview"]
kind = "native-text"
channels = ["genai"]
price = { meter = "token_classes", per_million = { text_in = "2", image_in = "2", text_out = "12", image_out = "120" } }

[models."gen-2.5-flash"]
kind = "native-text"
channels = ["genai"]
price = { meter = "text_tokens", input_per_million_tokens = "0.30", output_per_million_tokens = "2.50" }
"#;

const SIM_GENERATE: &str = "POST /v1beta/models/{model}:generateContent";

fn generate(model: &str) -> String {
    format!("/v1beta/models/{model}:generateContent")
}

/// The `tokenCount` of `modality` in a details list.
fn detail(details: &Value, modality: &str) -> u64 {
    details
        .as_array()
        .into_iter()
        .flatten()
        .filter(|d| d["modality"] == modality)
        .map(|d| d["tokenCount"].as_u64().unwrap())
        .sum()
}

/// The images of an answer, decoded: their sides read from their bytes.
fn images(answer: &Value) -> Vec<(usize, usize)> {
    answer["candidates"][0]["content"]["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["inlineData"]["data"].as_str())
        .map(|b64| {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .unwrap();
            let size = imagesize::blob_size(&bytes).unwrap();
            (size.width, size.height)
        })
        .collect()
}

fn ask(prompt: &str, config: Value) -> Value {
    json!({"contents": [{"role": "user", "parts": [{"text": prompt}]}], "generationConfig": config})
}

#[tokio::test]
async fn an_image_is_charged_at_the_image_price_by_the_vendors_itemised_counts() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("10").await;
    let r = gw
        .post_json(
            &generate("gen-2.5-flash-image"),
            &key,
            &ask(
                "A lighthouse at dusk",
                json!({"responseModalities": ["TEXT", "IMAGE"], "imageConfig": {"aspectRatio": "16:9"}}),
            ),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let answer = r.json();
    assert_eq!(images(&answer), [(1344, 768)]);
    let usage = &answer["usageMetadata"];
    assert_eq!(detail(&usage["candidatesTokensDetails"], "IMAGE"), 1_290);
    let text_out = detail(&usage["candidatesTokensDetails"], "TEXT");
    assert!(text_out > 0);
    let prompt = usage["promptTokenCount"].as_u64().unwrap();
    // Text in and out at text prices, the image at 30 a million: never the image at text's.
    let expected = amount(at(prompt, "0.30") + at(text_out, "2.50") + at(1_290, "30"));
    assert_eq!(gw.spent_of_ten(&account).await, expected);
    let request_id = r.headers["x-request-id"].to_str().unwrap().to_owned();
    let charge = gw
        .get(&format!("/v1/charges/{request_id}"), &key)
        .await
        .json();
    let row = charge["data"][0].to_string();
    assert!(
        row.contains("image_out") && row.contains("1344x768"),
        "{row}"
    );
    assert_eq!(gw.open_holds(&account).await, 0);
    gw.audit_account(&account).await;
}

#[tokio::test]
async fn a_larger_image_than_asked_is_bounded_by_the_size_asked() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("10").await;
    gw.set_knobs(KnobSettings {
        image_scale: Some(4),
        ..Default::default()
    });
    let r = gw
        .post_json(
            &generate("gen-3-pro-image-preview"),
            &key,
            &ask(
                "A tiny house",
                json!({"imageConfig": {"imageSize": "1K"}, "thinkingConfig": {"thinkingBudget": 128}}),
            ),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let answer = r.json();
    assert_eq!(images(&answer), [(4096, 4096)], "relayed as drawn");
    let usage = &answer["usageMetadata"];
    // The vendor claims a 4K image's 2,000 tokens; 1K was asked: 1,120.
    assert_eq!(detail(&usage["candidatesTokensDetails"], "IMAGE"), 2_000);
    let text_out = detail(&usage["candidatesTokensDetails"], "TEXT")
        + usage["thoughtsTokenCount"].as_u64().unwrap_or(0);
    let prompt = usage["promptTokenCount"].as_u64().unwrap();
    let expected = amount(at(prompt, "2") + at(text_out, "12") + at(1_120, "120"));
    assert_eq!(gw.spent_of_ten(&account).await, expected);
    let request_id = r.headers["x-request-id"].to_str().unwrap().to_owned();
    let charge = gw
        .get(&format!("/v1/charges/{request_id}"), &key)
        .await
        .json();
    assert!(
        charge["data"][0].to_string().contains("image_out 2000"),
        "the cut is an anomaly: {}",
        charge["data"][0]
    );
}

#[tokio::test]
async fn a_vendor_claiming_a_hundred_times_is_cut_class_by_class() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("10").await;
    gw.set_knobs(KnobSettings {
        report_usage: Some(129_000),
        ..Default::default()
    });
    let body = ask("A red bicycle", json!({"maxOutputTokens": 2_000}));
    let r = gw
        .post_json(&generate("gen-2.5-flash-image"), &key, &body)
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(images(&r.json()).len(), 1);
    // Text in cut to the prompt's estimate; the image to its 1,290 tokens; text out to the
    // rest of the output cap (thinking is never seen, so the cap is its only bound).
    let request: tollgate_native_genai::GenerateContentRequest =
        serde_json::from_value(body).unwrap();
    let text_in = tollgate_metering::prompt::estimate_prompt(&request).text;
    let expected = amount(at(text_in, "0.30") + at(2_000 - 1_290, "2.50") + at(1_290, "30"));
    assert_eq!(gw.spent_of_ten(&account).await, expected);
    gw.audit_account(&account).await;
}

/// The `data:` events of an SSE answer, as JSON.
fn events(text: &str) -> Vec<Value> {
    text.split("\r\n\r\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .map(|e| serde_json::from_str(e).unwrap())
        .collect()
}

#[tokio::test]
async fn a_stream_relays_the_image_whole_and_is_charged_as_the_answer() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("10").await;
    let r = gw
        .post_json(
            "/v1beta/models/gen-2.5-flash-image:streamGenerateContent?alt=sse",
            &key,
            &ask("A windmill in the rain", json!({})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let events = events(&r.text());
    let drawn: Vec<_> = events.iter().flat_map(images).collect();
    assert_eq!(drawn, [(1024, 1024)]);
    let usage = &events.last().unwrap()["usageMetadata"];
    let text_out = detail(&usage["candidatesTokensDetails"], "TEXT");
    let prompt = usage["promptTokenCount"].as_u64().unwrap();
    let expected = amount(at(prompt, "0.30") + at(text_out, "2.50") + at(1_290, "30"));
    assert_eq!(gw.spent_of_ten(&account).await, expected);
}

#[tokio::test]
async fn a_stream_cut_before_its_image_pays_for_no_image() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("10").await;
    gw.set_knobs(KnobSettings {
        cut_after_frames: Some(1),
        ..Default::default()
    });
    let r = gw
        .post_json(
            "/v1beta/models/gen-2.5-flash-image:streamGenerateContent?alt=sse",
            &key,
            &ask("A windmill in the rain", json!({})),
        )
        .await;
    assert_eq!(r.status, 200);
    let text = r.text();
    let events = events(&text);
    assert!(events.iter().all(|e| images(e).is_empty()), "{text}");
    // Settled on the last usage seen: the prompt and the first piece of text, no image.
    let usage = &events[0]["usageMetadata"];
    let expected = amount(
        at(usage["promptTokenCount"].as_u64().unwrap(), "0.30")
            + at(usage["candidatesTokenCount"].as_u64().unwrap(), "2.50"),
    );
    assert_eq!(gw.spent_of_ten(&account).await, expected);
    assert_eq!(gw.open_holds(&account).await, 0);
}

#[tokio::test]
async fn bad_image_requests_are_refused_by_name_before_the_vendor() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("10").await;
    let cases = [
        (
            "gen-2.5-flash",
            json!({"responseModalities": ["TEXT", "IMAGE"]}),
            "generationConfig.responseModalities[1]",
        ),
        (
            "gen-2.5-flash",
            json!({"imageConfig": {"aspectRatio": "1:1"}}),
            "generationConfig.imageConfig",
        ),
        (
            "gen-2.5-flash-image",
            json!({"imageConfig": {"imageSize": "4K"}}),
            "generationConfig.imageConfig.imageSize",
        ),
        (
            "gen-3-pro-image-preview",
            json!({"imageConfig": {"aspectRatio": "7:3"}}),
            "generationConfig.imageConfig.aspectRatio",
        ),
        (
            "gen-3-pro-image-preview",
            json!({"responseModalities": "IMAGE"}),
            "generationConfig.responseModalities",
        ),
    ];
    for (model, config, field) in cases {
        let r = gw
            .post_json(&generate(model), &key, &ask("A cat", config))
            .await;
        assert_eq!(r.status, 400, "{model} {field}: {}", r.text());
        assert!(r.text().contains(field), "{field}: {}", r.text());
    }
    // The chat bridge relays text: an image model there is refused, not billed for images the
    // client never sees.
    let r = gw
        .post_json(
            "/v1/chat/completions",
            &key,
            &json!({"model": "gen-2.5-flash-image", "messages": [{"role": "user", "content": "A cat"}]}),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("draws images"), "{}", r.text());
    assert_eq!(gw.calls(SIM_GENERATE), 0);
    assert_eq!(gw.spent_of_ten(&account).await, Amount::ZERO);
    assert_eq!(gw.open_holds(&account).await, 0);
}

#[tokio::test]
async fn an_image_model_priced_as_text_is_refused_at_load() {
    let config = r#"
[[channels]]
name = "genai"
format = "genai"
base_url = "http://127.0.0.1:9"

[models."gen-2.5-flash-image"]
kind = "native-text"
channels = ["genai"]
price = { meter = "text_tokens", input_per_million_tokens = "0.30", output_per_million_tokens = "2.50" }
"#;
    let config = tollgate_settings::Config::parse(config).unwrap();
    let err = tollgate_settings::catalog::Catalog::from_config(&config, None, |_| None)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("draws images") && err.contains("image_out"),
        "{err}"
    );
}

const IMAGEN: &str = r#"
[[channels]]
name = "genai"
format = "genai"
base_url = "sim"
first_byte_timeout_ms = 30000
idle_timeout_ms = 30000

[models."imagen-4.0-generate-001"]
kind = "native-images"
channels = ["genai"]
price = { meter = "images", per_image = "0.04" }

[models."imagen-4.0-ultra-generate-001"]
kind = "native-images"
channels = ["genai"]
price = { meter = "images", per_image = "0.06" }
"#;

fn predict(model: &str) -> String {
    format!("/v1beta/models/{model}:predict")
}

/// The pictures of a `:predict` answer, decoded: their sides and the type their bytes are.
fn predicted(answer: &Value) -> Vec<((usize, usize), String)> {
    answer["predictions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(p["bytesBase64Encoded"].as_str()?)
                .unwrap();
            let size = imagesize::blob_size(&bytes).unwrap();
            Some((
                (size.width, size.height),
                p["mimeType"].as_str()?.to_owned(),
            ))
        })
        .collect()
}

#[tokio::test]
async fn imagen_is_charged_by_the_picture_relayed() {
    let gw = TestGateway::with_config(IMAGEN).await;
    let (account, key) = gw.account("10").await;
    let r = gw
        .post_json(
            &predict("imagen-4.0-generate-001"),
            &key,
            &json!({"instances": [{"prompt": "A fox in the snow"}],
                    "parameters": {"sampleCount": 3, "aspectRatio": "16:9", "outputOptions": {"mimeType": "image/jpeg"}}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let drawn = predicted(&r.json());
    assert_eq!(drawn, vec![((1408, 768), "image/jpeg".to_owned()); 3]);
    assert_eq!(
        gw.spent_of_ten(&account).await,
        amount(at(3_000_000, "0.04"))
    );
    let request_id = r.headers["x-request-id"].to_str().unwrap().to_owned();
    let charge = gw
        .get(&format!("/v1/charges/{request_id}"), &key)
        .await
        .json();
    let row = charge["data"][0].to_string();
    assert!(row.contains("images") && row.contains("1408x768"), "{row}");
    gw.audit_account(&account).await;
    // Listed, and read, as the vendor lists Imagen: by its one method.
    let listed = gw.get("/v1beta/models", &key).await.json();
    let imagen = listed["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "models/imagen-4.0-generate-001")
        .cloned()
        .unwrap();
    assert_eq!(imagen["supportedGenerationMethods"], json!(["predict"]));
    let one = gw.get("/v1beta/models/imagen-4.0-generate-001", &key).await;
    assert_eq!(one.status, 200, "{}", one.text());
    assert_eq!(one.json(), imagen);
}

#[tokio::test]
async fn a_filtered_picture_is_relayed_with_its_reason_and_not_charged() {
    let gw = TestGateway::with_config(IMAGEN).await;
    let (account, key) = gw.account("10").await;
    let r = gw
        .post_json(
            &predict("imagen-4.0-generate-001"),
            &key,
            &json!({"instances": [{"prompt": "[refuse] a crowd"}], "parameters": {"sampleCount": 2}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let answer = r.json();
    assert_eq!(predicted(&answer).len(), 1);
    assert!(answer["predictions"][1]["raiFilteredReason"].is_string());
    assert_eq!(
        gw.spent_of_ten(&account).await,
        amount(at(1_000_000, "0.04"))
    );
    // Every picture filtered: nothing charged.
    let r = gw
        .post_json(
            &predict("imagen-4.0-ultra-generate-001"),
            &key,
            &json!({"instances": [{"prompt": "[refuse] a crowd"}], "parameters": {"sampleCount": 1}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        gw.spent_of_ten(&account).await,
        amount(at(1_000_000, "0.04"))
    );
    assert_eq!(gw.open_holds(&account).await, 0);
}

#[tokio::test]
async fn bad_imagen_requests_are_refused_by_name_before_the_vendor() {
    let gw = TestGateway::with_config(IMAGEN).await;
    let (account, key) = gw.account("10").await;
    let cases = [
        (
            "imagen-4.0-generate-001",
            json!({"instances": []}),
            "instances",
        ),
        (
            "imagen-4.0-generate-001",
            json!({"instances": [{"prompt": "a"}], "parameters": {"sampleCount": 5}}),
            "parameters.sampleCount",
        ),
        (
            "imagen-4.0-ultra-generate-001",
            json!({"instances": [{"prompt": "a"}], "parameters": {"sampleCount": 2}}),
            "parameters.sampleCount",
        ),
        (
            "imagen-4.0-generate-001",
            json!({"instances": [{"prompt": "a"}], "parameters": {"aspectRatio": "21:9"}}),
            "parameters.aspectRatio",
        ),
    ];
    for (model, body, field) in cases {
        let r = gw.post_json(&predict(model), &key, &body).await;
        assert_eq!(r.status, 400, "{field}: {}", r.text());
        assert!(r.text().contains(field), "{field}: {}", r.text());
    }
    let r = gw
        .post_json(
            &predict("gen-2.5-flash"),
            &key,
            &json!({"instances": [{"prompt": "a"}]}),
        )
        .await;
    assert_eq!(r.status, 404, "{}", r.text());
    assert_eq!(gw.calls("POST /v1beta/models/{model}:predict"), 0);
    assert_eq!(gw.spent_of_ten(&account).await, Amount::ZERO);
}

#[tokio::test]
async fn imagen_counts_its_pictures_once_on_the_keys_images_per_minute() {
    // Within one minute window (the quota's).
    common::fresh_minute(20).await;
    let gw = TestGateway::with_config(IMAGEN).await;
    let (account, _) = gw.account("10").await;
    let key = gw
        .key_with(
            &account,
            tollgate_store::AccessPolicy {
                per_minute: Some([("images".to_owned(), 3)].into()),
                ..Default::default()
            },
        )
        .await
        .secret;
    let ask =
        |n: u32| json!({"instances": [{"prompt": "a kite"}], "parameters": {"sampleCount": n}});
    let path = predict("imagen-4.0-generate-001");
    let first = gw.post_json(&path, &key, &ask(2)).await;
    assert_eq!(first.status, 200, "{}", first.text());
    let second = gw.post_json(&path, &key, &ask(2)).await;
    assert_eq!(second.status, 429, "{}", second.text());
    assert!(
        second.text().contains("3 images per minute"),
        "{}",
        second.text()
    );
    assert_eq!(
        gw.calls("POST /v1beta/models/{model}:predict"),
        1,
        "never sent"
    );
    // The two relayed count once: as images asked, not again as the meter's units.
    let third = gw.post_json(&path, &key, &ask(1)).await;
    assert_eq!(third.status, 200, "{}", third.text());
    assert_eq!(
        gw.spent_of_ten(&account).await,
        amount(at(3_000_000, "0.04"))
    );
}
