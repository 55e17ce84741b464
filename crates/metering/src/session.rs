//! A live voice session's meter (docs/decisions.md, "Live voice sessions"): what the gateway
//! relayed each way, and from it the most each response may be charged — a bound by token
//! class that no figure of the vendor's can pass.
//!
//! A response of a session reads the whole conversation so far as its input: everything the
//! client put in (audio heard, text, images) and everything said before it (the vendor's earlier
//! audio and text come back as input of later turns; cached or not, each is a token of its
//! modality). Its output is what it delivered — the audio and text the gateway relayed to the
//! client. So the bound of a response is, by modality:
//!
//! - audio in: the seconds heard at the model's input rate, and the seconds spoken before at
//!   the dearer of its two rates, with [`PROMPT_MARGIN_PERCENT`];
//! - text in: the bytes of text put in and said before (a token covers at least a byte of
//!   UTF-8, whatever the tokenizer), the vendor's markers around each turn, with the margin;
//! - images in: each image at the model's most tokens per image;
//! - audio out: the seconds the response delivered at the model's output rate, with the margin;
//! - text out: the bytes of text the response delivered;
//! - images out: none (a voice session draws nothing).
//!
//! Cached input is a part of its modality's input (`tollgate_billing::token_class`), so the
//! bound prices each input modality at the dearer of its cached and uncached prices
//! ([`ResponseBound::amount`]): whatever split of cached and uncached tokens a vendor reports
//! within the modality's bound, its charge is within the amount.

use tollgate_billing::token_class::Reported;
use tollgate_billing::{Amount, BillingError, Tariff, TokenClass, TokenClasses, Usage};
use tollgate_native_genai::live::LiveUsage;
use tollgate_realtime::server::ResponseUsage;

use crate::prompt::{PROMPT_MARGIN_PERCENT, TOKENS_PER_CONTENT, TOKENS_PER_REQUEST};

/// A model's audio and image token rates, as its vendor documents them (the model's
/// configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionRates {
    /// Audio tokens a second of audio heard (OpenAI's realtime models: 10, one per 100 ms).
    pub audio_in_per_second: u64,
    /// Audio tokens a second of audio spoken (OpenAI's realtime models: 20, one per 50 ms).
    pub audio_out_per_second: u64,
    /// The most tokens one image may count.
    pub tokens_per_image: u64,
}

/// What a session relayed, and the response in progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionMeter {
    rates: SessionRates,
    /// Milliseconds of audio the client put in.
    heard_ms: u64,
    /// Milliseconds of audio earlier responses delivered.
    spoken_ms: u64,
    /// Bytes of text put in: the client's, and the session as the vendor states it.
    text_in_bytes: u64,
    /// Bytes of text earlier responses delivered.
    said_bytes: u64,
    /// Images put in.
    images: u64,
    /// Events that put something in, and responses: each a turn the vendor marks.
    turns: u64,
    /// The responses in progress, and what each has delivered: a vendor may run more than one
    /// at a time (OpenAI's out-of-band responses), each reading the whole conversation.
    responding: Vec<Responding>,
}

/// The most responses a session meters apart; a vendor that runs more at once has what the
/// others deliver counted with the latest (their sum is bounded the same, by what was
/// relayed, and the meter's memory stays small).
pub const MOST_RESPONSES: usize = 8;

/// A response in progress: its key (the vendor's id, hashed by the protocol; `0` where a
/// protocol names none) and what it delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Responding {
    key: u64,
    /// Milliseconds of audio delivered.
    spoken_ms: u64,
    /// Bytes of text delivered.
    said_bytes: u64,
}

/// The most one response may count of each modality (see the [module documentation](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ResponseBound {
    /// Text tokens read, cached or not.
    pub text_in: u64,
    /// Audio tokens heard, cached or not.
    pub audio_in: u64,
    /// Image tokens seen, cached or not.
    pub image_in: u64,
    /// Text tokens written.
    pub text_out: u64,
    /// Audio tokens spoken.
    pub audio_out: u64,
    /// Image tokens drawn (none in a voice session; an image call's, `crate::image`).
    pub image_out: u64,
}

impl SessionMeter {
    /// A session that has relayed nothing yet.
    pub const fn new(rates: SessionRates) -> SessionMeter {
        SessionMeter {
            rates,
            heard_ms: 0,
            spoken_ms: 0,
            text_in_bytes: 0,
            said_bytes: 0,
            images: 0,
            turns: 0,
            responding: Vec::new(),
        }
    }

    /// What one event put into the conversation: a client's (audio heard, text, images), or
    /// the session as the vendor states it (`session.created|updated`: its instructions, tools
    /// and settings, which the vendor reads as input though the client never sent them).
    pub fn heard(&mut self, audio_ms: u64, text_bytes: u64, images: u64) {
        self.heard_ms = self.heard_ms.saturating_add(audio_ms);
        self.text_in_bytes = self.text_in_bytes.saturating_add(text_bytes);
        self.images = self.images.saturating_add(images);
        if audio_ms > 0 || text_bytes > 0 || images > 0 {
            self.turns = self.turns.saturating_add(1);
        }
    }

    /// A response began (`response.created`): it is in progress from now, though it has
    /// delivered nothing yet.
    pub fn started(&mut self, response: u64) {
        self.responding_mut(response);
    }

    /// What the vendor delivered of the response `response`: audio and text relayed to the
    /// client.
    pub fn delivered(&mut self, response: u64, audio_ms: u64, text_bytes: u64) {
        let responding = self.responding_mut(response);
        responding.spoken_ms = responding.spoken_ms.saturating_add(audio_ms);
        responding.said_bytes = responding.said_bytes.saturating_add(text_bytes);
    }

    /// The response in progress under `key`, begun now if it was not (folded into the latest
    /// when [`MOST_RESPONSES`] are already in progress).
    fn responding_mut(&mut self, key: u64) -> &mut Responding {
        let at = match self.responding.iter().position(|r| r.key == key) {
            Some(at) => at,
            None if self.responding.len() < MOST_RESPONSES => {
                self.responding.push(Responding {
                    key,
                    spoken_ms: 0,
                    said_bytes: 0,
                });
                self.responding.len() - 1
            }
            None => self.responding.len() - 1,
        };
        &mut self.responding[at]
    }

    /// Whether a response is in progress.
    pub fn responding(&self) -> bool {
        !self.responding.is_empty()
    }

    /// The bound of the response `response`, now done; what it delivered becomes part of the
    /// conversation. A response never begun is bounded by the conversation alone.
    pub fn close_response(&mut self, response: u64) -> ResponseBound {
        let done = match self.responding.iter().position(|r| r.key == response) {
            Some(at) => self.responding.remove(at),
            None => Responding {
                key: response,
                spoken_ms: 0,
                said_bytes: 0,
            },
        };
        self.close(done)
    }

    /// The bound of every response in progress, together (each reads the conversation): the
    /// session ends with them undone.
    pub fn close_all(&mut self) -> ResponseBound {
        let undone = std::mem::take(&mut self.responding);
        undone
            .into_iter()
            .map(|r| self.close(r))
            .fold(ResponseBound::default(), |sum, b| sum.plus(&b))
    }

    fn close(&mut self, done: Responding) -> ResponseBound {
        let bound = self.bound_of(&done);
        self.spoken_ms = self.spoken_ms.saturating_add(done.spoken_ms);
        self.said_bytes = self.said_bytes.saturating_add(done.said_bytes);
        self.turns = self.turns.saturating_add(1);
        bound
    }

    /// What the session's hold must cover: the bound of every response in progress as it
    /// stands, or of the next one (the conversation so far) when none is.
    pub fn bound(&self) -> ResponseBound {
        let next = Responding {
            key: 0,
            spoken_ms: 0,
            said_bytes: 0,
        };
        match self.responding.as_slice() {
            [] => self.bound_of(&next),
            responding => responding
                .iter()
                .map(|r| self.bound_of(r))
                .fold(ResponseBound::default(), |sum, b| sum.plus(&b)),
        }
    }

    /// The bound of one response: the conversation so far in, what it delivered out.
    fn bound_of(&self, response: &Responding) -> ResponseBound {
        let rates = self.rates;
        let dearer_audio = rates.audio_in_per_second.max(rates.audio_out_per_second);
        let audio_in = tokens_of(self.heard_ms, rates.audio_in_per_second)
            .saturating_add(tokens_of(self.spoken_ms, dearer_audio));
        let markers = TOKENS_PER_CONTENT
            .saturating_mul(self.turns.saturating_add(1))
            .saturating_add(TOKENS_PER_REQUEST);
        ResponseBound {
            text_in: with_margin(
                self.text_in_bytes
                    .saturating_add(self.said_bytes)
                    .saturating_add(markers),
            ),
            audio_in: with_margin(audio_in),
            image_in: self.images.saturating_mul(rates.tokens_per_image),
            text_out: response.said_bytes,
            audio_out: with_margin(tokens_of(response.spoken_ms, rates.audio_out_per_second)),
            image_out: 0,
        }
    }

    /// Milliseconds of audio heard and spoken in the whole session, for its usage record.
    pub fn audio_ms(&self) -> (u64, u64) {
        let in_progress = self
            .responding
            .iter()
            .fold(0u64, |sum, r| sum.saturating_add(r.spoken_ms));
        (self.heard_ms, self.spoken_ms.saturating_add(in_progress))
    }
}

/// Tokens `ms` of audio count at `per_second`, rounded up.
fn tokens_of(ms: u64, per_second: u64) -> u64 {
    let whole = (ms / 1_000).saturating_mul(per_second);
    whole.saturating_add(((ms % 1_000) * per_second).div_ceil(1_000))
}

fn with_margin(tokens: u64) -> u64 {
    tokens.saturating_mul(PROMPT_MARGIN_PERCENT).div_ceil(100)
}

impl ResponseBound {
    /// Two bounds together, modality by modality.
    fn plus(&self, other: &ResponseBound) -> ResponseBound {
        ResponseBound {
            text_in: self.text_in.saturating_add(other.text_in),
            audio_in: self.audio_in.saturating_add(other.audio_in),
            image_in: self.image_in.saturating_add(other.image_in),
            text_out: self.text_out.saturating_add(other.text_out),
            audio_out: self.audio_out.saturating_add(other.audio_out),
            image_out: self.image_out.saturating_add(other.image_out),
        }
    }

    /// The dearest quantity within the bound at `tariff`: each input modality's tokens all in
    /// the dearer of its cached and uncached classes.
    pub fn dearest(&self, tariff: &Tariff) -> TokenClasses {
        let dearer =
            |uncached: TokenClass, cached: TokenClass| dearest(tariff, &[uncached, cached]);
        let mut usage = TokenClasses::default();
        usage.add(
            dearer(TokenClass::TextIn, TokenClass::CachedTextIn),
            self.text_in,
        );
        usage.add(
            dearer(TokenClass::AudioIn, TokenClass::CachedAudioIn),
            self.audio_in,
        );
        usage.add(
            dearer(TokenClass::ImageIn, TokenClass::CachedImageIn),
            self.image_in,
        );
        usage.add(TokenClass::TextOut, self.text_out);
        usage.add(TokenClass::AudioOut, self.audio_out);
        usage.add(TokenClass::ImageOut, self.image_out);
        usage
    }

    /// The most the response may be charged at `tariff`: the price of [`ResponseBound::dearest`].
    /// Every usage within the bound — each modality's input, cached and uncached together, and
    /// each output at most the bound's — prices at most this.
    pub fn amount(&self, tariff: &Tariff) -> Result<Amount, BillingError> {
        tariff.charge(&Usage::TokenClasses(self.dearest(tariff)))
    }

    /// `usage` cut to the bound modality by modality — each input's cached part kept first
    /// (the cheaper), each output at most the bound's — and, where anything was cut, the
    /// anomaly that says what. A vendor that overstates one class is charged its honest
    /// figures for the others.
    ///
    /// ```
    /// use tollgate_billing::TokenClasses;
    /// use tollgate_metering::session::ResponseBound;
    ///
    /// let bound = ResponseBound { text_in: 20, image_out: 196, ..Default::default() };
    /// let claim = TokenClasses { text_in: 3, image_out: 90_000, ..Default::default() };
    /// let (capped, anomaly) = bound.cap(&claim);
    /// assert_eq!((capped.text_in, capped.image_out), (3, 196));
    /// assert!(anomaly.unwrap().contains("image_out 90000"));
    /// ```
    pub fn cap(&self, usage: &TokenClasses) -> (TokenClasses, Option<String>) {
        let mut capped = *usage;
        let mut cut = Vec::new();
        let inputs = [
            (TokenClass::TextIn, TokenClass::CachedTextIn, self.text_in),
            (
                TokenClass::AudioIn,
                TokenClass::CachedAudioIn,
                self.audio_in,
            ),
            (
                TokenClass::ImageIn,
                TokenClass::CachedImageIn,
                self.image_in,
            ),
        ];
        for (uncached, cached, most) in inputs {
            let (u, c) = (usage.get(uncached), usage.get(cached));
            if u.saturating_add(c) > most {
                let kept = c.min(most);
                capped.set(cached, kept);
                capped.set(uncached, most - kept);
                cut.push(format!("{uncached} {}", u.saturating_add(c)));
            }
        }
        for (class, most) in [
            (TokenClass::TextOut, self.text_out),
            (TokenClass::AudioOut, self.audio_out),
            (TokenClass::ImageOut, self.image_out),
        ] {
            if usage.get(class) > most {
                capped.set(class, most);
                cut.push(format!("{class} {}", usage.get(class)));
            }
        }
        let anomaly = (!cut.is_empty()).then(|| {
            format!(
                "upstream usage claimed {}, above what was relayed; cut to the bound",
                cut.join(", ")
            )
        });
        (capped, anomaly)
    }

    /// Whether `usage` keeps within the bound, modality by modality.
    pub fn admits(&self, usage: &TokenClasses) -> bool {
        usage.text_in.saturating_add(usage.cached_text_in) <= self.text_in
            && usage.audio_in.saturating_add(usage.cached_audio_in) <= self.audio_in
            && usage.image_in.saturating_add(usage.cached_image_in) <= self.image_in
            && usage.text_out <= self.text_out
            && usage.audio_out <= self.audio_out
            && usage.image_out <= self.image_out
    }
}

/// A response's usage as its vendor claims it, in the terms both live protocols report:
/// totals in and out, each split by modality, the cached input a part of the input. OpenAI's
/// `response.done` usage and Gemini Live's `usageMetadata` each read into one
/// (`From` below), and [`Claim::classes`] prices either the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Claim {
    /// Input tokens, cached ones included.
    pub input: u64,
    /// Input tokens by modality: text, audio, image.
    pub input_by: [u64; 3],
    /// Cached input tokens by modality: text, audio, image.
    pub cached_by: [u64; 3],
    /// Output tokens.
    pub output: u64,
    /// Output tokens by modality: text, audio, image.
    pub output_by: [u64; 3],
}

impl From<&ResponseUsage> for Claim {
    fn from(usage: &ResponseUsage) -> Claim {
        let input = &usage.input_token_details;
        let cached = &input.cached_tokens_details;
        let output = &usage.output_token_details;
        Claim {
            input: usage.input_tokens,
            input_by: [input.text_tokens, input.audio_tokens, input.image_tokens],
            cached_by: [cached.text_tokens, cached.audio_tokens, cached.image_tokens],
            output: usage.output_tokens,
            output_by: [output.text_tokens, output.audio_tokens, 0],
        }
    }
}

/// Gemini's counts: tool results are prompt read as input, video frames are images, documents
/// are text; thinking tokens are output the model wrote as text and never sent (so a claim of
/// them beyond the text delivered is cut at the bound, docs/decisions.md).
impl From<&LiveUsage> for Claim {
    fn from(usage: &LiveUsage) -> Claim {
        let by = by_modality;
        let (prompt, tools) = (
            by(&usage.prompt_tokens_details),
            by(&usage.tool_use_prompt_tokens_details),
        );
        let response = by(&usage.response_tokens_details);
        Claim {
            input: usage
                .prompt_token_count
                .saturating_add(usage.tool_use_prompt_token_count),
            input_by: [0, 1, 2].map(|i| prompt[i].saturating_add(tools[i])),
            cached_by: by(&usage.cache_tokens_details),
            output: usage
                .response_token_count
                .saturating_add(usage.thoughts_token_count),
            output_by: [
                response[0].saturating_add(usage.thoughts_token_count),
                response[1],
                response[2],
            ],
        }
    }
}

/// Gemini's counts by modality as a claim's three (text, audio, image): documents are text,
/// video frames images.
pub(crate) fn by_modality(details: &[tollgate_native_genai::live::ModalityCount]) -> [u64; 3] {
    let of = |m: &str| LiveUsage::of(details, m);
    [
        of("TEXT").saturating_add(of("DOCUMENT")),
        of("AUDIO"),
        of("IMAGE").saturating_add(of("VIDEO")),
    ]
}

impl Claim {
    /// What the claim bills, by class, at `tariff`: each modality's cached part apart from the
    /// rest. The vendor's totals count every token it bills, so none is left out for lack of a
    /// modality: input or output tokens the details do not attribute are counted in the
    /// dearest class of their side the tariff prices, and cached tokens the details do not
    /// attribute are not believed cached (no discount the vendor did not itemise). What the
    /// claim adds up to is then capped by the response's bound ([`ResponseBound::amount`]).
    ///
    /// ```
    /// use tollgate_metering::session::Claim;
    /// use tollgate_realtime::server::ResponseUsage;
    ///
    /// let tariff = serde_json::from_str(r#"{"meter":"token_classes","per_million":{"text_in":"4","audio_in":"32","text_out":"16","audio_out":"64"}}"#)?;
    /// let usage: ResponseUsage = serde_json::from_str(r#"{"input_tokens":130,"output_tokens":900,
    ///     "input_token_details":{"text_tokens":20,"audio_tokens":100,"cached_tokens":15,"cached_tokens_details":{"text_tokens":10}},
    ///     "output_token_details":{"text_tokens":60,"audio_tokens":800}}"#)?;
    /// let classes = Claim::from(&usage).classes(&tariff);
    /// // 10 input tokens no modality claims: at the dearest input price, audio's.
    /// assert_eq!((classes.text_in, classes.cached_text_in, classes.audio_in), (10, 10, 110));
    /// // 40 output tokens likewise at audio's; 5 cached tokens not itemised stay uncached.
    /// assert_eq!((classes.text_out, classes.audio_out, classes.total()), (60, 840, 1_030));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn classes(&self, tariff: &Tariff) -> TokenClasses {
        let reported = |i: usize| Reported {
            total: self.input_by[i],
            cached: self.cached_by[i].min(self.input_by[i]),
        };
        let mut classes =
            TokenClasses::from_parts(reported(0), reported(1), reported(2), self.output_by);
        let attributed_in = self.input_by.iter().fold(0u64, |s, n| s.saturating_add(*n));
        let attributed_out = self
            .output_by
            .iter()
            .fold(0u64, |s, n| s.saturating_add(*n));
        classes.add(
            dearest(
                tariff,
                &[TokenClass::TextIn, TokenClass::AudioIn, TokenClass::ImageIn],
            ),
            self.input.saturating_sub(attributed_in),
        );
        classes.add(
            dearest(
                tariff,
                &[
                    TokenClass::TextOut,
                    TokenClass::AudioOut,
                    TokenClass::ImageOut,
                ],
            ),
            self.output.saturating_sub(attributed_out),
        );
        classes
    }
}

/// The class of `classes` the tariff prices dearest (the first, when it prices none of them).
pub(crate) fn dearest(tariff: &Tariff, classes: &[TokenClass]) -> TokenClass {
    classes
        .iter()
        .copied()
        .filter_map(|class| tariff.class_price(class).map(|price| (class, price)))
        .reduce(|best, next| if next.1 > best.1 { next } else { best })
        .map_or(
            classes.first().copied().unwrap_or(TokenClass::TextIn),
            |(class, _)| class,
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use tollgate_billing::Decimal;

    const OPENAI: SessionRates = SessionRates {
        audio_in_per_second: 10,
        audio_out_per_second: 20,
        tokens_per_image: 1_000,
    };

    fn realtime(cached_audio: &str) -> Tariff {
        serde_json::from_str(&format!(
            r#"{{"meter":"token_classes","per_million":{{"text_in":"4","cached_text_in":"0.4","audio_in":"32","cached_audio_in":"{cached_audio}","image_in":"5","text_out":"16","audio_out":"64"}}}}"#
        ))
        .unwrap()
    }

    #[test]
    fn a_response_reads_the_conversation_so_far_and_outputs_what_it_delivered() {
        let mut meter = SessionMeter::new(OPENAI);
        meter.heard(0, 1_000, 0); // the session as the vendor states it
        meter.heard(3_000, 0, 0); // three seconds heard
        meter.delivered(1, 2_000, 120); // two seconds spoken, its transcript
        let first = meter.close_response(1);
        // 3 s × 10 = 30 audio tokens, × 1.25.
        assert_eq!(first.audio_in, 38);
        // 1,000 bytes + 4 × 3 turns + 8, × 1.25.
        assert_eq!(first.text_in, (1_000 + 12 + 8) * 125 / 100);
        assert_eq!(
            (first.audio_out, first.text_out, first.image_in),
            (50, 120, 0)
        );
        // The next response reads the first one's audio back, at the dearer rate.
        meter.heard(1_000, 0, 1);
        let second = meter.close_response(2);
        assert_eq!(second.audio_in, ((30 + 40 + 10) * 125_u64).div_ceil(100));
        assert_eq!((second.audio_out, second.text_out), (0, 0));
        assert_eq!(second.image_in, 1_000);
    }

    #[test]
    fn responses_side_by_side_are_each_bounded_by_what_they_delivered() {
        let mut meter = SessionMeter::new(OPENAI);
        meter.heard(2_000, 0, 0);
        let alone = meter.bound();
        // The conversation's response and an out-of-band one, their deltas interleaved.
        meter.started(1);
        meter.delivered(1, 1_000, 10);
        meter.delivered(2, 3_000, 40);
        meter.delivered(1, 1_000, 10);
        // The hold covers both: each reads the conversation, each outputs its own.
        let both = meter.bound();
        assert_eq!(both.audio_in, 2 * alone.audio_in);
        assert_eq!((both.audio_out, both.text_out), (50 + 75, 60));
        // The out-of-band one done first is bounded by its own deltas, not the other's.
        let second = meter.close_response(2);
        assert_eq!((second.audio_out, second.text_out), (75, 40));
        assert_eq!(second.audio_in, alone.audio_in);
        let first = meter.close_response(1);
        assert_eq!((first.audio_out, first.text_out), (50, 20));
        // What it spoke is read back by the first; the session heard 2 s and spoke 5 s.
        assert!(first.audio_in > alone.audio_in);
        assert_eq!(meter.audio_ms(), (2_000, 5_000));
        assert!(!meter.responding());
    }

    #[test]
    fn a_vendor_naming_endless_responses_is_metered_in_a_few() {
        let mut meter = SessionMeter::new(OPENAI);
        for key in 0..1_000 {
            meter.delivered(key, 10, 1);
        }
        assert_eq!(meter.responding.len(), MOST_RESPONSES);
        // Nothing delivered is lost: the session ends with all of it bounded.
        let all = meter.close_all();
        assert_eq!(all.text_out, 1_000);
        assert_eq!(meter.audio_ms(), (0, 10_000));
    }

    #[test]
    fn the_bound_prices_each_input_modality_at_its_dearer_class() {
        let bound = ResponseBound {
            audio_in: 1_000_000,
            ..ResponseBound::default()
        };
        assert_eq!(
            bound.amount(&realtime("0.4")).unwrap(),
            Amount::from_nanos(32_000_000_000)
        );
        // A cached price above the uncached one (an operator's slip) still bounds the charge.
        assert_eq!(
            bound.amount(&realtime("40")).unwrap(),
            Amount::from_nanos(40_000_000_000)
        );
    }

    proptest! {
        /// Every token a vendor's totals bill is counted once, in some class: none dropped for
        /// lacking a modality, none counted twice for being cached.
        #[test]
        fn a_claim_counts_every_billed_token_once(n in proptest::collection::vec(0u64..1_000_000, 10)) {
            let usage = ResponseUsage {
                input_tokens: n[0],
                output_tokens: n[1],
                input_token_details: tollgate_realtime::server::InputDetails {
                    text_tokens: n[2],
                    audio_tokens: n[3],
                    image_tokens: n[4],
                    cached_tokens: n[5],
                    cached_tokens_details: tollgate_realtime::server::CachedDetails {
                        text_tokens: n[5].min(n[6]),
                        audio_tokens: n[7],
                        image_tokens: 0,
                    },
                },
                output_token_details: tollgate_realtime::server::OutputDetails {
                    text_tokens: n[8],
                    audio_tokens: n[9],
                },
            };
            let classes = Claim::from(&usage).classes(&realtime("0.4"));
            prop_assert_eq!(classes.input(), n[0].max(n[2] + n[3] + n[4]));
            prop_assert_eq!(classes.output(), n[1].max(n[8] + n[9]));
            prop_assert!(classes.cached_audio_in <= n[3]);
        }

        /// Gemini's counts likewise: every billed token once, thinking as text out.
        #[test]
        fn a_gemini_claim_counts_every_billed_token_once(n in proptest::collection::vec(0u64..1_000_000, 8)) {
            let count = |modality: &str, token_count: u64| tollgate_native_genai::live::ModalityCount {
                modality: modality.into(),
                token_count,
            };
            let usage = LiveUsage {
                prompt_token_count: n[0],
                response_token_count: n[1],
                tool_use_prompt_token_count: n[2],
                thoughts_token_count: n[3],
                prompt_tokens_details: vec![count("TEXT", n[4]), count("AUDIO", n[5])],
                response_tokens_details: vec![count("AUDIO", n[6])],
                cache_tokens_details: vec![count("AUDIO", n[7])],
                ..LiveUsage::default()
            };
            let classes = Claim::from(&usage).classes(&realtime("0.4"));
            prop_assert_eq!(classes.input(), (n[0] + n[2]).max(n[4] + n[5]));
            prop_assert_eq!(classes.output(), (n[1] + n[3]).max(n[3] + n[6]));
            prop_assert!(classes.text_out >= n[3]);
            prop_assert!(classes.cached_audio_in <= n[5]);
        }

        /// Whatever the vendor reports within the bound, modality by modality and however it
        /// splits cached from uncached, its charge is within the bound's amount.
        #[test]
        fn every_usage_the_bound_admits_prices_within_its_amount(
            heard in 0u64..600_000, spoken in 0u64..600_000, text in 0u64..100_000,
            images in 0u64..4, reported in proptest::collection::vec(0u64..2_000_000, 8),
            cached_audio in 0u32..100,
        ) {
            let mut meter = SessionMeter::new(OPENAI);
            meter.heard(heard, text, images);
            meter.delivered(7, spoken, text / 2);
            let bound = meter.close_response(7);
            let tariff = realtime(&Decimal::new(i64::from(cached_audio), 0).to_string());
            let clamp = |n: u64, most: u64| n.min(most);
            let text_in = clamp(reported[0], bound.text_in);
            let audio_in = clamp(reported[2], bound.audio_in);
            let image_in = clamp(reported[4], bound.image_in);
            let usage = TokenClasses {
                text_in: text_in - clamp(reported[1], text_in),
                cached_text_in: clamp(reported[1], text_in),
                audio_in: audio_in - clamp(reported[3], audio_in),
                cached_audio_in: clamp(reported[3], audio_in),
                image_in: image_in - clamp(reported[5], image_in),
                cached_image_in: clamp(reported[5], image_in),
                text_out: clamp(reported[6], bound.text_out),
                audio_out: clamp(reported[7], bound.audio_out),
                image_out: 0,
            };
            prop_assert!(bound.admits(&usage));
            let charged = tariff.charge(&Usage::TokenClasses(usage)).unwrap();
            prop_assert!(charged <= bound.amount(&tariff).unwrap());
        }
    }
}
