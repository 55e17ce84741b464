//! The Responses bridge's translation (the OpenAI Responses API; `docs/decisions.md`, "The
//! Responses bridge"): a Responses request to a native one and the native answer back — whole,
//! or as the Responses stream's events. Billing is the native endpoint's, as for the chat
//! bridge. The steps are `generation::bridge`'s.

use crate::generation::Encoder;
use crate::generation::{Answering, Bridge};
use bytes::Bytes;
use tollgate_exchange::errors::ApiError;
use tollgate_native_genai::models::ModelLimits;
use tollgate_native_genai::responses::{
    self, Response, ResponseEvents, ResponseTemplate, ResponsesRequest, StreamEvent,
};
use tollgate_native_genai::{FieldError, GenerateContentRequest, GenerateContentResponse};
use tollgate_sse::ByteString;

impl Bridge for ResponsesRequest {
    type Events = ResponsesSse;
    type Answer = Response;
    const ID_PREFIX: &'static str = "resp_";

    fn model(&self) -> &str {
        &self.model
    }

    fn streams(&self) -> bool {
        self.stream == Some(true)
    }

    fn to_native(&self, limits: &ModelLimits) -> Result<GenerateContentRequest, FieldError> {
        responses::to_native(self, limits)
    }

    fn events(&self, answering: &Answering) -> ResponsesSse {
        ResponsesSse {
            events: ResponseEvents::new(template(self, answering)),
        }
    }

    fn answer(&self, native: &GenerateContentResponse, answering: &Answering) -> Response {
        responses::to_response(native, &template(self, answering))
    }
}

/// What the answer takes from its request and its identity: everything but the answer.
fn template(request: &ResponsesRequest, answering: &Answering) -> ResponseTemplate {
    ResponseTemplate::new(request, &answering.id, answering.created)
}

/// The Responses stream: `event: <type>` / `data: <event>` pairs, ending in
/// `response.completed`, `response.incomplete` or `response.failed` (no `[DONE]`).
#[derive(Debug)]
pub struct ResponsesSse {
    events: ResponseEvents,
}

impl Encoder for ResponsesSse {
    fn frame(&mut self, response: &GenerateContentResponse, _: &ByteString) -> Vec<Bytes> {
        sse(self.events.map(response))
    }

    fn done(&mut self, charged: Option<tollgate_billing::Amount>) -> Vec<Bytes> {
        // The last event (`response.completed`) says the charge.
        let mut out = sse(self.events.finish());
        if let Some(last) = out.pop() {
            let text = String::from_utf8_lossy(&last);
            out.push(Bytes::from(crate::hold::with_charge(&text, charged)));
        }
        out
    }

    fn failed(&mut self, error: &ApiError) -> Vec<Bytes> {
        sse(self.events.fail(&error.message))
    }
}

/// The events, framed.
fn sse(events: Vec<StreamEvent>) -> Vec<Bytes> {
    events
        .iter()
        .map(|event| Bytes::from(event.to_sse()))
        .collect()
}
