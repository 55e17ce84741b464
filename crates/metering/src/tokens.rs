//! Local token counting for holds (DESIGN §4: the local count is the hold and the fallback; the
//! upstream's usage settles). OpenAI's embedding models use `cl100k_base`.
//!
//! The count is `bpe-openai`'s: the same tokens as tiktoken (held to `tiktoken-rs` by the
//! property test below), in time linear in the text. The text is the client's, and counted
//! before anything is held, so a count that grows faster than its input is work anyone with a
//! key can ask for free (docs/decisions.md, "Counting tokens").

use bpe_openai::Tokenizer;
use tollgate_embeddings::{EmbeddingInput, InputItem};

fn cl100k() -> &'static Tokenizer {
    bpe_openai::cl100k_base()
}

/// Loads the tokenizer's tables (tens of milliseconds) so the first request does not pay for it.
pub fn warm_up() {
    let _ = cl100k().count("");
}

/// Tokens of each input of an embeddings request, in order: a string is tokenized with
/// `cl100k_base`, a token array counts its length.
pub fn count_embedding_inputs(input: &EmbeddingInput) -> Vec<usize> {
    input
        .items()
        .map(|item| match item {
            InputItem::Text(text) => cl100k().count(text),
            InputItem::Tokens(ids) => ids.len(),
        })
        .collect()
}

/// Tokens of a text by `cl100k_base`, exactly.
pub fn count_text(text: &str) -> u64 {
    cl100k().count(text) as u64
}

/// A text is estimated at one token for every this many of its bytes at least, whatever
/// `cl100k_base` counts (docs/decisions.md, "Native generation"). `cl100k_base` has single
/// tokens for long runs of one character (128 spaces, 64 `=`), which a vendor's tokenizer
/// splits into many: a megabyte of spaces is 8,192 tokens to it and 262,144 to the simulator,
/// which counts the vendor's `ceil(bytes / 4)`. Prose, JSON, base64 and other scripts run 1.5
/// to 5 bytes a token, and code 3 to 7; only text made mostly of runs of one character
/// (indentation 32 deep is 10 bytes a token) passes 8, and then the floor counts it.
pub const BYTES_PER_TOKEN_AT_MOST: u64 = 8;

/// The tokens a vendor whose tokenizer is not at hand is estimated to count for `text` (native
/// generation's hold, and its count when the vendor reports no usage): the `cl100k_base` count,
/// never under one token per [`BYTES_PER_TOKEN_AT_MOST`] bytes. The client writes the text (and
/// asks for the answer), so a count it can make small must not make a hold or a charge small.
pub fn estimate_vendor_tokens(text: &str) -> u64 {
    count_text(text).max((text.len() as u64).div_ceil(BYTES_PER_TOKEN_AT_MOST))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn tiktoken(text: &str) -> usize {
        tiktoken_rs::cl100k_base_singleton()
            .encode_ordinary(text)
            .len()
    }

    #[test]
    fn counts_follow_cl100k() {
        let counts = count_embedding_inputs(&EmbeddingInput::Texts(vec![
            "hello world".into(),
            "tiktoken is great!".into(),
        ]));
        assert_eq!(counts, vec![2, 6]);
        assert_eq!(
            count_embedding_inputs(&EmbeddingInput::Tokens(vec![1, 2, 3])),
            vec![3]
        );
    }

    /// The texts where the two pre-tokenizers could part: cl100k's pattern ends in
    /// `\s+(?!\S)|\s+`, which tiktoken runs as a look-ahead and bpe-openai as a pattern that
    /// gives its last character back; runs of mixed whitespace before letters, digits,
    /// apostrophes and line ends are where that matters.
    fn tricky_text() -> impl Strategy<Value = String> {
        let pieces = prop::sample::select(vec![
            " ",
            "  ",
            "\t",
            "\n",
            "\r\n",
            "\r",
            "\u{a0}",
            "\u{3000}",
            "\u{2028}",
            "\u{b}",
            "a",
            "Z",
            "é",
            "日本",
            "1",
            "12345",
            "!",
            "?!",
            "'s",
            "'LL",
            "'",
            "—",
            "🙂",
            "\u{301}",
            "x\u{200d}y",
            "_",
            "/",
            "\"",
        ]);
        prop::collection::vec(pieces, 0..40).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        #[test]
        fn the_count_is_tiktokens_for_any_text(text in any::<String>()) {
            prop_assert_eq!(count_text(&text), tiktoken(&text) as u64);
        }

        #[test]
        fn the_count_is_tiktokens_around_whitespace(text in tricky_text()) {
            prop_assert_eq!(count_text(&text), tiktoken(&text) as u64);
        }
    }

    #[test]
    fn the_count_is_tiktokens_for_prose_code_and_scripts() {
        let texts = [
            "The quick brown fox — jumps over 12345 lazy dogs!\n\n  Ünïcödé 日本語 ",
            "fn main() {\n    println!(\"{}\", 1 + 2);\n}\n",
            "  leading and trailing  \n\n\t",
            "Здравствуй, мир! مرحبا بالعالم. नमस्ते दुनिया",
            "I'm sure they'll say it's what we'd've done",
            "{\"model\":\"text-embedding-3-small\",\"input\":[\"a\",\"b\"]}",
            // Special tokens are ordinary text in a client's input.
            "<|endoftext|> and <|fim_prefix|>",
        ];
        for text in texts {
            assert_eq!(count_text(text), tiktoken(text) as u64, "{text:?}");
        }
    }

    /// The client who sends what is costly to count: a megabyte of one pre-token. tiktoken-rs
    /// panics on the spaces (its look-ahead overflows fancy-regex's stack) and takes time
    /// quadratic in the letters; these are counted, and the counts follow from the vocabulary:
    /// cl100k's longest run of spaces is one token of 128 and of `a` one of 8.
    #[test]
    fn a_megabyte_of_one_pre_token_is_counted() {
        let spaces = " ".repeat(1_000_000);
        // 999,999 spaces (the last one goes with the `x`) are 7,812 tokens of 128 and one of 63.
        assert_eq!(count_text(&format!("{spaces}x")), 7_814);
        assert_eq!(count_text(&spaces), 7_813);
        assert_eq!(count_text(&"a".repeat(1_000_000)), 125_000);
        assert_eq!(tiktoken(&"a".repeat(1_000)), 125, "the same vocabulary");
        assert_eq!(tiktoken(&" ".repeat(1_024)), 8, "the same vocabulary");
    }
}
