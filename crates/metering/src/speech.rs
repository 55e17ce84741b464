//! A synthesis stream's characters (docs/api.md §8 rule 1; DESIGN §8):
//!
//! * it ends normally — the upstream's `usage_characters` settles it (the local count when the
//!   upstream reported none, marked estimated);
//! * the client goes away — the upstream synthesizes (and bills) the whole text anyway, so the
//!   share of its characters that was delivered is charged, `ceil(usage × delivered bytes / total
//!   bytes)`, marked partial. "Delivered" is the audio the client's connection took, not what was
//!   queued for it;
//! * the upstream cuts the stream — what was delivered is charged at a nominal speech rate
//!   ([`NOMINAL_CHARACTERS_PER_SECOND`] × speed × seconds of audio delivered), never more than
//!   the local count, marked partial and estimated.

use crate::{Basis, Measure, StreamEnd};
use tollgate_compat_audio::AudioFormat;

/// Characters of text a second of synthesized speech holds at speed 1.0, used only to price the
/// audio delivered by a stream the upstream cut before reporting its usage.
pub const NOMINAL_CHARACTERS_PER_SECOND: f64 = 15.0;

/// What the partial-stream rule needs to know about the audio.
#[derive(Debug, Clone, Copy)]
pub struct AudioShape {
    /// The format the upstream produces.
    pub format: AudioFormat,
    /// Samples a second.
    pub sample_rate: u32,
    /// MP3 bits a second.
    pub bitrate: u32,
    /// The speed asked.
    pub speed: f64,
}

impl AudioShape {
    /// Seconds of audio in `bytes` of this format (FLAC assumed to compress to 60 %).
    pub fn seconds(&self, bytes: usize) -> f64 {
        let pcm_bytes_per_second = f64::from(self.sample_rate) * 2.0;
        let per_second = match self.format {
            AudioFormat::Mp3 => f64::from(self.bitrate) / 8.0,
            AudioFormat::Pcm | AudioFormat::Wav => pcm_bytes_per_second,
            AudioFormat::Flac => pcm_bytes_per_second * 0.6,
        };
        if per_second > 0.0 {
            bytes as f64 / per_second
        } else {
            0.0
        }
    }
}

/// What a synthesis stream is charged, in characters.
///
/// `reported`: the upstream's characters, when it reported them; `local`: the gateway's count of
/// the text; `delivered` and `total`: audio bytes the client's connection took, and the audio
/// there was to take.
pub fn characters(
    end: &StreamEnd,
    reported: Option<u64>,
    local: u64,
    delivered: u64,
    total: u64,
    shape: AudioShape,
) -> (u64, Basis) {
    match end {
        StreamEnd::Complete => Basis::reported_or_local(reported, local, Measure::LocalCount),
        StreamEnd::ClientGone => {
            let billed = reported.unwrap_or(local);
            let share = if total == 0 {
                0
            } else {
                u64::try_from(
                    (u128::from(billed) * u128::from(delivered)).div_ceil(u128::from(total)),
                )
                .unwrap_or(u64::MAX)
            };
            (
                share,
                Basis {
                    estimated: reported.is_none(),
                    note: Some(format!(
                        "partial: client disconnected after {delivered} of {total} audio bytes"
                    )),
                    measured: Measure::DeliveredPart,
                },
            )
        }
        StreamEnd::Cut(why) => {
            let seconds = shape.seconds(usize::try_from(delivered).unwrap_or(usize::MAX));
            let nominal = (seconds * NOMINAL_CHARACTERS_PER_SECOND * shape.speed).ceil();
            let characters = if nominal.is_finite() && nominal > 0.0 {
                (nominal as u64).min(local)
            } else {
                0
            };
            (
                characters,
                Basis::local(
                    format!("partial: upstream cut after {delivered} audio bytes ({why})"),
                    Measure::DeliveredPart,
                ),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MP3: AudioShape = AudioShape {
        format: AudioFormat::Mp3,
        sample_rate: 32_000,
        bitrate: 128_000,
        speed: 1.0,
    };

    #[test]
    fn a_whole_stream_is_charged_what_the_upstream_reported() {
        assert_eq!(
            characters(&StreamEnd::Complete, Some(120), 100, 10, 10, MP3),
            (120, Basis::default())
        );
        let (n, basis) = characters(&StreamEnd::Complete, None, 100, 10, 10, MP3);
        assert_eq!(n, 100);
        assert!(basis.estimated);
    }

    #[test]
    fn a_cut_stream_is_charged_at_the_nominal_rate_up_to_the_local_count() {
        // Two seconds of 128 kbit/s MP3: 30 characters at speed 1.
        let cut = StreamEnd::Cut("reset".into());
        assert_eq!(characters(&cut, None, 100, 32_000, 0, MP3).0, 30);
        assert_eq!(characters(&cut, None, 20, 32_000, 0, MP3).0, 20);
        assert_eq!(characters(&cut, Some(5), 100, 0, 0, MP3).0, 0);
    }

    proptest! {
        /// The adversary: a client that leaves at any moment. Its share never exceeds what the
        /// upstream billed for the whole, is zero when nothing was delivered, and is the whole
        /// when everything was.
        #[test]
        fn a_departed_client_pays_its_share_and_never_more(
            billed in 0u64..1_000_000,
            total in 1u64..10_000_000,
            taken in 0u64..=10_000_000,
        ) {
            let delivered = taken.min(total);
            let (share, basis) =
                characters(&StreamEnd::ClientGone, Some(billed), 0, delivered, total, MP3);
            prop_assert!(share <= billed);
            prop_assert!(!basis.estimated);
            if delivered == 0 { prop_assert_eq!(share, 0); }
            if delivered == total { prop_assert_eq!(share, billed); }
            // Rounded up, never by more than one character.
            let exact = u128::from(billed) * u128::from(delivered);
            prop_assert!(u128::from(share) * u128::from(total) >= exact);
            prop_assert!(u128::from(share) * u128::from(total) < exact + u128::from(total));
        }

        /// A cut stream is never charged more than the gateway's own count of the text, whatever
        /// the upstream sent.
        #[test]
        fn a_cut_stream_never_costs_more_than_the_text(
            local in 0u64..100_000,
            delivered in 0u64..u64::MAX,
            speed in 0.5f64..=2.0,
        ) {
            let shape = AudioShape { speed, ..MP3 };
            let (n, basis) = characters(&StreamEnd::Cut("x".into()), None, local, delivered, 0, shape);
            prop_assert!(n <= local);
            prop_assert!(basis.estimated);
        }
    }
}
