//! The `t2a` channel format: MiniMax-style speech synthesis, `POST {base}/v1/t2a_v2` with
//! `Authorization: Bearer` (wire-formats §3).
//!
//! What the vendor does that an adapter must not miss:
//! * errors usually arrive as HTTP 200 with a non-zero `base_resp.status_code` — always checked;
//! * audio is hex; an odd length or a non-hex character is an upstream fault, not silence;
//! * streamed frames come separated by LF or CRLF blank lines, may end with `data: [DONE]`, and an
//!   error can arrive as a frame mid-stream — it ends the stream with that error.

use crate::common::client::{HttpClient, is_event_stream, json_post, sse_events};
use crate::common::{Answer, retry_after};
use crate::seams::speech::{
    Audio, AudioChunk, AudioFormat, ChunkStream, Synthesis, Synthesized, Synthesizer,
};
use crate::{Endpoint, UpstreamError};
use bytes::Bytes;
use futures_util::future::BoxFuture;
use futures_util::{FutureExt, Stream, StreamExt};
use std::pin::Pin;
use std::time::Instant;
use tollgate_compat_audio::speech::is_stock_voice;
use tollgate_vendor_audio::base_resp::http_status;
use tollgate_vendor_audio::t2a::{
    AudioSetting, OUTPUT_FORMAT_HEX, StreamOptions, T2aFrame, VoiceSetting,
};
use tollgate_vendor_audio::{BaseResp, T2aFormat, T2aRequest, T2aResponse};

/// The `t2a` format behind the speech seam ([`Synthesizer`]).
///
/// A [`Synthesis`] becomes a `t2a_v2` request: an OpenAI stock voice name becomes the
/// synthesis's default voice (the vendor has no `alloy`), any other name is the vendor voice id;
/// the format goes to `audio_setting` (mono, at the asked sample rate); output is always hex,
/// and a stream sets `exclude_aggregated_audio` so that its last frame does not repeat the audio
/// (wire-formats §3.3); `instructions` has no `t2a_v2` counterpart and is not sent. A client's
/// own `t2a_v2` request goes as it is, with the channel's model id and hex output.
#[derive(Debug, Clone, Copy, Default)]
pub struct T2a;

impl T2a {
    /// The `t2a_v2` request for `synthesis`.
    pub fn request(synthesis: &Synthesis) -> T2aRequest {
        if let Some(own) = &synthesis.t2a {
            let mut upstream = own.clone();
            upstream.model = synthesis.model.clone();
            upstream.output_format = Some(OUTPUT_FORMAT_HEX.to_owned());
            return upstream;
        }
        let voice_id = if is_stock_voice(&synthesis.voice) {
            synthesis.default_voice.clone()
        } else {
            synthesis.voice.clone()
        };
        let mut voice = VoiceSetting::new(voice_id);
        voice.speed = synthesis.speed;
        let format = match synthesis.format {
            AudioFormat::Mp3 => T2aFormat::Mp3,
            AudioFormat::Wav => T2aFormat::Wav,
            AudioFormat::Flac => T2aFormat::Flac,
            AudioFormat::Pcm => T2aFormat::Pcm,
        };
        let audio = AudioSetting {
            sample_rate: Some(synthesis.sample_rate),
            format: Some(format.as_str().to_owned()),
            channel: Some(1),
            ..AudioSetting::default()
        };
        let stream = synthesis.stream && Self::streams(synthesis.format);
        let mut t2a = T2aRequest::new(synthesis.model.clone(), synthesis.text.clone());
        t2a.stream = Some(stream);
        t2a.stream_options = stream.then_some(StreamOptions {
            exclude_aggregated_audio: Some(true),
        });
        t2a.voice_setting = Some(voice);
        t2a.audio_setting = Some(audio);
        t2a.output_format = Some(OUTPUT_FORMAT_HEX.to_owned());
        t2a
    }

    /// The vendor streams mp3, pcm and flac, but produces wav only whole (wire-formats §3.1).
    pub fn streams(format: AudioFormat) -> bool {
        format != AudioFormat::Wav
    }
}

impl Synthesizer for T2a {
    fn synthesize<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        request: &'a Synthesis,
    ) -> BoxFuture<'a, Result<Answer<Synthesized>, UpstreamError>> {
        async move {
            let mut t2a = Self::request(request);
            t2a.stream = Some(false);
            t2a.stream_options = None;
            let answer = synthesize(client, endpoint, &t2a).await?;
            Ok(answer.map(|(audio, body)| Synthesized {
                audio,
                characters: body.usage_characters(),
                t2a: Some(body),
            }))
        }
        .boxed()
    }

    fn stream<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        request: &'a Synthesis,
    ) -> BoxFuture<'a, Result<ChunkStream, UpstreamError>> {
        async move {
            let t2a = Self::request(request);
            if !t2a.is_stream() {
                // wav: the whole audio as one last piece.
                let whole = self.synthesize(client, endpoint, request).await?.body;
                let chunk = AudioChunk {
                    audio: Audio::Bytes(whole.audio),
                    characters: whole.characters,
                    last: true,
                    t2a: whole.t2a.map(|answer| {
                        // The whole answer's audio as its frame's: hex, as it came.
                        let mut response = answer;
                        let hex = response
                            .data
                            .as_mut()
                            .map(|data| Bytes::from(std::mem::take(&mut data.audio)))
                            .unwrap_or_default();
                        T2aFrame::new(response, hex)
                    }),
                };
                let once: ChunkStream = Box::pin(futures_util::stream::once(async { Ok(chunk) }));
                return Ok(once);
            }
            let repeats = !t2a.excludes_aggregated_audio();
            let frames = stream(client, endpoint, &t2a).await?;
            let chunks: ChunkStream = Box::pin(frames.map(move |frame| {
                frame.map(|frame| {
                    let last = frame.response.is_final();
                    AudioChunk {
                        // The last frame's repeat of the whole audio is not new audio.
                        audio: if last && repeats {
                            Audio::default()
                        } else {
                            Audio::Hex(frame.audio_hex.clone())
                        },
                        characters: frame.response.usage_characters(),
                        last,
                        t2a: Some(frame),
                    }
                })
            }));
            Ok(chunks)
        }
        .boxed()
    }
}

/// Bounds on a streamed answer (docs/decisions.md, "Upstream answers bounded"): a t2a stream's last frame repeats the whole audio in hex: a 10,000-character text as 128 kbit/s MP3 is about 21 MB of hex.
const STREAM_LIMITS: tollgate_sse::Limits = tollgate_sse::Limits {
    max_event_bytes: 64 << 20,
    max_total_bytes: 256 << 20,
};

/// The largest non-streamed answer read: 10,000 characters of 256 kbps MP3 is about 22 MB, twice
/// that as hex.
const MAX_RESPONSE: usize = 128 << 20;

/// Frames as they arrive, each read with its audio left in place ([`T2aFrame`]); an `Err` is
/// the last item.
pub type FrameStream = Pin<Box<dyn Stream<Item = Result<T2aFrame, UpstreamError>> + Send>>;

/// A non-streamed synthesis: `request.stream` must be false.
pub async fn synthesize(
    client: &HttpClient,
    endpoint: &Endpoint,
    request: &T2aRequest,
) -> Result<Answer<(Bytes, T2aResponse)>, UpstreamError> {
    let started = Instant::now();
    let response = send(client, endpoint, request).await?;
    let bytes =
        HttpClient::read_body(response.into_body(), MAX_RESPONSE, &endpoint.timeouts).await?;
    let body: T2aResponse = serde_json::from_slice(&bytes)
        .map_err(|e| UpstreamError::Protocol(format!("t2a response: {e}")))?;
    refused(&body.base_resp)?;
    let audio = match &body.data {
        Some(data) => data
            .audio_bytes()
            .map_err(|e| UpstreamError::Protocol(format!("t2a audio: {e}")))?,
        None => return Err(UpstreamError::Protocol("t2a response without data".into())),
    };
    Ok(Answer {
        body: (Bytes::from(audio), body),
        upstream_time: started.elapsed(),
    })
}

/// A streamed synthesis: `request.stream` must be true. Returns once the response head has
/// arrived; frames then come as the vendor sends them.
pub async fn stream(
    client: &HttpClient,
    endpoint: &Endpoint,
    request: &T2aRequest,
) -> Result<FrameStream, UpstreamError> {
    let response = send(client, endpoint, request).await?;
    if !is_event_stream(&response) {
        // A refusal of a stream request comes as one JSON body, often with HTTP 200.
        let bytes =
            HttpClient::read_body(response.into_body(), 1 << 20, &endpoint.timeouts).await?;
        return Err(match serde_json::from_slice::<T2aResponse>(&bytes) {
            Ok(body) => refused(&body.base_resp).err().unwrap_or_else(|| {
                UpstreamError::Protocol("t2a stream answered with JSON, not SSE".into())
            }),
            Err(e) => UpstreamError::Protocol(format!("t2a stream: {e}")),
        });
    }
    let events = sse_events(response.into_body(), endpoint.timeouts.idle, STREAM_LIMITS);
    let frames = events.filter_map(|event| async move {
        match event {
            Err(e) => Some(Err(e)),
            Ok(event) if event.data.trim().is_empty() || event.is_done() => None,
            Ok(event) => Some(read_frame(event.data.into_bytes())),
        }
    });
    Ok(Box::pin(crate::common::client::until_first_error(frames)))
}

/// One frame: the vendor's error if it is one, else the frame with its audio checked and left
/// in the event's bytes.
fn read_frame(data: Bytes) -> Result<T2aFrame, UpstreamError> {
    let frame =
        T2aFrame::read(data).map_err(|e| UpstreamError::Protocol(format!("t2a frame: {e}")))?;
    refused(&frame.response.base_resp)?;
    Ok(frame)
}

async fn send(
    client: &HttpClient,
    endpoint: &Endpoint,
    request: &T2aRequest,
) -> Result<http::Response<hyper::body::Incoming>, UpstreamError> {
    let body = serde_json::to_vec(request).map_err(|e| UpstreamError::Protocol(e.to_string()))?;
    let http_request = json_post(endpoint, "/v1/t2a_v2", body)?;
    let response = client.send(http_request, &endpoint.timeouts).await?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let retry_after = retry_after(response.headers());
    let bytes = HttpClient::read_body(response.into_body(), 1 << 20, &endpoint.timeouts)
        .await
        .unwrap_or_default();
    Err(UpstreamError::refused(
        status.as_u16(),
        &bytes,
        |bytes| match serde_json::from_slice::<T2aResponse>(bytes) {
            Ok(body) if !body.base_resp.is_success() => Some(format!(
                "code {}: {}",
                body.base_resp.status_code, body.base_resp.status_msg
            )),
            _ => crate::common::openai_error_message(bytes),
        },
        retry_after,
    ))
}

/// A non-zero `base_resp` as an error with the status the vendor's code means.
fn refused(base: &BaseResp) -> Result<(), UpstreamError> {
    if base.is_success() {
        return Ok(());
    }
    let message = format!("code {}: {}", base.status_code, base.status_msg);
    Err(UpstreamError::Status {
        status: http_status(base.status_code),
        detail: message.clone(),
        message: Some(message),
        retry_after: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn synthesis(voice: &str, format: AudioFormat, stream: bool) -> Synthesis {
        Synthesis {
            model: "speech-2.8-turbo-upstream".into(),
            text: "hello".into(),
            voice: voice.into(),
            default_voice: "English_Graceful_Lady".into(),
            speed: Some(1.5),
            format,
            sample_rate: 32_000,
            instructions: Some("calm".into()),
            stream,
            t2a: None,
        }
    }

    #[test]
    fn stock_voices_become_the_default_voice_and_others_pass_through() {
        let t = T2a::request(&synthesis("Alloy", AudioFormat::Mp3, true));
        assert_eq!(t.voice_id(), Some("English_Graceful_Lady"));
        assert_eq!(t.model, "speech-2.8-turbo-upstream");
        assert_eq!(t.voice_setting.as_ref().unwrap().speed, Some(1.5));
        assert!(t.excludes_aggregated_audio());
        assert_eq!(t.output_format.as_deref(), Some("hex"));
        assert_eq!(t.format(), T2aFormat::Mp3);
        assert_eq!(t.sample_rate(), 32_000);
        let t = T2a::request(&synthesis("Wise_Woman", AudioFormat::Pcm, false));
        assert_eq!(t.voice_id(), Some("Wise_Woman"));
        assert_eq!(t.stream, Some(false));
        assert!(t.stream_options.is_none());
        // wav is made whole even for a stream.
        let t = T2a::request(&synthesis("alloy", AudioFormat::Wav, true));
        assert_eq!(t.stream, Some(false));
    }

    #[test]
    fn a_clients_own_request_keeps_every_field_but_model_and_output_format() {
        let own: T2aRequest = serde_json::from_value(serde_json::json!({
            "model": "speech-2.8-hd", "text": "hi", "output_format": "url",
            "voice_setting": {"voice_id": "v", "emotion": "happy"},
            "pronunciation_dict": {"tone": ["SQL/sequel"]},
            "some_new_vendor_field": {"x": 1}
        }))
        .unwrap();
        let mut s = synthesis("v", AudioFormat::Mp3, false);
        s.t2a = Some(own);
        let upstream = serde_json::to_value(T2a::request(&s)).unwrap();
        assert_eq!(upstream["model"], "speech-2.8-turbo-upstream");
        assert_eq!(upstream["output_format"], "hex");
        assert_eq!(upstream["pronunciation_dict"]["tone"][0], "SQL/sequel");
        assert_eq!(upstream["voice_setting"]["emotion"], "happy");
        assert_eq!(upstream["some_new_vendor_field"]["x"], 1);
    }

    #[test]
    fn frames_decode_hex_and_errors_carry_the_vendor_code() {
        let read = |json: &'static str| read_frame(Bytes::from_static(json.as_bytes()));
        let f = read(
            r#"{"data":{"audio":"fffb","status":1},"base_resp":{"status_code":0,"status_msg":""}}"#,
        )
        .unwrap();
        assert_eq!(f.decode_audio().unwrap(), [0xff, 0xfb]);
        assert!(!f.response.is_final());
        let e = read(r#"{"data":{"audio":"fff","status":1},"base_resp":{"status_code":0}}"#)
            .unwrap_err();
        assert!(matches!(e, UpstreamError::Protocol(_)));
        let e =
            read(r#"{"base_resp":{"status_code":1002,"status_msg":"rate limit"}}"#).unwrap_err();
        assert!(
            matches!(e, UpstreamError::Status { status: 429, .. }),
            "{e:?}"
        );
    }
}
