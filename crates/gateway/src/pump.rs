//! The one loop that moves every metered stream to its client (DESIGN §8), driving a
//! [`Meter`]: the rustls pattern — a pure state machine per stream kind (speech, recognition,
//! native generation), and one thin I/O loop that owns the hold and settles it exactly once.
//!
//! A meter is told each upstream piece and says what the client gets for it; at the end it is
//! told how the stream ended ([`End`]) and says what to charge, and — once the charge is written
//! — what the client's last bytes are. Meters never touch the network, the ledger or a clock, so
//! each is tested on its own (`speech_relay`, `recognition`, `generation`).

use crate::hold::HeldCharge;
use crate::stream_body::BodySender;
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use std::pin::Pin;
use tollgate_billing::{Amount, Usage};
use tollgate_metering::{Basis, Capped};
use tollgate_upstream::UpstreamError;

/// How a stream ended.
#[derive(Debug)]
pub enum End {
    /// The upstream finished and the client took everything.
    Complete,
    /// The client went away before the end.
    ClientGone,
    /// The upstream failed or cut the stream (a client still there is told).
    Cut(UpstreamError),
}

impl End {
    /// How the stream ended, as the metering rules take it (`tollgate_metering`).
    pub fn metered(&self) -> tollgate_metering::StreamEnd {
        match self {
            End::Complete => tollgate_metering::StreamEnd::Complete,
            End::ClientGone => tollgate_metering::StreamEnd::ClientGone,
            End::Cut(e) => tollgate_metering::StreamEnd::Cut(e.to_string()),
        }
    }
}

/// What a stream is charged.
#[derive(Debug)]
pub enum Settlement {
    /// This usage, on this basis.
    Charge(Usage, Basis),
    /// A usage already cut to what the stream delivered, charged at most the price of that
    /// bound (`HeldCharge::bounded_exactly`), with the anomaly of the cut.
    Within(Capped),
    /// Nothing: the hold is released, for this reason.
    Release(String),
}

impl Settlement {
    /// Settles `held` so (or releases it): what was charged, `None` when released.
    pub async fn settle(
        self,
        held: HeldCharge,
    ) -> Result<Option<Amount>, tollgate_exchange::errors::ApiError> {
        match self {
            Settlement::Charge(usage, basis) => held.settle(&usage, basis).await.map(Some),
            Settlement::Within(capped) => held.settle_within(capped).await.map(Some),
            Settlement::Release(why) => {
                held.release(&why);
                Ok(None)
            }
        }
    }
}

/// The client's last bytes, once the charge is written.
#[derive(Debug)]
pub enum Closing {
    /// Nothing more.
    Nothing,
    /// These pieces, then the end of the body.
    Send(Vec<Bytes>),
    /// An aborted body (the client sees a cut, not a short file), with this reason.
    Abort(String),
}

impl Closing {
    /// The closing of a stream the upstream cut: the encoder's error event (`failed`) for an
    /// error that says what was charged for what was delivered, or — an encoder without error
    /// events — an aborted body saying the same.
    pub fn cut(
        e: &UpstreamError,
        charged: Option<Amount>,
        failed: impl FnOnce(&tollgate_exchange::errors::ApiError) -> Option<Bytes>,
    ) -> Closing {
        let error = crate::relay::stream_cut_error(e, charged);
        match failed(&error) {
            Some(bytes) => Closing::Send(vec![bytes]),
            None => Closing::Abort(error.message),
        }
    }
}

/// One kind of metered stream.
pub trait Meter: Send + 'static {
    /// What the upstream sends.
    type Piece: Send + 'static;
    /// After the client left, the upstream is still read to its end (it does — and bills — the
    /// whole work whatever the client does, so the share delivered needs the whole) rather than
    /// dropped (which stops the work).
    const DRAIN_AFTER_CLIENT_GONE: bool;
    /// The upstream marks its last piece; a stream that ends without it was cut.
    const HAS_LAST_PIECE: bool;

    /// Reads one piece: the bytes for the client, each with its weight (bytes of content, for
    /// the share a client that leaves is charged); an error cuts the stream.
    fn on_piece(&mut self, piece: &Self::Piece) -> Result<Vec<(Bytes, u64)>, UpstreamError>;
    /// Whether `piece` is the last.
    fn is_last(&self, piece: &Self::Piece) -> bool;
    /// What to charge, given how the stream ended and the weight the client's connection took
    /// (`offered`: the weight there was to take).
    fn finish(&mut self, end: &End, delivered: u64, offered: u64) -> Settlement;
    /// The last bytes for a client still there; `charged` is what the ledger recorded (`None`
    /// when nothing was, or the settlement failed).
    fn closing(&mut self, end: &End, charged: Option<Amount>) -> Closing;
}

/// The upstream's pieces; an `Err` is the last item.
pub type Pieces<P> = Pin<Box<dyn Stream<Item = Result<P, UpstreamError>> + Send>>;

/// Moves `first` (already read, to answer the client's headers) and the rest of `rest` to
/// `sender` through `meter`, then settles `held` — once, before the client's last bytes, so a
/// client that read the whole stream was charged durably and an error event can say what was
/// charged.
pub async fn pump<M: Meter>(
    held: HeldCharge,
    first: Option<M::Piece>,
    mut rest: Pieces<M::Piece>,
    sender: BodySender,
    mut meter: M,
) {
    let mut client_gone = false;
    let mut cut = None;
    let mut saw_last = false;
    let mut offered = 0u64;
    let mut next = first.map(Ok);
    'stream: loop {
        let item = match next.take() {
            Some(item) => item,
            None => match rest.next().await {
                Some(item) => item,
                None => break,
            },
        };
        let piece = match item {
            Ok(piece) => piece,
            Err(e) => {
                cut = Some(e);
                break;
            }
        };
        let last = meter.is_last(&piece);
        match meter.on_piece(&piece) {
            Err(e) => {
                cut = Some(e);
                break;
            }
            Ok(out) => {
                for (bytes, weight) in out {
                    offered += weight;
                    if !client_gone && sender.send_weighed(bytes, weight).await.is_err() {
                        client_gone = true;
                        tracing::info!(delivered = sender.taken(), "client went away");
                        if !M::DRAIN_AFTER_CLIENT_GONE {
                            break 'stream;
                        }
                    }
                }
            }
        }
        if last {
            saw_last = true;
            break;
        }
    }
    // Not reading on: dropping the upstream's stream stops its work now.
    drop(rest);
    let delivered = sender.taken().min(offered);
    let end = match cut {
        Some(e) => End::Cut(e),
        None if client_gone => End::ClientGone,
        None if M::HAS_LAST_PIECE && !saw_last => End::Cut(UpstreamError::Protocol(
            "the stream ended without its last piece".into(),
        )),
        // `is_closed` also catches a client that left while its last pieces were queued.
        None if sender.is_closed() && delivered < offered => End::ClientGone,
        None => End::Complete,
    };
    let charged = match meter.finish(&end, delivered, offered).settle(held).await {
        Ok(charged) => charged,
        Err(e) => {
            tracing::error!(error = ?e, "settling a stream failed");
            None
        }
    };
    if let End::Cut(e) = &end {
        tracing::warn!(error = %e, delivered, "the upstream stream failed");
    }
    if matches!(end, End::ClientGone) {
        return;
    }
    match meter.closing(&end, charged) {
        Closing::Nothing => {}
        Closing::Send(pieces) => {
            for piece in pieces {
                if sender.send(piece).await.is_err() {
                    break;
                }
            }
        }
        Closing::Abort(reason) => sender.abort(reason).await,
    }
}
