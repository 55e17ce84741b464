//! The gateway's token count (`tollgate_metering::tokens`, bpe-openai) against tiktoken-rs, the
//! reference: the same count for every text (docs/decisions.md, "Counting tokens").
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let reference = tiktoken_rs::cl100k_base_singleton().encode_ordinary(text).len();
    assert_eq!(
        tollgate_metering::tokens::count_text(text),
        reference as u64,
        "{text:?}"
    );
});
