//! # tollgate-vendor-audio
//!
//! The vendor audio wire formats, sans-IO: `t2a_v2` speech synthesis (SPEC §2.4, wire-formats
//! §3: hex audio, SSE frames ending with `data.status = 2`, `base_resp` status codes) and
//! `speech_to_text` recognition (SPEC §2.5, wire-formats §4: the multipart form, the `language`
//! header, `timestamp_level`, and the `{index, delta, finish, duration}` stream frames).
//!
//! Status: the types arrive with the speech-synthesis and speech-recognition work; until then the
//! gateway answers `/v1/t2a_v2` with 501 in the `base_resp` shape and `/v1/speech_to_text` with
//! 501 in OpenAI's shape.
