//! The SSE decoder on arbitrary bytes, split at an arbitrary point: it never panics, and the
//! events do not depend on where the input was split (what a TCP stream does to it).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tollgate_sse::Decoder;

fn events(chunks: &[&[u8]]) -> Vec<tollgate_sse::Event> {
    let mut decoder = Decoder::new();
    let mut out = Vec::new();
    for chunk in chunks {
        decoder.push(chunk);
        while let Some(event) = decoder.next_event() {
            out.push(event);
        }
    }
    out.extend(decoder.finish());
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&cut, input)) = data.split_first() else {
        return;
    };
    let at = usize::from(cut).min(input.len());
    let (a, b) = input.split_at(at);
    assert_eq!(events(&[input]), events(&[a, b]));
});
