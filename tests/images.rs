//! OpenAI Images end to end (docs/api.md §2.13; docs/decisions.md, "Images"): a real HTTP
//! client → the gateway → an `openai-images` channel (the simulator, drawing real PNG, JPEG and
//! WebP). Every charge is checked to the nano-unit against OpenAI's published token rules and
//! the model's prices, worked out here by hand: the vendor's honest usage, a vendor that claims
//! 100×, one that draws larger than asked, a refusal, a stream cut after a partial image, and
//! every bad input refused by name before the vendor is called, no hold left behind.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use base64::Engine;
use common::{Reply, TestGateway, amount, at, png};
use serde_json::{Value, json};
use tollgate_billing::Amount;
use tollgate_sim::KnobSettings;

const CONFIG: &str = r#"
[[channels]]
name = "images"
format = "openai-images"
base_url = "sim"
first_byte_timeout_ms = 30000
idle_timeout_ms = 30000

[models."gpt-image-2"]
kind = "images"
channels = ["images"]
price = { meter = "token_classes", per_million = { text_in = "5", cached_text_in = "1.25", image_in = "8", text_out = "10", image_out = "30" } }
images = { family = "gpt-image-2", max_n = 4 }

[models."gpt-image-1.5"]
kind = "images"
channels = ["images"]
price = { meter = "token_classes", per_million = { text_in = "5", image_in = "8", image_out = "32" } }
images = { family = "gpt-image-1" }

[models."dall-e-3"]
kind = "images"
channels = ["images"]
price = { meter = "images", per_image = "0.04", per_image_by_size = { "1024x1024" = "0.04", "1792x1024" = "0.08", "1024x1792" = "0.08", "1024x1024/hd" = "0.08", "1792x1024/hd" = "0.12", "1024x1792/hd" = "0.12" } }
images = { family = "dall-e-3" }

[models."dall-e-2"]
kind = "images"
channels = ["images"]
price = { meter = "images", per_image = "0.02", per_image_by_size = { "256x256" = "0.016", "512x512" = "0.018" } }
images = { family = "dall-e-2", max_n = 4 }
"#;

const GENERATIONS: &str = "/v1/images/generations";

/// The simulator's honest text tokens: a token for every four bytes of the prompt.
fn text_tokens(prompt: &str) -> u64 {
    (prompt.len() as u64).div_ceil(4)
}

/// The gateway's estimate of a prompt's tokens.
fn estimate(prompt: &str) -> u64 {
    tollgate_metering::tokens::estimate_vendor_tokens(prompt)
}

/// An image's bytes, decoded from the answer, and its size read from them.
fn decoded(b64: &Value) -> (Vec<u8>, (usize, usize)) {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64.as_str().unwrap())
        .unwrap();
    let size = imagesize::blob_size(&bytes).unwrap();
    (bytes, (size.width, size.height))
}

#[tokio::test]
async fn each_size_and_quality_is_charged_openais_tokens_to_the_nano_unit() {
    let gw = TestGateway::with_config(CONFIG).await;
    // gpt-image-2's formula (1024² high 7,024; 1536×1024 high 5,488) and gpt-image-1's table.
    let cases = [
        ("gpt-image-2", "1024x1024", "high", "png", 7_024u64, "30"),
        ("gpt-image-2", "1536x1024", "high", "jpeg", 5_488, "30"),
        ("gpt-image-2", "1024x1024", "low", "webp", 196, "30"),
        ("gpt-image-2", "1024x1536", "medium", "png", 1_372, "30"),
        ("gpt-image-1.5", "1024x1024", "medium", "png", 1_056, "32"),
        ("gpt-image-1.5", "1536x1024", "high", "webp", 6_208, "32"),
    ];
    for (model, size, quality, format, tokens, price) in cases {
        let (account, key) = gw.account("10").await;
        let prompt = format!("A lighthouse at dusk, {size} {quality}");
        let r = gw
            .post_json(
                GENERATIONS,
                &key,
                &json!({"model": model, "prompt": prompt, "size": size, "quality": quality,
                        "output_format": format, "n": 2}),
            )
            .await;
        assert_eq!(r.status, 200, "{model} {size}: {}", r.text());
        let body = r.json();
        let data = body["data"].as_array().unwrap();
        assert_eq!(data.len(), 2);
        let (w, h) = size.split_once('x').unwrap();
        for image in data {
            let (bytes, drawn) = decoded(&image["b64_json"]);
            assert_eq!(drawn, (w.parse().unwrap(), h.parse().unwrap()));
            let mime = tollgate_probe::media::image_type(&bytes).unwrap();
            assert_eq!(mime, format!("image/{format}"));
        }
        assert_eq!(body["size"], size);
        assert_eq!(body["output_format"], format);
        assert_eq!(body["usage"]["output_tokens"], 2 * tokens);
        let expected = amount(at(text_tokens(&prompt), "5") + at(2 * tokens, price));
        assert_eq!(
            gw.spent_of_ten(&account).await,
            expected,
            "{model} {size} {quality}"
        );
        assert_eq!(gw.open_holds(&account).await, 0);
        gw.audit_account(&account).await;
    }
}

#[tokio::test]
async fn a_vendor_claiming_a_hundred_times_is_charged_the_bound_of_what_it_drew() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("10").await;
    gw.set_knobs(KnobSettings {
        report_usage: Some(702_400),
        ..Default::default()
    });
    let prompt = "A red bicycle";
    let r = gw
        .post_json(
            GENERATIONS,
            &key,
            &json!({"model": "gpt-image-2", "prompt": prompt, "size": "1024x1024", "quality": "high"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    // Each class cut to its bound: the text to the prompt's estimate (8 tokens for the request,
    // a quarter more), the image to its 7,024 tokens at the size decoded.
    let text_bound = ((estimate(prompt) + 8) * 125).div_ceil(100);
    let expected = amount(at(text_bound, "5") + at(7_024, "30"));
    assert_eq!(gw.spent_of_ten(&account).await, expected);
    let request_id = r.headers["x-request-id"].to_str().unwrap().to_owned();
    let charges = gw
        .get(&format!("/v1/charges/{request_id}"), &key)
        .await
        .json();
    let row = &charges["data"][0];
    assert!(
        row.to_string().contains("cut to the bound"),
        "the capped claim is an anomaly: {row}"
    );
}

#[tokio::test]
async fn an_image_larger_than_asked_is_bounded_by_the_asked_size() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("10").await;
    gw.set_knobs(KnobSettings {
        image_scale: Some(4),
        ..Default::default()
    });
    let prompt = "A tiny house";
    let r = gw
        .post_json(
            GENERATIONS,
            &key,
            &json!({"model": "gpt-image-2", "prompt": prompt, "size": "1024x1024", "quality": "low"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let body = r.json();
    let (_, drawn) = decoded(&body["data"][0]["b64_json"]);
    assert_eq!(
        drawn,
        (4096, 4096),
        "the vendor's image is relayed as drawn"
    );
    assert_eq!(body["size"], "4096x4096");
    // The vendor honestly claims 4096²'s tokens; the bound is 1024²'s at low: 196.
    let expected = amount(at(text_tokens(prompt), "5") + at(196, "30"));
    assert_eq!(gw.spent_of_ten(&account).await, expected);
}

#[tokio::test]
async fn a_refusal_is_relayed_in_openais_shape_and_not_charged() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("10").await;
    let r = gw
        .post_json(
            GENERATIONS,
            &key,
            &json!({"model": "gpt-image-2", "prompt": "something [refuse]"}),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    let error = &r.json()["error"];
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("rejected by the safety system"),
        "{error}"
    );
    assert_eq!(gw.spent_of_ten(&account).await, Amount::ZERO);
    assert_eq!(gw.open_holds(&account).await, 0);
}

/// The SSE events of a reply: (event name, data).
fn events(r: &Reply) -> Vec<(String, Value)> {
    r.text()
        .split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|event| {
            let name = event
                .lines()
                .find_map(|l| l.strip_prefix("event: "))
                .unwrap_or_default()
                .to_owned();
            let data = event
                .lines()
                .find_map(|l| l.strip_prefix("data: "))
                .unwrap();
            (name, serde_json::from_str(data).unwrap())
        })
        .collect()
}

#[tokio::test]
async fn a_stream_sends_sharpening_partial_images_and_is_charged_each() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("10").await;
    let prompt = "A koi pond";
    let r = gw
        .post_json(
            GENERATIONS,
            &key,
            &json!({"model": "gpt-image-2", "prompt": prompt, "size": "1024x1024",
                    "quality": "medium", "stream": true, "partial_images": 2, "n": 2}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let events = events(&r);
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "image_generation.partial_image",
            "image_generation.partial_image",
            "image_generation.completed",
            "image_generation.partial_image",
            "image_generation.partial_image",
            "image_generation.completed",
        ]
    );
    for (_, data) in &events {
        assert_eq!(decoded(&data["b64_json"]).1, (1024, 1024));
    }
    assert_eq!(events[1].1["partial_image_index"], 1);
    // Each image 1,756 tokens at medium and 100 for each partial image.
    let expected = amount(at(text_tokens(prompt), "5") + at(2 * (1_756 + 200), "30"));
    assert_eq!(gw.spent_of_ten(&account).await, expected);
    gw.audit_account(&account).await;
}

#[tokio::test]
async fn a_stream_cut_after_one_partial_image_pays_for_it_alone() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("10").await;
    gw.set_knobs(KnobSettings {
        cut_after_frames: Some(1),
        ..Default::default()
    });
    let prompt = "A windmill";
    let r = gw
        .post_json(
            GENERATIONS,
            &key,
            &json!({"model": "gpt-image-2", "prompt": prompt, "size": "1024x1024",
                    "stream": true, "partial_images": 2}),
        )
        .await;
    assert_eq!(r.status, 200);
    let events = events(&r);
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0].0, "image_generation.partial_image");
    assert_eq!(events[1].0, "error");
    // No usage came: the prompt's local estimate and one partial image.
    let expected = amount(at(estimate(prompt), "5") + at(100, "30"));
    assert_eq!(gw.spent_of_ten(&account).await, expected);
    assert!(
        events[1].1["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&expected.to_string()),
        "{:?}",
        events[1].1
    );
}

#[tokio::test]
async fn a_stream_cut_after_the_first_of_two_images_pays_for_one() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("10").await;
    gw.set_knobs(KnobSettings {
        cut_after_frames: Some(1),
        ..Default::default()
    });
    let prompt = "Two moons";
    let r = gw
        .post_json(
            GENERATIONS,
            &key,
            &json!({"model": "gpt-image-2", "prompt": prompt, "size": "1024x1024",
                    "quality": "high", "stream": true, "n": 2}),
        )
        .await;
    assert_eq!(r.status, 200);
    let events = events(&r);
    assert_eq!(events[0].0, "image_generation.completed");
    assert_eq!(events.last().unwrap().0, "error");
    let expected = amount(at(text_tokens(prompt), "5") + at(7_024, "30"));
    assert_eq!(gw.spent_of_ten(&account).await, expected);
}

/// A form's files: (field, filename, content type, bytes).
type Files<'a> = &'a [(&'a str, &'a str, &'a str, &'a [u8])];

/// A form of text fields and files.
fn form(fields: &[(&str, &str)], files: Files<'_>) -> (String, Vec<u8>) {
    let boundary = "tollgate-images-boundary";
    let mut body = Vec::new();
    for (name, value) in fields {
        body.extend(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .bytes(),
        );
    }
    for (name, filename, content_type, bytes) in files {
        body.extend(format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{filename}\"\r\nContent-Type: {content_type}\r\n\r\n").bytes());
        body.extend_from_slice(bytes);
        body.extend(b"\r\n");
    }
    body.extend(format!("--{boundary}--\r\n").bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

async fn post_form(gw: &TestGateway, key: &str, (content_type, body): (String, Vec<u8>)) -> Reply {
    let auth = format!("Bearer {key}");
    gw.request(
        "POST",
        "/v1/images/edits",
        &[("authorization", &auth), ("content-type", &content_type)],
        body,
    )
    .await
}

#[tokio::test]
async fn an_edit_of_two_images_and_a_mask_pays_for_each_input_by_its_decoded_size() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("10").await;
    let (a, b) = (png(1024, 1024), png(1920, 1080));
    let mask = png(1024, 1024);
    let prompt = "Put both in one room";
    let r = post_form(
        &gw,
        &key,
        form(
            &[
                ("model", "gpt-image-2"),
                ("prompt", prompt),
                ("size", "1024x1024"),
                ("quality", "low"),
            ],
            &[
                ("image[]", "a.png", "image/png", &a),
                ("image[]", "b.png", "image/png", &b),
                ("mask", "mask.png", "image/png", &mask),
            ],
        ),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(decoded(&r.json()["data"][0]["b64_json"]).1, (1024, 1024));
    // Inputs: 1024² one tile (194), 1920×1080 two (323), the mask 194; out 196 at low.
    let expected = amount(at(text_tokens(prompt), "5") + at(194 + 323 + 194, "8") + at(196, "30"));
    assert_eq!(gw.spent_of_ten(&account).await, expected);
}

#[tokio::test]
async fn bad_input_is_refused_by_name_before_the_vendor_and_holds_nothing() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("10").await;
    let json_cases = [
        (
            json!({"model": "gpt-image-2", "prompt": "x", "size": "1000x1000"}),
            "size",
        ),
        (
            json!({"model": "gpt-image-1.5", "prompt": "x", "size": "2048x2048"}),
            "size",
        ),
        (json!({"model": "gpt-image-2", "prompt": "x", "n": 5}), "n"),
        (
            json!({"model": "gpt-image-2", "prompt": "x", "style": "vivid"}),
            "style",
        ),
        (json!({"model": "gpt-image-2"}), "prompt"),
        (
            json!({"model": "gpt-image-2", "prompt": "x", "response_format": "url"}),
            "response_format",
        ),
    ];
    for (body, field) in json_cases {
        let r = gw.post_json(GENERATIONS, &key, &body).await;
        assert_eq!(r.status, 400, "{body}: {}", r.text());
        assert_eq!(r.json()["error"]["param"], field, "{body}");
    }
    let unknown = gw
        .post_json(
            GENERATIONS,
            &key,
            &json!({"model": "dall-e-9", "prompt": "x"}),
        )
        .await;
    assert_eq!(unknown.status, 400, "{}", unknown.text());
    assert_eq!(unknown.json()["error"]["code"], "model_not_found");

    let image = png(1024, 1024);
    // A PNG header declaring 50,000 × 50,000 pixels: refused from its header.
    let mut bomb = image[..33].to_vec();
    bomb[16..20].copy_from_slice(&50_000u32.to_be_bytes());
    bomb[20..24].copy_from_slice(&50_000u32.to_be_bytes());
    let svg = br#"<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>"#;
    let form_cases: [(Files<'_>, &str); 5] = [
        (
            &[("image", "a.png", "image/png", b"not an image at all")],
            "image",
        ),
        (&[("image", "a.svg", "image/svg+xml", svg)], "image"),
        (&[("image", "bomb.png", "image/png", &bomb)], "image"),
        (
            &[
                ("image", "a.png", "image/png", &image),
                ("mask", "m.png", "image/png", &png(512, 512)),
            ],
            "mask",
        ),
        (&[], "image"),
    ];
    for (files, field) in form_cases {
        let r = post_form(
            &gw,
            &key,
            form(&[("model", "gpt-image-2"), ("prompt", "x")], files),
        )
        .await;
        assert_eq!(r.status, 400, "{field}: {}", r.text());
        assert_eq!(r.json()["error"]["param"], field, "{}", r.text());
    }
    // Variations: dall-e-2's alone; a model of another family says it makes none.
    let r = gw
        .request(
            "POST",
            "/v1/images/variations",
            &[
                ("authorization", &format!("Bearer {key}")),
                (
                    "content-type",
                    &form(
                        &[("model", "gpt-image-2")],
                        &[("image", "a.png", "image/png", &image)],
                    )
                    .0,
                ),
            ],
            form(
                &[("model", "gpt-image-2")],
                &[("image", "a.png", "image/png", &image)],
            )
            .1,
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["error"]["param"], "model");
    assert!(r.text().contains("/v1/images/edits"), "{}", r.text());
    // 60 MB of image: refused as too large.
    let mut big = png(64, 64);
    big.resize(60_000_000, 0);
    let r = post_form(
        &gw,
        &key,
        form(
            &[("model", "gpt-image-2"), ("prompt", "x")],
            &[("image", "big.png", "image/png", &big)],
        ),
    )
    .await;
    assert_eq!(r.status, 413, "{}", r.text());

    assert_eq!(gw.calls("POST /v1/images/generations"), 0);
    assert_eq!(gw.calls("POST /v1/images/edits"), 0);
    assert_eq!(gw.spent_of_ten(&account).await, Amount::ZERO);
    assert_eq!(gw.open_holds(&account).await, 0);
}

#[tokio::test]
async fn a_keys_images_per_minute_count_what_is_asked_and_give_back_what_is_not_charged() {
    // Within one minute window (the quota's).
    common::fresh_minute(20).await;
    let gw = TestGateway::with_config(CONFIG).await;
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
    let ask = |n: u32, prompt: &'static str| json!({"model": "gpt-image-2", "prompt": prompt, "size": "1024x1024", "quality": "low", "n": n});
    // A refusal by the vendor is not charged: its two images are given back.
    let refused = gw.post_json(GENERATIONS, &key, &ask(2, "x [refuse]")).await;
    assert_eq!(refused.status, 400, "{}", refused.text());
    let first = gw.post_json(GENERATIONS, &key, &ask(2, "two")).await;
    assert_eq!(first.status, 200, "{}", first.text());
    let calls = gw.calls("POST /v1/images/generations");
    let second = gw.post_json(GENERATIONS, &key, &ask(2, "two more")).await;
    assert_eq!(second.status, 429, "{}", second.text());
    let error = &second.json()["error"];
    assert_eq!(error["code"], "rate_limit_exceeded");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("3 images per minute"),
        "{error}"
    );
    assert_eq!(gw.calls("POST /v1/images/generations"), calls, "never sent");
    let one = gw.post_json(GENERATIONS, &key, &ask(1, "one")).await;
    assert_eq!(one.status, 200, "{}", one.text());
    assert_eq!(gw.open_holds(&account).await, 0);
}

/// A price in nano-units, from its decimal text (`"0.016"`).
fn price(text: &str) -> Amount {
    amount(at(1_000_000, text))
}

/// The path and query of one of the gateway's links.
fn path_of(link: &str) -> String {
    let rest = link.split_once("://").unwrap().1;
    rest[rest.find('/').unwrap()..].to_owned()
}

#[tokio::test]
async fn dall_e_is_charged_by_the_picture_of_each_size_and_quality() {
    let gw = TestGateway::with_config(CONFIG).await;
    // (model, size, quality, n, price of one): the table's row, or `per_image` where the table
    // names no such size (dall-e-2's 1024², left out of this test's table).
    let cases = [
        ("dall-e-3", None, None, 1, "0.04", (1024, 1024)),
        (
            "dall-e-3",
            Some("1792x1024"),
            Some("standard"),
            1,
            "0.08",
            (1792, 1024),
        ),
        (
            "dall-e-3",
            Some("1024x1792"),
            Some("hd"),
            1,
            "0.12",
            (1024, 1792),
        ),
        (
            "dall-e-3",
            Some("1024x1024"),
            Some("hd"),
            1,
            "0.08",
            (1024, 1024),
        ),
        ("dall-e-2", Some("256x256"), None, 3, "0.016", (256, 256)),
        (
            "dall-e-2",
            Some("512x512"),
            Some("standard"),
            1,
            "0.018",
            (512, 512),
        ),
        ("dall-e-2", None, None, 2, "0.02", (1024, 1024)),
    ];
    for (model, size, quality, n, each, drawn) in cases {
        let (account, key) = gw.account("10").await;
        let mut body = json!({"model": model, "prompt": "A lighthouse", "n": n,
                              "response_format": "b64_json"});
        if let Some(size) = size {
            body["size"] = json!(size);
        }
        if let Some(quality) = quality {
            body["quality"] = json!(quality);
        }
        let r = gw.post_json(GENERATIONS, &key, &body).await;
        assert_eq!(r.status, 200, "{body}: {}", r.text());
        let answer = r.json();
        let data = answer["data"].as_array().unwrap();
        assert_eq!(data.len(), n as usize);
        for image in data {
            assert_eq!(decoded(&image["b64_json"]).1, drawn, "{body}");
            assert_eq!(image.get("url"), None);
        }
        assert_eq!(
            data[0].get("revised_prompt").is_some(),
            model == "dall-e-3",
            "{answer}"
        );
        assert_eq!(answer.get("usage"), None, "dall-e reports no usage");
        let expected = Amount::from_nanos(price(each).nanos() * i64::from(n));
        assert_eq!(gw.spent_of_ten(&account).await, expected, "{body}");
        assert_eq!(gw.open_holds(&account).await, 0);
        gw.audit_account(&account).await;
        let request_id = r.headers["x-request-id"].to_str().unwrap().to_owned();
        let charges = gw
            .get(&format!("/v1/charges/{request_id}"), &key)
            .await
            .text();
        let (w, h) = drawn;
        assert!(
            charges.contains(&format!("images decoded: {w}x{h}")),
            "the explanation names the decoded sizes: {charges}"
        );
    }
}

#[tokio::test]
async fn a_url_answer_is_the_gateways_signed_link_streamed_from_the_store() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("10").await;
    // dall-e answers by link when not told otherwise.
    let r = gw
        .post_json(
            GENERATIONS,
            &key,
            &json!({"model": "dall-e-2", "prompt": "Two boats", "n": 2, "size": "512x512"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let answer = r.json();
    let links: Vec<String> = answer["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|image| {
            assert_eq!(image.get("b64_json"), None, "{image}");
            image["url"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(links.len(), 2);
    assert_ne!(links[0], links[1]);
    for link in &links {
        assert!(
            link.starts_with(&format!("http://{}/v1/media/images/img_", gw.addr)),
            "the gateway's own link, never the vendor's: {link}"
        );
        assert!(!link.contains("sim.invalid"), "{link}");
        // No key: the link is the credential.
        let got = gw.request("GET", &path_of(link), &[], Vec::new()).await;
        assert_eq!(got.status, 200, "{}", got.text());
        assert_eq!(got.headers["content-type"], "image/png");
        let size = imagesize::blob_size(&got.body).unwrap();
        assert_eq!((size.width, size.height), (512, 512));
        assert_eq!(
            got.headers["content-length"].to_str().unwrap(),
            got.body.len().to_string()
        );
    }
    assert_eq!(
        gw.spent_of_ten(&account).await,
        Amount::from_nanos(2 * price("0.018").nanos())
    );

    // Altered, it opens nothing: another id, another expiry, no signature.
    let path = path_of(&links[0]);
    let other_id = path.replacen("img_", "img_0", 1);
    let (before, signature) = path.split_once("&signature=").unwrap();
    let later = before.replace("expires=", "expires=9");
    for bad in [
        other_id,
        format!("{later}&signature={signature}"),
        before.to_owned(),
    ] {
        let got = gw.request("GET", &bad, &[], Vec::new()).await;
        assert_eq!(got.status, 403, "{bad}: {}", got.text());
        assert_eq!(got.json()["error"]["code"], "invalid_media_link");
    }
    // Pruned once lapsed: the link then finds nothing. (On a shared PostgreSQL database other
    // tests' images go too.)
    let far = tollgate_journal::clock::unix_now() + 7_200;
    assert!(gw.store.prune_media(far).await.unwrap() >= 2);
    assert_eq!(gw.request("GET", &path, &[], Vec::new()).await.status, 404);

    // A GPT image model answers inline only, as OpenAI's.
    let r = gw
        .post_json(
            GENERATIONS,
            &key,
            &json!({"model": "gpt-image-2", "prompt": "x", "response_format": "url"}),
        )
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["param"], "response_format");
}

#[tokio::test]
async fn an_image_link_lapses_after_its_time() {
    let gw = TestGateway::with_config(&format!("{CONFIG}\n[media]\nimage_ttl_seconds = 1\n")).await;
    let (_, key) = gw.account("10").await;
    let r = gw
        .post_json(
            GENERATIONS,
            &key,
            &json!({"model": "dall-e-3", "prompt": "A quick one"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let path = path_of(r.json()["data"][0]["url"].as_str().unwrap());
    tokio::time::sleep(std::time::Duration::from_millis(2_100)).await;
    let got = gw.request("GET", &path, &[], Vec::new()).await;
    assert_eq!(got.status, 403, "{}", got.text());
    assert!(got.text().contains("expired"), "{}", got.text());
}

#[tokio::test]
async fn dall_e_2_varies_and_edits_one_square_png() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("10").await;
    let square = png(512, 512);
    let send = |path: &'static str,
                fields: Vec<(&'static str, &'static str)>,
                files: Vec<(&'static str, &'static str, &'static str, Vec<u8>)>| {
        let gw = &gw;
        let auth = format!("Bearer {key}");
        async move {
            let files: Vec<(&str, &str, &str, &[u8])> = files
                .iter()
                .map(|(a, b, c, d)| (*a, *b, *c, d.as_slice()))
                .collect();
            let (content_type, body) = form(&fields, &files);
            gw.request(
                "POST",
                path,
                &[("authorization", &auth), ("content-type", &content_type)],
                body,
            )
            .await
        }
    };
    let r = send(
        "/v1/images/variations",
        vec![
            ("model", "dall-e-2"),
            ("n", "2"),
            ("size", "256x256"),
            ("response_format", "b64_json"),
        ],
        vec![("image", "a.png", "image/png", square.clone())],
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let data = r.json()["data"].as_array().unwrap().clone();
    assert_eq!(data.len(), 2);
    assert_eq!(decoded(&data[0]["b64_json"]).1, (256, 256));
    assert_eq!(gw.calls("POST /v1/images/variations"), 1);
    let two = Amount::from_nanos(2 * price("0.016").nanos());
    assert_eq!(gw.spent_of_ten(&account).await, two);

    let r = send(
        "/v1/images/edits",
        vec![
            ("model", "dall-e-2"),
            ("prompt", "Add a moon"),
            ("size", "512x512"),
        ],
        vec![
            ("image", "a.png", "image/png", square.clone()),
            ("mask", "m.png", "image/png", png(512, 512)),
        ],
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(
        r.json()["data"][0]["url"]
            .as_str()
            .unwrap()
            .contains("/v1/media/images/")
    );
    assert_eq!(
        gw.spent_of_ten(&account).await,
        Amount::from_nanos(two.nanos() + price("0.018").nanos())
    );

    // dall-e-2's inputs: one square PNG; a variation has no prompt; dall-e-3 neither edits
    // nor varies.
    let jpeg_head = b"\xff\xd8\xff\xe0\0\x10JFIF\0\x01\x01\0\0\x01\0\x01\0\0\xff\xc0\0\x11\x08\x02\0\x02\0\x03\x01\x22\0\x02\x11\x01\x03\x11\x01\xff\xd9".to_vec();
    let refused = [
        (
            "/v1/images/variations",
            vec![("model", "dall-e-2")],
            vec![("image", "w.png", "image/png", png(640, 480))],
            "image",
        ),
        (
            "/v1/images/variations",
            vec![("model", "dall-e-2")],
            vec![("image", "j.jpg", "image/jpeg", jpeg_head)],
            "image",
        ),
        (
            "/v1/images/variations",
            vec![("model", "dall-e-2"), ("prompt", "x")],
            vec![("image", "a.png", "image/png", square.clone())],
            "prompt",
        ),
        (
            "/v1/images/variations",
            vec![("model", "dall-e-3")],
            vec![("image", "a.png", "image/png", square.clone())],
            "model",
        ),
        (
            "/v1/images/edits",
            vec![("model", "dall-e-3"), ("prompt", "x")],
            vec![("image", "a.png", "image/png", square.clone())],
            "model",
        ),
        (
            "/v1/images/edits",
            vec![("model", "dall-e-2"), ("prompt", "x")],
            vec![
                ("image[]", "a.png", "image/png", square.clone()),
                ("image[]", "b.png", "image/png", square.clone()),
            ],
            "image",
        ),
    ];
    for (path, fields, files, field) in refused {
        let r = send(path, fields, files).await;
        assert_eq!(r.status, 400, "{path} {field}: {}", r.text());
        assert_eq!(r.json()["error"]["param"], field, "{}", r.text());
    }
    assert_eq!(gw.calls("POST /v1/images/variations"), 1);
    assert_eq!(gw.open_holds(&account).await, 0);
    gw.audit_account(&account).await;
}

#[tokio::test]
async fn a_picture_drawn_larger_than_asked_is_charged_as_asked_and_recorded() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("10").await;
    gw.set_knobs(KnobSettings {
        image_scale: Some(2),
        ..Default::default()
    });
    let r = gw
        .post_json(
            GENERATIONS,
            &key,
            &json!({"model": "dall-e-2", "prompt": "Bigger", "size": "256x256",
                    "response_format": "b64_json"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(decoded(&r.json()["data"][0]["b64_json"]).1, (512, 512));
    assert_eq!(gw.spent_of_ten(&account).await, price("0.016"));
    let request_id = r.headers["x-request-id"].to_str().unwrap().to_owned();
    let charges = gw
        .get(&format!("/v1/charges/{request_id}"), &key)
        .await
        .text();
    assert!(charges.contains("charged as 256x256"), "{charges}");
}

#[tokio::test]
async fn dall_e_refuses_what_it_does_not_take_before_the_vendor() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("10").await;
    let cases = [
        (json!({"model": "dall-e-3", "prompt": "x", "n": 2}), "n"),
        (
            json!({"model": "dall-e-3", "prompt": "x", "quality": "high"}),
            "quality",
        ),
        (
            json!({"model": "dall-e-3", "prompt": "x", "stream": true}),
            "stream",
        ),
        (
            json!({"model": "dall-e-3", "prompt": "x", "size": "auto"}),
            "size",
        ),
        (
            json!({"model": "dall-e-3", "prompt": "x", "background": "transparent"}),
            "background",
        ),
        (
            json!({"model": "dall-e-2", "prompt": "x", "quality": "hd"}),
            "quality",
        ),
        (
            json!({"model": "dall-e-2", "prompt": "x", "style": "vivid"}),
            "style",
        ),
        (json!({"model": "dall-e-2", "prompt": "x", "n": 5}), "n"),
        (
            json!({"model": "dall-e-2", "prompt": "x".repeat(1_001)}),
            "prompt",
        ),
    ];
    for (body, field) in cases {
        let r = gw.post_json(GENERATIONS, &key, &body).await;
        assert_eq!(r.status, 400, "{body}: {}", r.text());
        assert_eq!(r.json()["error"]["param"], field, "{body}");
    }
    assert_eq!(gw.calls("POST /v1/images/generations"), 0);
    assert_eq!(gw.open_holds(&account).await, 0);
}

/// The adversary: an insider who can write the database (not the link key). A kept image's
/// bytes rewritten in `media_chunks` never reach the client whole: the link signs their digest,
/// and the answer, checking what it streamed, cuts the stream before its last chunk.
#[tokio::test]
async fn an_image_rewritten_in_the_database_is_not_served() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (_, key) = gw.account("10").await;
    let r = gw
        .post_json(
            GENERATIONS,
            &key,
            &json!({"model": "dall-e-2", "prompt": "Kept", "size": "256x256"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let path = path_of(r.json()["data"][0]["url"].as_str().unwrap());
    assert!(path.contains("&digest="), "{path}");
    let id = path
        .trim_start_matches("/v1/media/images/")
        .split_once('.')
        .unwrap()
        .0
        .to_owned();
    let honest = gw.request("GET", &path, &[], Vec::new()).await;
    assert_eq!(honest.status, 200);

    // Another picture in its place, as long as the first.
    let mut forged = honest.body.to_vec();
    let last = forged.len() - 20;
    forged[last] ^= 0xff;
    sqlx::any::install_default_drivers();
    let db = sqlx::AnyPool::connect(&gw.database_url).await.unwrap();
    let done = sqlx::query("UPDATE media_chunks SET data = $1 WHERE media_id = $2")
        .bind(forged)
        .bind(&id)
        .execute(&db)
        .await
        .unwrap();
    assert_eq!(done.rows_affected(), 1);

    // Read as a client would: the head says 200 and the length, the body never comes whole.
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut socket = tokio::net::TcpStream::connect(gw.addr).await.unwrap();
    socket
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
    let mut read = Vec::new();
    let _ = socket.read_to_end(&mut read).await;
    let text = String::from_utf8_lossy(&read);
    let head_end = text.find("\r\n\r\n").map_or(read.len(), |i| i + 4);
    assert!(
        read.len() - head_end < honest.body.len(),
        "the altered image was served whole: {} of {} bytes",
        read.len() - head_end,
        honest.body.len()
    );
    // Its digest altered in the link too: the signature no longer matches.
    let digest = path
        .split("digest=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap();
    let relinked = path.replace(digest, &"0".repeat(32));
    assert_eq!(
        gw.request("GET", &relinked, &[], Vec::new()).await.status,
        403
    );
}
