//! # tollgate-realtime
//!
//! OpenAI's Realtime API, both ways, for a gateway that relays a voice session frame by frame
//! and bills what it relays (sans-IO; docs/decisions.md, "Live voice sessions"):
//!
//! - [`audio`]: the session's audio formats and how long a number of their bytes lasts;
//! - [`client`]: a client's event checked against the session's rules — known type, audio in
//!   the session's format and under the frame limit, the model unchanged — and what it adds to
//!   the conversation (audio bytes, text, images);
//! - [`server`]: a vendor's event vetted — a JSON object with a type — and what it delivers and
//!   claims: audio and text deltas, a response's usage by modality, an input transcription's
//!   usage, the session's formats; the session's model swapped without rebuilding the event;
//! - [`error`]: the `error` event the gateway writes itself.
//!
//! Nothing here opens a socket, reads a clock or knows a price: the gateway relays, the
//! metering crate bounds and prices.

pub mod audio;
pub mod client;
pub mod error;
pub mod server;
