//! The Chat Completions bridge's translation (docs/api.md §4 rule 4; wire-formats §8): a chat
//! request to a native one and the native answer back — whole, or as `chat.completion.chunk`
//! events ending in `[DONE]`. Billing is the native endpoint's: thinking tokens are output
//! tokens, shown as `completion_tokens_details.reasoning_tokens`. The steps are
//! `generation::bridge`'s.

use crate::generation::Encoder;
use crate::generation::{Answering, Bridge};
use bytes::Bytes;
use tollgate_exchange::errors::{ApiError, Family};
use tollgate_native_genai::bridge::{self, ChunkMapper};
use tollgate_native_genai::chat::{ChatCompletion, ChatCompletionRequest};
use tollgate_native_genai::models::ModelLimits;
use tollgate_native_genai::{FieldError, GenerateContentRequest, GenerateContentResponse};
use tollgate_sse::ByteString;

impl Bridge for ChatCompletionRequest {
    type Events = ChatSse;
    type Answer = ChatCompletion;
    const ID_PREFIX: &'static str = "chatcmpl-";

    fn model(&self) -> &str {
        &self.model
    }

    fn streams(&self) -> bool {
        self.stream == Some(true)
    }

    fn to_native(&self, limits: &ModelLimits) -> Result<GenerateContentRequest, FieldError> {
        bridge::to_native(self, limits)
    }

    fn events(&self, answering: &Answering) -> ChatSse {
        let include_usage = self
            .stream_options
            .as_ref()
            .and_then(|o| o.include_usage)
            .unwrap_or(false);
        ChatSse {
            mapper: ChunkMapper::new(&self.model, &answering.id, answering.created, include_usage),
        }
    }

    fn answer(&self, native: &GenerateContentResponse, answering: &Answering) -> ChatCompletion {
        bridge::to_chat(native, &self.model, &answering.id, answering.created)
    }
}

/// Chat-completion chunks as OpenAI streams them: `data: {chunk}\n\n`, then `data: [DONE]`.
#[derive(Debug)]
pub struct ChatSse {
    mapper: ChunkMapper,
}

impl Encoder for ChatSse {
    fn frame(&mut self, response: &GenerateContentResponse, _: &ByteString) -> Vec<Bytes> {
        self.mapper.map(response).iter().map(event).collect()
    }

    fn done(&mut self, charged: Option<tollgate_billing::Amount>) -> Vec<Bytes> {
        // The usage chunk (`include_usage`) is the final event with a body: it says the charge.
        let chunks = self.mapper.finish();
        let last = chunks.len().saturating_sub(1);
        let mut out: Vec<Bytes> = chunks
            .iter()
            .enumerate()
            .map(|(i, chunk)| {
                let json = serde_json::to_string(chunk).unwrap_or_default();
                let json = if i == last {
                    crate::hold::with_charge(&json, charged)
                } else {
                    json
                };
                Bytes::from(format!("data: {json}\n\n"))
            })
            .collect();
        out.push(Bytes::from_static(b"data: [DONE]\n\n"));
        out
    }

    fn failed(&mut self, error: &ApiError) -> Vec<Bytes> {
        vec![
            Bytes::from(format!("data: {}\n\n", error.body(Family::OpenAi))),
            Bytes::from_static(b"data: [DONE]\n\n"),
        ]
    }
}

/// One `data:` event.
fn event<T: serde::Serialize>(chunk: &T) -> Bytes {
    Bytes::from(format!(
        "data: {}\n\n",
        serde_json::to_string(chunk).unwrap_or_default()
    ))
}
