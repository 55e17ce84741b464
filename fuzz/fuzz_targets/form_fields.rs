//! The multipart text fields of both recognition endpoints (`/v1/audio/transcriptions`,
//! `/v1/speech_to_text`), as `name=value` lines: parsing and validation never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let fields: Vec<(&str, &str)> = text
        .lines()
        .map(|line| line.split_once('=').unwrap_or((line, "")))
        .collect();
    if let Ok(p) = tollgate_compat_audio::TranscriptionParams::from_fields(fields.iter().copied()) {
        let _ = tollgate_compat_audio::transcription::validate(&p);
    }
    let header = fields.first().map(|(_, v)| *v);
    if let Ok(p) = tollgate_vendor_audio::SttParams::from_fields(fields.iter().copied(), header) {
        let _ = tollgate_vendor_audio::stt::validate(&p);
    }
});
