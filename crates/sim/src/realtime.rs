//! The simulated OpenAI Realtime vendor: `GET /v1/realtime?model=…` upgraded to a WebSocket,
//! speaking the GA event protocol with real audio — its synthesizer's voice as PCM16 at
//! 24 kHz — and honest usage per response, counted as the vendor counts it: the whole
//! conversation so far as input (audio at 10 tokens a second, text by cl100k), what an earlier
//! response read reported as cached, and the response's own audio (20 tokens a second) and
//! transcript as output.
//!
//! The knobs make it a bad vendor where money depends on it: `report_usage` claims that many
//! tokens of every class, `cut_after_frames` drops the socket after that many audio deltas of
//! a response, `stall` never answers a `response.create`, `frame_interval_ms` paces the deltas.

use crate::audio::voice_pcm;
use crate::knobs::Knobs;
use base64::Engine;
use futures_util::{SinkExt, StreamExt};
use http::{HeaderValue, header};
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;

/// The simulated voice's sample rate and format: 24 kHz PCM16 mono, 48,000 bytes a second.
const RATE: u32 = 24_000;
const BYTES_PER_MS: u64 = 48;
/// Audio in one delta: 100 ms.
const DELTA_BYTES: usize = 4_800;

/// Takes an upgrade to `/v1/realtime`: the headers of the 101 to answer with (the session
/// runs on the upgraded socket), or why it is no WebSocket upgrade.
pub fn accept(
    knobs: Arc<Knobs>,
    headers: &http::HeaderMap,
    query: Option<&str>,
    upgrade: Option<OnUpgrade>,
) -> Result<http::HeaderMap, &'static str> {
    let key = headers
        .get(header::SEC_WEBSOCKET_KEY)
        .map(|k| derive_accept_key(k.as_bytes()));
    let model = query
        .and_then(|q| q.split('&').find_map(|p| p.strip_prefix("model=")))
        .unwrap_or("gpt-realtime")
        .to_owned();
    let (Some(accept), Some(upgrade)) = (key, upgrade) else {
        return Err("expected a WebSocket upgrade");
    };
    knobs.count("GET /v1/realtime");
    tokio::spawn(async move {
        if let Ok(upgraded) = upgrade.await {
            let socket =
                WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
            serve(socket, knobs, model).await;
        }
    });
    Ok(switching_headers(&accept))
}

/// The headers of a 101 that takes a WebSocket upgrade with `accept`.
pub(crate) fn switching_headers(accept: &str) -> http::HeaderMap {
    let mut h = http::HeaderMap::new();
    h.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    if let Ok(v) = HeaderValue::from_str(accept) {
        h.insert(header::SEC_WEBSOCKET_ACCEPT, v);
    }
    h
}

/// One turn of the conversation, as the vendor counts it.
#[derive(Debug, Default, Clone, Copy)]
struct Spent {
    text_in: u64,
    audio_in: u64,
}

struct Conversation {
    model: String,
    instructions: String,
    voice: String,
    /// Audio appended and not yet committed, in bytes.
    buffered: u64,
    /// Milliseconds of audio heard, committed.
    heard_ms: u64,
    /// Text tokens put in (items, tool outputs).
    text_in: u64,
    /// Milliseconds spoken by earlier responses.
    spoken_ms: u64,
    /// Text tokens said by earlier responses.
    said: u64,
    /// What the previous response read: cached for the next.
    cached: Spent,
    events: u64,
    responses: u64,
    /// The input transcription's model, when the session asked for one.
    transcription: Option<String>,
}

impl Conversation {
    fn event_id(&mut self) -> String {
        self.events += 1;
        format!("event_sim_{}", self.events)
    }

    fn session(&self) -> Value {
        json!({
            "type": "realtime",
            "object": "realtime.session",
            "id": "sess_sim_1",
            "model": self.model,
            "output_modalities": ["audio"],
            "instructions": self.instructions,
            "audio": {
                "input": {"format": {"type": "audio/pcm", "rate": RATE}, "transcription": null, "turn_detection": null},
                "output": {"format": {"type": "audio/pcm", "rate": RATE}, "voice": self.voice, "speed": 1.0}
            },
            "tools": [],
            "tool_choice": "auto",
            "max_output_tokens": "inf"
        })
    }
}

fn tokens(text: &str) -> u64 {
    bpe_openai::cl100k_base().count(text) as u64
}

async fn serve(
    mut socket: WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>,
    knobs: Arc<Knobs>,
    model: String,
) {
    let mut c = Conversation {
        model,
        instructions: "You are a helpful, witty, and friendly AI.".into(),
        voice: "alloy".into(),
        buffered: 0,
        heard_ms: 0,
        text_in: 0,
        spoken_ms: 0,
        said: 0,
        cached: Spent::default(),
        events: 0,
        responses: 0,
        transcription: None,
    };
    let created =
        json!({"type": "session.created", "event_id": c.event_id(), "session": c.session()});
    if socket
        .send(Message::text(created.to_string()))
        .await
        .is_err()
    {
        return;
    }
    while let Some(Ok(message)) = socket.next().await {
        let Message::Text(text) = message else {
            continue;
        };
        let Ok(event) = serde_json::from_str::<Value>(text.as_str()) else {
            let error = error(&mut c, "invalid_json", "The event is not JSON", None);
            let _ = socket.send(Message::text(error)).await;
            continue;
        };
        let kind = event["type"].as_str().unwrap_or_default();
        let about = event["event_id"].as_str().map(str::to_owned);
        let answers: Vec<String> = match kind {
            "session.update" => {
                if let Some(instructions) = event["session"]["instructions"].as_str() {
                    c.instructions = instructions.to_owned();
                }
                if let Some(voice) = event["session"]["audio"]["output"]["voice"].as_str() {
                    c.voice = voice.to_owned();
                }
                let session = &event["session"];
                let transcription = session["audio"]["input"]
                    .get("transcription")
                    .or_else(|| session.get("input_audio_transcription"));
                if let Some(transcription) = transcription {
                    c.transcription = transcription["model"].as_str().map(str::to_owned);
                }
                vec![json!({"type": "session.updated", "event_id": c.event_id(), "session": c.session()}).to_string()]
            }
            "input_audio_buffer.append" => {
                let audio = event["audio"].as_str().unwrap_or_default();
                match base64::engine::general_purpose::STANDARD.decode(audio) {
                    Ok(bytes) => {
                        c.buffered += bytes.len() as u64;
                        Vec::new()
                    }
                    Err(_) => vec![error(
                        &mut c,
                        "invalid_value",
                        "audio is not base64",
                        about.as_deref(),
                    )],
                }
            }
            "input_audio_buffer.commit" => {
                let ms = c.buffered / BYTES_PER_MS;
                c.heard_ms += ms;
                c.buffered = 0;
                let item = format!("item_sim_{}", c.events + 1);
                let transcribed = c.transcription.clone().map(|model| {
                    // Whisper says the seconds it heard; the GPT-4o transcribers say tokens.
                    let seconds = knobs.get().report_usage.map_or(ms as f64 / 1000.0, |n| n as f64);
                    let usage = if model.starts_with("whisper") {
                        json!({"type": "duration", "seconds": seconds})
                    } else {
                        json!({"type": "tokens", "input_tokens": ms / 100, "output_tokens": 8, "total_tokens": ms / 100 + 8,
                            "input_token_details": {"text_tokens": 0, "audio_tokens": ms / 100}})
                    };
                    json!({"type": "conversation.item.input_audio_transcription.completed", "event_id": c.event_id(),
                        "item_id": item, "content_index": 0,
                        "transcript": format!("({:.1} seconds of audio)", ms as f64 / 1000.0), "usage": usage})
                    .to_string()
                });
                let mut answers = vec![
                    json!({"type": "input_audio_buffer.committed", "event_id": c.event_id(), "previous_item_id": null, "item_id": item}).to_string(),
                    json!({"type": "conversation.item.added", "event_id": c.event_id(), "previous_item_id": null,
                        "item": {"id": item, "type": "message", "role": "user", "status": "completed",
                                 "content": [{"type": "input_audio", "transcript": null}]}}).to_string(),
                ];
                answers.extend(transcribed);
                answers
            }
            "input_audio_buffer.clear" => {
                c.buffered = 0;
                vec![
                    json!({"type": "input_audio_buffer.cleared", "event_id": c.event_id()})
                        .to_string(),
                ]
            }
            "conversation.item.create" => {
                let mut said = String::new();
                for part in event["item"]["content"].as_array().into_iter().flatten() {
                    if let Some(text) = part["text"].as_str() {
                        said.push_str(text);
                    }
                }
                if let Some(output) = event["item"]["output"].as_str() {
                    said.push_str(output);
                }
                c.text_in += tokens(&said);
                let item = format!("item_sim_{}", c.events + 1);
                vec![json!({"type": "conversation.item.added", "event_id": c.event_id(), "previous_item_id": null,
                    "item": {"id": item, "type": "message", "role": "user", "status": "completed", "content": event["item"]["content"].clone()}}).to_string()]
            }
            "response.create" => {
                if knobs.get().stall {
                    // A vendor that takes the request and never answers it.
                    continue;
                }
                if respond(&mut socket, &mut c, &knobs).await.is_err() {
                    return;
                }
                Vec::new()
            }
            "response.cancel"
            | "conversation.item.retrieve"
            | "conversation.item.truncate"
            | "conversation.item.delete"
            | "output_audio_buffer.clear" => Vec::new(),
            other => vec![error(
                &mut c,
                "invalid_value",
                &format!(
                    "Invalid value: '{other}'. Supported values are: 'session.update', 'input_audio_buffer.append', …"
                ),
                about.as_deref(),
            )],
        };
        for answer in answers {
            if socket.send(Message::text(answer)).await.is_err() {
                return;
            }
        }
    }
}

fn error(c: &mut Conversation, code: &str, message: &str, about: Option<&str>) -> String {
    json!({"type": "error", "event_id": c.event_id(),
        "error": {"type": "invalid_request_error", "code": code, "message": message, "param": null, "event_id": about}})
    .to_string()
}

/// One response: created, the voice's audio in 100 ms deltas with its transcript, done with
/// its usage. `Err` when the socket is gone (or the knobs cut it).
async fn respond(
    socket: &mut WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>,
    c: &mut Conversation,
    knobs: &Knobs,
) -> Result<(), ()> {
    let settings = knobs.get();
    c.responses += 1;
    let id = format!("resp_sim_{}", c.responses);
    let item = format!("item_sim_out_{}", c.responses);
    let reply = format!(
        "I heard {:.1} seconds of audio so far, and this is answer {}.",
        c.heard_ms as f64 / 1000.0,
        c.responses
    );
    let pcm = voice_pcm(&reply, RATE).map_err(|_| ())?;
    let send = |value: Value| Message::text(value.to_string());
    socket
        .send(send(json!({"type": "response.created", "event_id": c.event_id(),
            "response": {"object": "realtime.response", "id": id, "status": "in_progress", "output": [], "usage": null}})))
        .await
        .map_err(|_| ())?;
    let pause = Duration::from_millis(settings.frame_interval_ms.unwrap_or(0));
    for (sent, chunk) in pcm.chunks(DELTA_BYTES).enumerate() {
        if settings
            .cut_after_frames
            .is_some_and(|n| sent >= n as usize)
        {
            // A vendor that drops the socket mid-response.
            return Err(());
        }
        let delta = base64::engine::general_purpose::STANDARD.encode(chunk);
        socket
            .send(send(json!({"type": "response.output_audio.delta", "event_id": c.event_id(),
                "response_id": id, "item_id": item, "output_index": 0, "content_index": 0, "delta": delta})))
            .await
            .map_err(|_| ())?;
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
    }
    socket
        .send(send(json!({"type": "response.output_audio_transcript.delta", "event_id": c.event_id(),
            "response_id": id, "item_id": item, "output_index": 0, "content_index": 0, "delta": reply})))
        .await
        .map_err(|_| ())?;
    let spoken_ms = pcm.len() as u64 / BYTES_PER_MS;
    // The vendor's count: the whole conversation read, what the last response read cached.
    let read = Spent {
        text_in: tokens(&c.instructions) + c.text_in + c.said,
        audio_in: c.heard_ms.div_ceil(100) + c.spoken_ms.div_ceil(100),
    };
    let cached = Spent {
        text_in: c.cached.text_in.min(read.text_in),
        audio_in: c.cached.audio_in.min(read.audio_in),
    };
    let out_text = tokens(&reply);
    let out_audio = spoken_ms.div_ceil(50);
    let lie = settings.report_usage;
    let n = |honest: u64| lie.unwrap_or(honest);
    let usage = json!({
        "total_tokens": n(read.text_in + read.audio_in + out_text + out_audio),
        "input_tokens": n(read.text_in + read.audio_in),
        "output_tokens": n(out_text + out_audio),
        "input_token_details": {
            "text_tokens": n(read.text_in), "audio_tokens": n(read.audio_in), "image_tokens": 0,
            "cached_tokens": n(cached.text_in + cached.audio_in),
            "cached_tokens_details": {"text_tokens": n(cached.text_in), "audio_tokens": n(cached.audio_in), "image_tokens": 0}
        },
        "output_token_details": {"text_tokens": n(out_text), "audio_tokens": n(out_audio)}
    });
    c.cached = read;
    c.spoken_ms += spoken_ms;
    c.said += out_text;
    socket
        .send(send(json!({"type": "response.done", "event_id": c.event_id(),
            "response": {"object": "realtime.response", "id": id, "status": "completed",
                "output": [{"id": item, "type": "message", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_audio", "transcript": reply}]}],
                "usage": usage}})))
        .await
        .map_err(|_| ())
}
