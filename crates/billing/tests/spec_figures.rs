//! The specification's own figures, replayed (docs/api.md §8, DESIGN §4, wire-formats §5.5).

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use tollgate_billing::{
    Amount, BillingError, ClipSeries, ClipTier, Decimal, FrameSize, Meter, PriceBook, Tariff,
    Usage, audio_seconds, clip_frame_size, clip_max_reference_seconds, clip_token_estimate,
    clip_token_estimate_with_reference, speech_characters, video_seconds,
};

fn dec(s: &str) -> Decimal {
    Decimal::from_str_exact(s).unwrap()
}

fn amount(s: &str) -> Amount {
    s.parse().unwrap()
}

// --- Rules 4–5: clip token estimates ------------------------------------------------------------

#[test]
fn rule_4_480p_for_4_seconds_is_about_40000_tokens() {
    let size = clip_frame_size("480p", "16:9").unwrap();
    assert_eq!(size, FrameSize::new(864, 496));
    let tokens = clip_token_estimate(size, 4);
    // "480p for 4 seconds is about 40,000 tokens" (docs/api.md §8 rule 4) ...
    assert!((38_000..=42_000).contains(&tokens), "{tokens}");
    // ... exactly 864 × 496 × 97 / 1024 = 40594.5, rounded up.
    assert_eq!(tokens, 40_595);
}

#[test]
fn measured_720p_figures() {
    let size = clip_frame_size("720p", "16:9").unwrap();
    assert_eq!(size, FrameSize::new(1280, 720));
    assert_eq!(clip_token_estimate(size, 5), 108_900);
    assert_eq!(clip_token_estimate(size, 4), 87_300);
    assert_eq!(clip_token_estimate_with_reference(size, 4, 4), 173_700);
    assert_eq!(clip_token_estimate_with_reference(size, 5, 0), 108_900);
}

#[test]
fn rule_5_reference_hold_uses_the_series_maximum() {
    assert_eq!(clip_max_reference_seconds(ClipSeries::V2_0), 15);
    assert_eq!(clip_max_reference_seconds(ClipSeries::V2_5), 30);
}

// --- Rule 1: CJK characters count 2 ---------------------------------------------------------------

#[test]
fn rule_1_cjk_counts_two() {
    assert_eq!(speech_characters("你好, world"), 11);
    assert_eq!(speech_characters("こんにちは"), 10); // hiragana
    assert_eq!(speech_characters("カタカナ"), 8); // katakana
    assert_eq!(speech_characters("ｶﾀｶﾅ"), 8); // halfwidth katakana
    assert_eq!(speech_characters("안녕하세요"), 10); // hangul syllables
    assert_eq!(speech_characters("ㄱㅏ"), 4); // hangul compatibility jamo
    assert_eq!(speech_characters("，。"), 4); // fullwidth comma, ideographic full stop
    assert_eq!(speech_characters("「」、"), 6); // CJK brackets and comma
    assert_eq!(speech_characters("𠀀"), 2); // Extension B
    assert_eq!(speech_characters("豈"), 2); // compatibility ideograph U+F900
}

#[test]
fn rule_1_everything_else_counts_one() {
    assert_eq!(speech_characters(""), 0);
    assert_eq!(speech_characters("😀"), 1);
    assert_eq!(speech_characters("hello, world!"), 13);
    assert_eq!(speech_characters("café"), 4);
    assert_eq!(speech_characters("Привет"), 6);
    assert_eq!(speech_characters("mixed 日本 text"), 5 + 1 + 4 + 1 + 4);
}

// --- Rules 2 and 6: seconds round up --------------------------------------------------------------

#[test]
fn rule_2_audio_seconds_round_up() {
    assert_eq!(audio_seconds(Duration::ZERO), 0);
    assert_eq!(audio_seconds(Duration::from_millis(1)), 1);
    assert_eq!(audio_seconds(Duration::from_millis(3_200)), 4);
    assert_eq!(audio_seconds(Duration::from_secs(4)), 4);
    assert_eq!(audio_seconds(Duration::new(4, 1)), 5);
}

#[test]
fn rule_6_video_seconds_round_up_with_a_minimum_of_one() {
    assert_eq!(video_seconds(Duration::ZERO), 1);
    assert_eq!(video_seconds(Duration::from_millis(200)), 1);
    assert_eq!(video_seconds(Duration::from_secs(1)), 1);
    assert_eq!(video_seconds(Duration::from_millis(5_500)), 6);
    assert_eq!(video_seconds(Duration::new(4, 1)), 5);
}

// --- Rule 7: thinking tokens are output tokens ----------------------------------------------------

#[test]
fn rule_7_thinking_tokens_are_output_tokens() {
    let tariff = Tariff::TextTokens {
        input_per_million_tokens: dec("1.25"),
        output_per_million_tokens: dec("10"),
    };
    let (candidates, thoughts) = (20, 5);
    let usage = Usage::TextTokens {
        input: 10,
        output: candidates + thoughts,
    };
    // 10 × 1.25 / 10⁶ + 25 × 10 / 10⁶ = 0.0000125 + 0.00025
    let expected = amount("0.0000125").checked_add(amount("0.00025")).unwrap();
    assert_eq!(expected, amount("0.0002625"));
    assert_eq!(tariff.charge(&usage), Ok(expected));
}

// --- Rule 5: the reference-video tier at 60 % ------------------------------------------------------

#[test]
fn rule_5_reference_video_tier_costs_sixty_percent() {
    let tariff: Tariff =
        serde_json::from_str(r#"{"meter":"video_tokens","per_million_tokens":"7"}"#).unwrap();
    let tokens = 173_700;
    let standard = tariff
        .charge(&Usage::VideoTokens {
            tokens,
            tier: ClipTier::Standard,
        })
        .unwrap();
    let reference = tariff
        .charge(&Usage::VideoTokens {
            tokens,
            tier: ClipTier::ReferenceVideo,
        })
        .unwrap();
    assert_eq!(standard, amount("1.2159")); // 173700 × 7 / 10⁶
    assert_eq!(reference, amount("0.72954")); // × 0.6
    assert_eq!(reference.to_decimal(), standard.to_decimal() * dec("0.6"));
}

#[test]
fn rule_5_ratio_is_configurable() {
    let tariff = Tariff::VideoTokens {
        per_million_tokens: dec("10"),
        reference_video_ratio: dec("0.55"),
    };
    let usage = Usage::VideoTokens {
        tokens: 1_000_000,
        tier: ClipTier::ReferenceVideo,
    };
    assert_eq!(tariff.charge(&usage), Ok(amount("5.5")));
}

// --- DESIGN §4: charges round up to the nano-unit, once ---------------------------------------------

#[test]
fn one_token_at_two_cents_per_million_is_twenty_nanos() {
    let tariff = Tariff::Tokens {
        per_million_tokens: dec("0.02"),
    };
    assert_eq!(tariff.charge(&Usage::Tokens(1)), Ok(Amount::from_nanos(20)));
}

#[test]
fn a_fraction_of_a_nano_rounds_up_to_one() {
    // 1 token at 0.0001 per million = 10⁻¹⁰: a tenth of a nano-unit.
    let tariff = Tariff::Tokens {
        per_million_tokens: dec("0.0001"),
    };
    assert_eq!(tariff.charge(&Usage::Tokens(1)), Ok(Amount::from_nanos(1)));
    // 1.5 nano-units rounds up to 2, never down to 1.
    let tariff = Tariff::Tokens {
        per_million_tokens: dec("0.0015"),
    };
    assert_eq!(tariff.charge(&Usage::Tokens(1)), Ok(Amount::from_nanos(2)));
    // 1 second at 0.0000000001 per second, likewise.
    let tariff = Tariff::AudioSeconds {
        per_second: dec("0.0000000001"),
    };
    assert_eq!(
        tariff.charge(&Usage::AudioSeconds(1)),
        Ok(Amount::from_nanos(1))
    );
}

#[test]
fn rounding_happens_once_not_per_component() {
    // Input and output each cost half a nano-unit: one nano in total, not two.
    let tariff = Tariff::TextTokens {
        input_per_million_tokens: dec("0.0005"),
        output_per_million_tokens: dec("0.0005"),
    };
    let usage = Usage::TextTokens {
        input: 1,
        output: 1,
    };
    assert_eq!(tariff.charge(&usage), Ok(Amount::from_nanos(1)));
}

#[test]
fn every_rule_charges_exactly() {
    let book: PriceBook = serde_json::from_value(serde_json::json!({
        "speech": {"meter": "characters", "per_million_characters": "100"},
        "asr": {"meter": "audio_seconds", "per_second": "0.0001"},
        "embed": {"meter": "tokens", "per_million_tokens": "0.02"},
        "clip": {"meter": "video_tokens", "per_million_tokens": "7", "reference_video_ratio": "0.6"},
        "video": {"meter": "video_seconds", "per_second": "0.05"},
        "genai": {"meter": "text_tokens", "input_per_million_tokens": "1.25", "output_per_million_tokens": "10"},
    }))
    .unwrap();
    let charge = |model: &str, usage: Usage| book.charge(model, &usage).unwrap();
    assert_eq!(charge("speech", Usage::Characters(11)), amount("0.0011"));
    assert_eq!(charge("asr", Usage::AudioSeconds(4)), amount("0.0004"));
    assert_eq!(charge("embed", Usage::Tokens(1_000)), amount("0.00002"));
    assert_eq!(
        charge(
            "clip",
            Usage::VideoTokens {
                tokens: 108_900,
                tier: ClipTier::Standard
            }
        ),
        amount("0.7623")
    );
    assert_eq!(charge("video", Usage::VideoSeconds(6)), amount("0.3"));
    assert_eq!(
        charge(
            "genai",
            Usage::TextTokens {
                input: 1_000_000,
                output: 1_000_000
            }
        ),
        amount("11.25")
    );
}

// --- Errors ---------------------------------------------------------------------------------------

#[test]
fn usage_on_the_wrong_meter_is_a_mismatch() {
    let tariff = Tariff::Tokens {
        per_million_tokens: dec("0.02"),
    };
    assert_eq!(
        tariff.charge(&Usage::Characters(11)),
        Err(BillingError::MeterMismatch {
            tariff: Meter::Tokens,
            usage: Meter::Characters,
        })
    );
}

#[test]
fn a_model_without_a_price_is_unknown() {
    let book = PriceBook::new();
    let err = book.charge("nope", &Usage::Tokens(1)).unwrap_err();
    assert_eq!(err, BillingError::UnknownModel("nope".to_owned()));
    assert_eq!(err.to_string(), "no price is set for model \"nope\"");
}

#[test]
fn overflow_is_an_error_not_a_panic() {
    let tariff = Tariff::video_seconds(dec("1000000"));
    assert_eq!(
        tariff.charge(&Usage::VideoSeconds(u64::MAX)),
        Err(BillingError::Overflow)
    );
}

// --- Serde forms -------------------------------------------------------------------------------------

#[test]
fn a_tariff_reads_from_a_config_value() {
    let value = serde_json::json!({"meter": "tokens", "per_million_tokens": "0.02"});
    let tariff: Tariff = serde_json::from_value(value).unwrap();
    assert_eq!(
        tariff,
        Tariff::Tokens {
            per_million_tokens: dec("0.02")
        }
    );
}

#[test]
fn amounts_are_decimal_strings_on_the_wire() {
    let json = serde_json::json!({"name": "a", "balance": Amount::from_nanos(999_874_000)});
    assert_eq!(json["balance"], serde_json::Value::from("0.999874"));
    let back: Amount = serde_json::from_value(json["balance"].clone()).unwrap();
    assert_eq!(back, Amount::from_nanos(999_874_000));
}
