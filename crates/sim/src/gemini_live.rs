//! The simulated Gemini Live vendor: Google's `BidiGenerateContent` socket, speaking its
//! messages as Google does — JSON in binary frames, `setupComplete` after the `setup`, the
//! model's turn as `serverContent` parts of PCM16 at 24 kHz (its synthesizer's voice) or text,
//! a tool call when the turn names a declared function, and a `usageMetadata` with each turn's
//! `turnComplete`, counted as the vendor counts it: the whole conversation so far as prompt
//! (audio at 32 tokens a second, text by cl100k as a stand-in tokenizer), the turn's own audio
//! (32 a second) or text as response.
//!
//! A turn ends when the client says so: `clientContent` with `turnComplete`, or
//! `realtimeInput` with `audioStreamEnd`, `activityEnd` or text. The knobs make it a bad vendor
//! where money depends on it, as the OpenAI Realtime one: `report_usage` claims that many tokens
//! of every count, `cut_after_frames` drops the socket mid-turn, `stall` never answers,
//! `frame_interval_ms` paces the chunks.

use crate::audio::voice_pcm;
use crate::knobs::Knobs;
use base64::Engine;
use futures_util::{SinkExt, StreamExt};
use http::header;
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role};

/// The socket's paths (`v1beta`; `v1` and `v1alpha` for clients that ask for them).
pub const PATHS: [&str; 3] = [
    tollgate_native_genai::live::SOCKET,
    tollgate_native_genai::live::SOCKET_V1,
    tollgate_native_genai::live::SOCKET_V1ALPHA,
];

/// The voice's rate: 24 kHz PCM16 mono, 48 bytes a millisecond; 100 ms a chunk.
const RATE: u32 = 24_000;
const BYTES_PER_MS: u64 = 48;
const CHUNK_BYTES: usize = 4_800;
/// Audio tokens a second, both ways.
const AUDIO_TOKENS_PER_SECOND: u64 = 32;

/// Takes an upgrade to the socket: the headers of the 101 (the session runs on the upgraded
/// socket), or why it is no WebSocket upgrade.
pub fn accept(
    knobs: Arc<Knobs>,
    headers: &http::HeaderMap,
    upgrade: Option<OnUpgrade>,
) -> Result<http::HeaderMap, &'static str> {
    let key = headers
        .get(header::SEC_WEBSOCKET_KEY)
        .map(|k| derive_accept_key(k.as_bytes()));
    let (Some(accept), Some(upgrade)) = (key, upgrade) else {
        return Err("expected a WebSocket upgrade");
    };
    knobs.count("GET gemini-live");
    tokio::spawn(async move {
        if let Ok(upgraded) = upgrade.await {
            let socket =
                WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
            serve(socket, knobs).await;
        }
    });
    Ok(crate::realtime::switching_headers(&accept))
}

type Socket = WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>;

/// The conversation as the vendor counts it.
#[derive(Debug, Default)]
struct Conversation {
    /// The setup's text (instructions, tools), in tokens.
    setup_tokens: u64,
    /// Answer in text rather than audio.
    text_only: bool,
    /// Functions the setup declares.
    functions: Vec<String>,
    /// Transcribe the model's audio.
    transcribe_output: bool,
    /// Milliseconds of audio heard.
    heard_ms: u64,
    /// Text tokens put in (turns, tool responses).
    text_in: u64,
    /// The text of the turn in progress (to find a function's name in).
    turn_text: String,
    /// Milliseconds spoken by earlier turns.
    spoken_ms: u64,
    /// Text tokens said by earlier turns.
    said: u64,
    turns: u64,
}

fn tokens(text: &str) -> u64 {
    bpe_openai::cl100k_base().count(text) as u64
}

fn pcm_ms(blob: &Value) -> u64 {
    let mime = blob["mimeType"]
        .as_str()
        .or(blob["mime_type"].as_str())
        .unwrap_or_default();
    let rate = mime
        .split(';')
        .find_map(|p| p.trim().strip_prefix("rate="))
        .and_then(|r| r.parse::<u64>().ok())
        .unwrap_or(16_000);
    // Standard or URL-safe, padded or not, as proto3 JSON reads bytes.
    let data: String = blob["data"]
        .as_str()
        .unwrap_or_default()
        .trim_end_matches('=')
        .replace('-', "+")
        .replace('_', "/");
    let bytes = base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(data)
        .map_or(0, |b| b.len() as u64);
    if mime.starts_with("audio/pcm") {
        bytes * 1_000 / (rate * 2).max(1)
    } else {
        0
    }
}

/// A message the way Google sends it: JSON in a binary frame.
fn message(value: &Value) -> Message {
    Message::binary(value.to_string().into_bytes())
}

async fn serve(mut socket: Socket, knobs: Arc<Knobs>) {
    let mut c = Conversation::default();
    let mut set_up = false;
    while let Some(Ok(frame)) = socket.next().await {
        let text = match &frame {
            Message::Text(text) => text.as_str().to_owned(),
            Message::Binary(bytes) => String::from_utf8_lossy(bytes).into_owned(),
            Message::Close(_) => return,
            _ => continue,
        };
        let Ok(value) = serde_json::from_str::<Value>(&text) else {
            return close(
                &mut socket,
                CloseCode::Invalid,
                "Invalid JSON payload received.",
            )
            .await;
        };
        let field = |camel: &str, snake: &str| {
            value
                .get(camel)
                .or_else(|| value.get(snake))
                .cloned()
                .unwrap_or(Value::Null)
        };
        if let Some(setup) = value.get("setup") {
            if set_up {
                return close(
                    &mut socket,
                    CloseCode::Invalid,
                    "setup must be the first message only",
                )
                .await;
            }
            set_up = true;
            c.setup_tokens = tokens(&setup.to_string());
            c.text_only = setup["generationConfig"]["responseModalities"]
                .as_array()
                .is_some_and(|m| m.iter().all(|m| m == "TEXT"));
            c.transcribe_output = setup.get("outputAudioTranscription").is_some();
            c.functions = setup["tools"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|t| t["functionDeclarations"].as_array().into_iter().flatten())
                .filter_map(|f| f["name"].as_str().map(str::to_owned))
                .collect();
            if socket
                .send(message(&json!({"setupComplete": {}})))
                .await
                .is_err()
            {
                return;
            }
            continue;
        }
        if !set_up {
            return close(
                &mut socket,
                CloseCode::Invalid,
                "the first message must be setup",
            )
            .await;
        }
        let mut turn_ends = false;
        let content = field("clientContent", "client_content");
        if !content.is_null() {
            for turn in content["turns"].as_array().into_iter().flatten() {
                for part in turn["parts"].as_array().into_iter().flatten() {
                    if let Some(text) = part["text"].as_str() {
                        c.text_in += tokens(text);
                        c.turn_text.push_str(text);
                    }
                    if let Some(blob) = part.get("inlineData") {
                        c.heard_ms += pcm_ms(blob);
                    }
                }
            }
            turn_ends = content["turnComplete"].as_bool().unwrap_or(false)
                || content["turn_complete"].as_bool().unwrap_or(false);
        }
        let input = field("realtimeInput", "realtime_input");
        if !input.is_null() {
            for blob in input["mediaChunks"].as_array().into_iter().flatten() {
                c.heard_ms += pcm_ms(blob);
            }
            if let Some(audio) = input.get("audio") {
                c.heard_ms += pcm_ms(audio);
            }
            if let Some(text) = input["text"].as_str() {
                c.text_in += tokens(text);
                c.turn_text.push_str(text);
                turn_ends = true;
            }
            turn_ends |=
                input.get("audioStreamEnd").is_some() || input.get("activityEnd").is_some();
        }
        let answered = field("toolResponse", "tool_response");
        if !answered.is_null() {
            c.text_in += tokens(&answered.to_string());
            turn_ends = true;
        }
        if turn_ends {
            if knobs.get().stall {
                continue;
            }
            if respond(&mut socket, &mut c, &knobs).await.is_err() {
                return;
            }
        }
    }
}

async fn close(socket: &mut Socket, code: CloseCode, reason: &str) {
    let _ = socket
        .send(Message::Close(Some(CloseFrame {
            code,
            reason: reason.into(),
        })))
        .await;
}

/// The conversation so far as a turn reads it: prompt tokens, text and audio.
fn prompt(c: &Conversation) -> (u64, u64) {
    let text = c.setup_tokens + c.text_in + c.said;
    let audio = (c.heard_ms + c.spoken_ms) * AUDIO_TOKENS_PER_SECOND / 1_000;
    (text, audio)
}

/// One turn of the model: a tool call when the turn names a declared function, else its voice
/// (or text), then `turnComplete` with the turn's usage. `Err` when the socket is gone (or the
/// knobs cut it).
async fn respond(socket: &mut Socket, c: &mut Conversation, knobs: &Knobs) -> Result<(), ()> {
    let settings = knobs.get();
    let n = |honest: u64| settings.report_usage.unwrap_or(honest);
    let (text_in, audio_in) = prompt(c);
    let asked = std::mem::take(&mut c.turn_text);
    if let Some(function) = c
        .functions
        .iter()
        .find(|f| asked.contains(f.as_str()))
        .cloned()
    {
        let call = json!({"functionCalls": [{"id": format!("call-{}", c.turns + 1), "name": function, "args": {}}]});
        let out = tokens(&call.to_string());
        c.turns += 1;
        c.said += out;
        socket
            .send(message(&json!({"toolCall": call})))
            .await
            .map_err(|_| ())?;
        let usage = json!({
            "promptTokenCount": n(text_in + audio_in), "responseTokenCount": n(out),
            "totalTokenCount": n(text_in + audio_in + out),
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": n(text_in)}, {"modality": "AUDIO", "tokenCount": n(audio_in)}],
            "responseTokensDetails": [{"modality": "TEXT", "tokenCount": n(out)}]
        });
        return socket
            .send(message(&json!({"usageMetadata": usage})))
            .await
            .map_err(|_| ());
    }
    c.turns += 1;
    let reply = format!(
        "I heard {:.1} seconds of audio so far, and this is turn {}.",
        c.heard_ms as f64 / 1000.0,
        c.turns
    );
    let pause = Duration::from_millis(settings.frame_interval_ms.unwrap_or(0));
    let (out_text, out_audio) = if c.text_only {
        socket
            .send(message(
                &json!({"serverContent": {"modelTurn": {"parts": [{"text": reply}]}}}),
            ))
            .await
            .map_err(|_| ())?;
        (tokens(&reply), 0)
    } else {
        let pcm = voice_pcm(&reply, RATE).map_err(|_| ())?;
        for (sent, chunk) in pcm.chunks(CHUNK_BYTES).enumerate() {
            if settings
                .cut_after_frames
                .is_some_and(|n| sent >= n as usize)
            {
                // A vendor that drops the socket mid-turn.
                return Err(());
            }
            let data = base64::engine::general_purpose::STANDARD.encode(chunk);
            let part =
                json!({"inlineData": {"mimeType": format!("audio/pcm;rate={RATE}"), "data": data}});
            socket
                .send(message(
                    &json!({"serverContent": {"modelTurn": {"parts": [part]}}}),
                ))
                .await
                .map_err(|_| ())?;
            if !pause.is_zero() {
                tokio::time::sleep(pause).await;
            }
        }
        if c.transcribe_output {
            socket
                .send(message(
                    &json!({"serverContent": {"outputTranscription": {"text": reply}}}),
                ))
                .await
                .map_err(|_| ())?;
        }
        let spoken_ms = pcm.len() as u64 / BYTES_PER_MS;
        c.spoken_ms += spoken_ms;
        (0, spoken_ms * AUDIO_TOKENS_PER_SECOND / 1_000)
    };
    c.said += out_text;
    socket
        .send(message(
            &json!({"serverContent": {"generationComplete": true}}),
        ))
        .await
        .map_err(|_| ())?;
    let mut details = Vec::new();
    if out_text > 0 {
        details.push(json!({"modality": "TEXT", "tokenCount": n(out_text)}));
    }
    if out_audio > 0 {
        details.push(json!({"modality": "AUDIO", "tokenCount": n(out_audio)}));
    }
    let usage = json!({
        "promptTokenCount": n(text_in + audio_in),
        "responseTokenCount": n(out_text + out_audio),
        "totalTokenCount": n(text_in + audio_in + out_text + out_audio),
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": n(text_in)}, {"modality": "AUDIO", "tokenCount": n(audio_in)}],
        "responseTokensDetails": details
    });
    socket
        .send(message(
            &json!({"serverContent": {"turnComplete": true}, "usageMetadata": usage}),
        ))
        .await
        .map_err(|_| ())
}
