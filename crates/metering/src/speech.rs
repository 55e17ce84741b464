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
pub const NOMINAL_CHARACTERS_PER_SECOND: u64 = 15;

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
    /// Bytes a second of this format, as a fraction `(numerator, denominator)`: MP3 bitrate / 8,
    /// PCM and WAV 2 bytes a sample, FLAC assumed to compress that to 60 %.
    fn bytes_per_second(&self) -> (u128, u128) {
        let pcm = u128::from(self.sample_rate) * 2;
        match self.format {
            AudioFormat::Mp3 => (u128::from(self.bitrate), 8),
            AudioFormat::Pcm | AudioFormat::Wav => (pcm, 1),
            AudioFormat::Flac => (pcm * 3, 5),
        }
    }

    /// The characters `bytes` of this audio nominally hold: seconds × [`NOMINAL_CHARACTERS_PER_SECOND`]
    /// × speed, rounded up — exactly, in integers (the speed as the decimal the client wrote, to
    /// six places). Zero for a shape with no byte rate.
    pub fn nominal_characters(&self, bytes: u64) -> u64 {
        let (num, den) = self.bytes_per_second();
        // The speed in millionths: 1.25 → 1,250,000. Speeds are 0.5–2 (validated), so this is
        // exact for any speed a client can write with up to six decimals.
        let speed = (self.speed * 1_000_000.0).round();
        if num == 0 || !(speed.is_finite() && speed > 0.0) {
            return 0;
        }
        let speed = speed as u128;
        // bytes / (num / den) seconds × 15 × speed / 10⁶, rounded up.
        let top = u128::from(bytes) * den * u128::from(NOMINAL_CHARACTERS_PER_SECOND) * speed;
        let bottom = num * 1_000_000;
        u64::try_from(top.div_ceil(bottom)).unwrap_or(u64::MAX)
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
            let characters = shape.nominal_characters(delivered).min(local);
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
    fn the_nominal_rate_is_exact_in_every_format() {
        // 128 kbit/s MP3 is 16,000 bytes a second: 15 characters at speed 1, 16.5 → 17 at 1.1.
        assert_eq!(MP3.nominal_characters(16_000), 15);
        let faster = AudioShape { speed: 1.1, ..MP3 };
        assert_eq!(faster.nominal_characters(16_000), 17);
        // One byte more than a whole second rounds up to one character more.
        assert_eq!(MP3.nominal_characters(16_001), 16);
        let pcm = AudioShape {
            format: AudioFormat::Pcm,
            sample_rate: 24_000,
            bitrate: 0,
            speed: 1.0,
        };
        assert_eq!(pcm.nominal_characters(48_000), 15);
        let flac = AudioShape {
            format: AudioFormat::Flac,
            ..pcm
        };
        // 60 % of 48,000 bytes is a second of FLAC.
        assert_eq!(flac.nominal_characters(28_800), 15);
        assert_eq!(
            AudioShape { bitrate: 0, ..MP3 }.nominal_characters(16_000),
            0
        );
        assert_eq!(
            MP3.nominal_characters(u64::MAX),
            u64::MAX / 16_000 * 15 + 15
        );
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
