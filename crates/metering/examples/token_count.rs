//! The token count's cost, tiktoken-rs (the reference) beside the gateway's (`bpe-openai`), on
//! text a client chooses: prose, and one pre-token made long (docs/benchmarks.md, "Counting
//! tokens in linear time").
//!
//!     cargo run --release -p tollgate-metering --example token_count [BYTES...]
//!
//! Each text is counted by both and the counts compared; a count tiktoken-rs panics on is shown
//! as such. Times are the best of three.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::time::{Duration, Instant};

fn best_of_three(count: impl Fn() -> usize) -> (usize, Duration) {
    let mut best = (0, Duration::MAX);
    for _ in 0..3 {
        let started = Instant::now();
        let n = count();
        best = (n, best.1.min(started.elapsed()));
    }
    best
}

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("a size in bytes"))
        .collect();
    let sizes = if sizes.is_empty() {
        vec![10_000, 100_000, 1_000_000]
    } else {
        sizes
    };
    let tiktoken = tiktoken_rs::cl100k_base_singleton();
    tollgate_metering::tokens::warm_up();
    let prose = "The quick brown fox — jumps over 12345 lazy dogs!\n\n  Ünïcödé 日本語 ";
    println!("| text | bytes | tokens | tiktoken-rs | bpe-openai (the gateway's) |");
    println!("|---|---|---|---|---|");
    let short = "The quick brown fox jumps over the lazy dog";
    let cases = sizes.iter().flat_map(|&n| {
        [
            ("prose", prose.repeat(n / prose.len())),
            ("one letter", "a".repeat(n)),
            ("spaces, then a letter", format!("{}x", " ".repeat(n - 1))),
            ("one punctuation mark", "!".repeat(n)),
        ]
    });
    for (name, text) in std::iter::once(("a short input", short.to_owned())).chain(cases) {
        std::panic::set_hook(Box::new(|_| {}));
        let reference =
            std::panic::catch_unwind(|| best_of_three(|| tiktoken.encode_ordinary(&text).len()));
        let _ = std::panic::take_hook();
        let (count, ours) = best_of_three(|| tollgate_metering::tokens::count_text(&text) as usize);
        let reference = match reference {
            Ok((n, time)) => {
                assert_eq!(n, count, "the counts differ for {name}");
                format!("{time:.2?}")
            }
            Err(_) => "panics".to_owned(),
        };
        println!(
            "| {name} | {} | {count} | {reference} | {ours:.2?} |",
            text.len()
        );
    }
}
