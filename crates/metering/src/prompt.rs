//! A prompt's local estimate (docs/decisions.md, "Native generation" and "Bounded settlement"):
//! what a native generation request holds for its input. Text and structure are counted with
//! `cl100k_base`, at least one token per 8 bytes, and a margin — every field the request sends
//! that is not media, whatever its kind: a part kind or field this crate does not model
//! (`executableCode`, `codeExecutionResult`, …) counts as its JSON, as do `responseSchema` and
//! every other generation setting, so a client cannot put the bulk of a prompt where it is not
//! counted. Inline images, audio and video are measured from their bytes
//! (`tollgate_probe::media`) at the vendor's rates (`tollgate_native_genai::media`), a video at
//! the frame rate its part asks for (`videoMetadata.fps`); a part the gateway cannot measure — a
//! `fileData` URI, bytes it cannot read, a `cachedContent` the vendor adds — is the client's word
//! only, so the hold then covers the model's whole input limit.

use crate::tokens::estimate_vendor_tokens;
use tollgate_native_genai::media::{self, Media};
use tollgate_native_genai::{Content, GenerateContentRequest, Part};
use tollgate_probe::media::Measured;

/// Tokens the vendor adds around each content (role and turn markers), and once per request.
pub const TOKENS_PER_CONTENT: u64 = 4;
/// See [`TOKENS_PER_CONTENT`].
pub const TOKENS_PER_REQUEST: u64 = 8;
/// The local count of text is scaled by this (per cent) before it is held: `cl100k_base` counts
/// fewer tokens than the vendor's tokenizer for many scripts, and a hold below the settlement
/// lets concurrent requests overdraw (`docs/decisions.md`, "Native generation"). Measured media is
/// held at the vendor's own rates, without it.
pub const PROMPT_MARGIN_PERCENT: u64 = 125;

/// What a prompt holds (`docs/decisions.md`, "Bounded settlement"): a bound on what the vendor
/// may charge for it never comes from a quantity the client controls unless the gateway
/// measured it itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptEstimate {
    /// Text and structure — every text, function call and response, tool declarations and
    /// configuration as JSON, text documents inline, the vendor's turn markers — estimated
    /// (`crate::tokens::estimate_vendor_tokens`: `cl100k_base`, at least one token per 8 bytes)
    /// with the margin of [`PROMPT_MARGIN_PERCENT`].
    pub text: u64,
    /// Inline images, audio and video, measured from their bytes (`tollgate_probe::media`) at
    /// the vendor's rates (`tollgate_native_genai::media`).
    pub media: u64,
    /// The part of [`media`](Self::media) that is heard — audio, and a video's sound at the
    /// vendor's audio rate — and the part that is seen — images, and a video whole: a model
    /// priced by token class (`crate::text::Generation`) bounds each input modality by its own.
    /// A video counts in both, so their sum may pass `media` by its sound.
    pub media_by: MediaBy,
    /// The first part the gateway cannot measure, by its field: a `fileData` URI (the vendor
    /// fetches what the gateway never sees), inline bytes it cannot read, or `cachedContent`
    /// (the vendor adds a cache the gateway never saw to the prompt). Its size is the client's
    /// word only, so the hold covers the model's whole input limit.
    pub unmeasured: Option<String>,
}

/// Measured media by how the vendor counts it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MediaBy {
    /// Audio tokens.
    pub audio: u64,
    /// Image and video tokens.
    pub image: u64,
}

impl PromptEstimate {
    /// The input tokens to hold: what was measured, or `input_limit` — the most the model takes,
    /// so the most the vendor can count — when a part could not be measured.
    pub fn hold_tokens(&self, input_limit: u64) -> u64 {
        let measured = self.local();
        match self.unmeasured {
            Some(_) => measured.max(input_limit),
            None => measured,
        }
    }

    /// The local count of the prompt (what settles when the upstream reports no usage).
    pub fn local(&self) -> u64 {
        self.text.saturating_add(self.media)
    }
}

/// The prompt of `request`, counted and measured. Decodes and reads every inline media part:
/// for a large request, call it on the blocking pool ([`crate::MEASURE_ON_BLOCKING_POOL`]).
pub fn estimate_prompt(request: &GenerateContentRequest) -> PromptEstimate {
    let contents: Vec<(String, &Content)> = request
        .system_instruction
        .iter()
        .map(|c| ("systemInstruction".to_owned(), c))
        .chain(
            request
                .contents
                .iter()
                .enumerate()
                .map(|(i, c)| (format!("contents[{i}]"), c)),
        )
        .collect();
    let mut estimate = PromptEstimate::default();
    let mut text: u64 = 0;
    for (path, content) in &contents {
        for (j, part) in content.parts.iter().enumerate() {
            let field = format!("{path}.parts[{j}]");
            text = text.saturating_add(part_text_tokens(part));
            match part_media(part) {
                PartMedia::None => {}
                PartMedia::Text(tokens) => text = text.saturating_add(tokens),
                PartMedia::Measured(tokens, by) => {
                    estimate.media = estimate.media.saturating_add(tokens);
                    estimate.media_by.audio = estimate.media_by.audio.saturating_add(by.audio);
                    estimate.media_by.image = estimate.media_by.image.saturating_add(by.image);
                }
                PartMedia::Unmeasured(what) => {
                    estimate
                        .unmeasured
                        .get_or_insert_with(|| format!("{field}.{what}"));
                }
            }
        }
    }
    text = text.saturating_add(TOKENS_PER_CONTENT.saturating_mul(contents.len() as u64));
    for (_, content) in &contents {
        text = text.saturating_add(json_tokens(&content.extra));
    }
    let tools = request.tools.iter().flatten();
    for value in tools.chain(request.tool_config.iter()) {
        text = text.saturating_add(json_tokens(value));
    }
    // Every other field the vendor may bill as input: the answer's schema and every generation
    // setting this crate does not model, safety settings, fields it does not know at all.
    if let Some(config) = &request.generation_config {
        text = text
            .saturating_add(json_tokens(&config.response_schema))
            .saturating_add(json_tokens(&config.extra));
    }
    text = text
        .saturating_add(json_tokens(&request.safety_settings))
        .saturating_add(json_tokens(&request.extra));
    if request.cached_content.is_some() {
        estimate
            .unmeasured
            .get_or_insert_with(|| "cachedContent".to_owned());
    }
    estimate.text = text
        .saturating_add(TOKENS_PER_REQUEST)
        .saturating_mul(PROMPT_MARGIN_PERCENT)
        .div_ceil(100);
    estimate
}

/// The text tokens of a part: its text, function call or function response, thought signature,
/// and every field this crate does not model — another part kind (`executableCode`,
/// `codeExecutionResult`, …), a media part's settings — as its JSON. Only the bytes of inline
/// media are left to [`part_media`].
fn part_text_tokens(part: &Part) -> u64 {
    let mut tokens = part.text.as_deref().map_or(0, estimate_vendor_tokens);
    tokens = tokens
        .saturating_add(json_tokens(&part.function_call))
        .saturating_add(json_tokens(&part.function_response))
        .saturating_add(
            part.thought_signature
                .as_deref()
                .map_or(0, estimate_vendor_tokens),
        )
        .saturating_add(json_tokens(&part.extra));
    if let Some(blob) = &part.inline_data {
        tokens = tokens.saturating_add(json_tokens(&blob.extra));
    }
    if let Some(file) = &part.file_data {
        tokens = tokens.saturating_add(json_tokens(&file.extra));
    }
    tokens
}

/// The estimate of a value the request sends as JSON (nothing for an absent or empty one).
fn json_tokens<T: JsonField>(value: &T) -> u64 {
    if value.is_absent() {
        return 0;
    }
    estimate_vendor_tokens(&serde_json::to_string(value).unwrap_or_default())
}

/// A field of the request, sent as JSON unless it is absent or empty.
trait JsonField: serde::Serialize {
    fn is_absent(&self) -> bool;
}

impl<T: serde::Serialize> JsonField for Option<T> {
    fn is_absent(&self) -> bool {
        self.is_none()
    }
}

impl JsonField for serde_json::Map<String, serde_json::Value> {
    fn is_absent(&self) -> bool {
        self.is_empty()
    }
}

impl JsonField for serde_json::Value {
    fn is_absent(&self) -> bool {
        self.is_null()
    }
}

/// What a part's media comes to.
enum PartMedia {
    /// No media.
    None,
    /// Inline text (a `text/*` or JSON document): tokens to count as text.
    Text(u64),
    /// Measured media: its tokens at the vendor's rates, and how they split.
    Measured(u64, MediaBy),
    /// Media the gateway cannot measure; the name of the part's field that holds it.
    Unmeasured(&'static str),
}

fn part_media(part: &Part) -> PartMedia {
    if part.file_data.is_some() {
        return PartMedia::Unmeasured("fileData");
    }
    let Some(blob) = &part.inline_data else {
        return PartMedia::None;
    };
    use base64::Engine as _;
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(blob.data.trim()) else {
        return PartMedia::Unmeasured("inlineData");
    };
    let mime = blob.mime_type.trim().to_ascii_lowercase();
    if mime.starts_with("text/") || mime == "application/json" {
        return match std::str::from_utf8(&bytes) {
            Ok(text) => PartMedia::Text(estimate_vendor_tokens(text)),
            Err(_) => PartMedia::Unmeasured("inlineData"),
        };
    }
    match tollgate_probe::media::measure(&mime, &bytes) {
        Some(Measured::Video { seconds }) => match media::fps_multiple(part.video_fps()) {
            Some(fps) => {
                let tokens = media::tokens(Media::VideoSeconds(seconds)).saturating_mul(fps);
                let sound = media::tokens(Media::AudioSeconds(seconds));
                PartMedia::Measured(
                    tokens,
                    MediaBy {
                        audio: sound,
                        image: tokens,
                    },
                )
            }
            None => PartMedia::Unmeasured("videoMetadata.fps"),
        },
        Some(Measured::Image { width, height }) => {
            let tokens = media::tokens(Media::Image { width, height });
            PartMedia::Measured(
                tokens,
                MediaBy {
                    audio: 0,
                    image: tokens,
                },
            )
        }
        Some(Measured::Audio { seconds }) => {
            let tokens = media::tokens(Media::AudioSeconds(seconds));
            PartMedia::Measured(
                tokens,
                MediaBy {
                    audio: tokens,
                    image: 0,
                },
            )
        }
        None => PartMedia::Unmeasured("inlineData"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::count_text;
    use serde_json::json;

    fn request(json: &str) -> GenerateContentRequest {
        serde_json::from_str(json).unwrap()
    }

    /// The adversary: a client whose media the gateway cannot see or read. What it sends is
    /// its word only, so the hold covers the model's whole input.
    #[test]
    fn what_the_gateway_cannot_measure_holds_the_whole_input_limit() {
        let by_uri = request(
            r#"{"contents":[{"role":"user","parts":[{"text":"describe"},
                {"fileData":{"mimeType":"video/mp4","fileUri":"https://example.com/v.mp4"}}]}]}"#,
        );
        let estimate = estimate_prompt(&by_uri);
        assert_eq!(
            estimate.unmeasured.as_deref(),
            Some("contents[0].parts[1].fileData")
        );
        assert_eq!(estimate.hold_tokens(1_000_000), 1_000_000);
        let unreadable = request(
            r#"{"contents":[{"parts":[{"inlineData":{"mimeType":"image/png","data":"bm90IGFuIGltYWdl"}}]}]}"#,
        );
        let estimate = estimate_prompt(&unreadable);
        assert_eq!(
            estimate.unmeasured.as_deref(),
            Some("contents[0].parts[0].inlineData")
        );
        assert_eq!(estimate.hold_tokens(32_768), 32_768);
    }

    #[test]
    fn text_is_counted_with_the_margin() {
        let estimate = estimate_prompt(&request(
            r#"{"contents":[{"parts":[{"text":"hello world"}]}]}"#,
        ));
        // (2 tokens + 4 for the content + 8 for the request) × 125 %, rounded up.
        assert_eq!(estimate.text, 18);
        assert_eq!(estimate.media, 0);
        assert_eq!(estimate.unmeasured, None);
        assert_eq!(estimate.hold_tokens(1_000_000), 18);
    }

    /// The adversary: a client who writes text that `cl100k_base` counts as far fewer tokens
    /// than the vendor will — runs of one character. Whatever the count, the settlement's bound
    /// (twice the hold) covers the simulator's count of the same text, `ceil(bytes / 4)`.
    #[test]
    fn text_made_cheap_to_count_is_held_for_its_bytes() {
        for c in [' ', '\n', '\t', '=', '-', '#', 'a', '0'] {
            for len in [1usize, 7, 64, 128, 1_000, 65_536, 1 << 20] {
                let text: String = std::iter::repeat_n(c, len).collect();
                let body = serde_json::json!({"contents": [{"parts": [{"text": text}]}]});
                let estimate = estimate_prompt(&serde_json::from_value(body).unwrap());
                let vendor = (len as u64).div_ceil(4) + TOKENS_PER_CONTENT + TOKENS_PER_REQUEST;
                assert!(
                    2 * estimate.hold_tokens(u64::MAX) >= vendor,
                    "{len} × {c:?}: held {}, the vendor counts {vendor}",
                    estimate.text
                );
            }
        }
    }

    /// The floor holds only what `cl100k_base` counts at more than 8 bytes a token: ordinary
    /// text is held at its count, as before.
    #[test]
    fn ordinary_text_is_held_at_its_count() {
        let texts = [
            "The quick brown fox jumps over the lazy dog. It was the best of times. ".repeat(40),
            "    fn main() {\n        let x = compute(1, 2);\n    }\n".repeat(40),
            "{\"id\": 12345, \"name\": \"widget\", \"tags\": [\"a\", \"b\"]}, ".repeat(40),
            "我们的网关为每个请求计费，每一笔费用都可以核对。".repeat(40),
            "Шлюз взимает плату за каждый запрос. ".repeat(40),
        ];
        for text in texts {
            let body = serde_json::json!({"contents": [{"parts": [{"text": text}]}]});
            let estimate = estimate_prompt(&serde_json::from_value(body).unwrap());
            let counted = count_text(&text) + TOKENS_PER_CONTENT + TOKENS_PER_REQUEST;
            assert_eq!(
                estimate.text,
                (counted * PROMPT_MARGIN_PERCENT).div_ceil(100),
                "{text:.40}"
            );
        }
    }

    /// Issue 42 item 1. The adversary: a client who puts the bulk of its prompt in a part kind
    /// or a field the gateway does not model — an `executableCode` or `codeExecutionResult`
    /// part, a kind invented tomorrow, the answer's schema, a setting. The vendor counts each as
    /// text; the hold counts its JSON, so twice the hold covers the simulator's count
    /// (`ceil(bytes / 4)` of the compact JSON) whatever the shape.
    #[test]
    fn every_part_kind_and_field_is_counted() {
        let bulk = "x = 1\n".repeat(120_000); // 840 KB, 6 bytes a line: cheap to cl100k_base
        let shapes = [
            json!({"contents": [{"parts": [{"executableCode": {"language": "PYTHON", "code": bulk}}]}]}),
            json!({"contents": [{"parts": [{"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": bulk}}]}]}),
            json!({"contents": [{"parts": [{"somePartKindOfTomorrow": {"payload": bulk}}]}]}),
            json!({"contents": [{"parts": [{"text": "hi"}], "someContentField": bulk}]}),
            json!({"contents": [{"parts": [{"text": "hi"}]}],
                   "generationConfig": {"responseMimeType": "application/json",
                                        "responseSchema": {"type": "STRING", "description": bulk}}}),
            json!({"contents": [{"parts": [{"text": "hi"}]}],
                   "generationConfig": {"responseJsonSchema": {"description": bulk}}}),
            json!({"contents": [{"parts": [{"text": "hi"}]}], "someRequestField": bulk}),
            json!({"contents": [{"parts": [{"text": "hi", "thoughtSignature": bulk}]}]}),
            json!({"contents": [{"parts": [{"inlineData": {"mimeType": "text/plain", "data": "aGk=", "note": bulk}}]}]}),
        ];
        for body in shapes {
            let bytes = body.to_string().len() as u64;
            let estimate = estimate_prompt(&serde_json::from_value(body.clone()).unwrap());
            assert_eq!(estimate.unmeasured, None, "{body:.80}");
            assert!(
                2 * estimate.hold_tokens(u64::MAX) >= bytes.div_ceil(4),
                "{body:.80}: held {}, the vendor counts up to {}",
                estimate.text,
                bytes.div_ceil(4)
            );
        }
    }

    /// A `cachedContent` adds a cache the gateway never saw to the prompt: the client's word
    /// only, so the hold covers the model's input limit.
    #[test]
    fn cached_content_holds_the_whole_input_limit() {
        let estimate = estimate_prompt(&request(
            r#"{"contents":[{"parts":[{"text":"and now?"}]}],"cachedContent":"cachedContents/abc"}"#,
        ));
        assert_eq!(estimate.unmeasured.as_deref(), Some("cachedContent"));
        assert_eq!(estimate.hold_tokens(1_048_576), 1_048_576);
    }

    /// A video sampled at more than one frame a second is counted for every frame.
    #[test]
    fn a_video_sampled_faster_is_held_for_its_frames() {
        use base64::Engine as _;
        let mp4 = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../probe/tests/fixtures/video_12s.mp4"
        ))
        .unwrap();
        let data = base64::engine::general_purpose::STANDARD.encode(&mp4);
        let at = |fps: serde_json::Value| {
            let mut part = json!({"inlineData": {"mimeType": "video/mp4", "data": data}});
            if !fps.is_null() {
                part["videoMetadata"] = json!({"fps": fps});
            }
            estimate_prompt(
                &serde_json::from_value(json!({"contents": [{"parts": [part]}]})).unwrap(),
            )
        };
        let one = at(serde_json::Value::Null);
        assert!(one.media > 0);
        assert_eq!(at(json!(24)).media, 24 * one.media);
        assert_eq!(at(json!(0.25)).media, one.media);
        assert_eq!(
            at(json!("fast")).unmeasured.as_deref(),
            Some("contents[0].parts[0].videoMetadata.fps")
        );
    }
}
