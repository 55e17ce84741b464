//! Hex audio (t2a) and base64 embeddings: decoders never panic, and the gateway's checks of a
//! t2a frame's hex and of a base64 vector without decoding agree with the decoders on every
//! input.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let audio = tollgate_vendor_audio::t2a::decode_audio(text);
    let checked = tollgate_vendor_audio::t2a::check_audio(text);
    assert_eq!(audio.map(|a| a.len()), checked, "{text:?}");
    let decoded = tollgate_embeddings::decode_base64(text);
    let checked = tollgate_embeddings::base64_dimensions(text);
    assert_eq!(decoded.map(|v| v.len()).ok(), checked.ok(), "{text:?}");
});
