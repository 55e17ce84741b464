//! What each adapter parses from an upstream (embeddings, t2a with its hex audio, native
//! answers and the native streamed array fed in two pieces, clip and generic task records): a
//! lying upstream gets an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&which, body)) = data.split_first() else {
        return;
    };
    match which % 6 {
        0 => {
            // As the gateway reads it, in place, each vector checked, written in every shape:
            // with the vectors lifted out first or read whole, the same answer.
            use tollgate_embeddings::{AnswerShape, EncodingFormat, RelayedResponse};
            let lifted = RelayedResponse::read(body);
            let whole = RelayedResponse::read_whole(body);
            assert_eq!(lifted.is_ok(), whole.is_ok(), "one way read it, the other did not");
            if let (Ok(lifted), Ok(whole)) = (lifted, whole) {
                for inputs in [whole.data.len(), 1] {
                    for format in [EncodingFormat::Float, EncodingFormat::Base64] {
                        for dimensions in [None, Some(1), Some(3)] {
                            let shape = AnswerShape {
                                inputs,
                                format,
                                dimensions,
                            };
                            assert_eq!(lifted.write(&shape, "m").ok(), whole.write(&shape, "m").ok());
                            let _ = whole.floats(&shape);
                        }
                    }
                }
            }
        }
        1 => {
            // The frame read with its audio in place reads what the whole reading reads, and
            // writes it back the same.
            let whole = serde_json::from_slice::<tollgate_vendor_audio::T2aResponse>(body);
            let frame = tollgate_vendor_audio::t2a::T2aFrame::read(bytes::Bytes::copy_from_slice(body));
            match (&whole, frame) {
                (Ok(whole), Ok(frame)) if whole.base_resp.is_success() => {
                    let (head, audio, tail) = frame.json_pieces();
                    let written = [head.as_bytes(), &audio, tail.as_bytes()].concat();
                    assert_eq!(serde_json::to_vec(whole).ok(), Some(written));
                    let decoded = whole.data.as_ref().map(|d| d.audio_bytes());
                    assert_eq!(decoded.unwrap_or(Ok(Vec::new())).ok(), frame.decode_audio().ok());
                }
                (Ok(whole), Ok(frame)) => assert_eq!(whole.base_resp, frame.response.base_resp),
                (Ok(whole), Err(tollgate_vendor_audio::t2a::FrameError::Audio(e))) => {
                    let audio = whole.data.as_ref().map(|d| d.audio_bytes());
                    assert_eq!(audio, Some(Err(e)));
                }
                (Ok(_), Err(e)) => panic!("refused what serde reads: {e}"),
                (Err(_), Ok(frame)) => panic!("read what serde refuses: {frame:?}"),
                (Err(_), Err(_)) => {}
            }
        }
        2 => {
            let _ = serde_json::from_slice::<tollgate_native_genai::GenerateContentResponse>(body);
        }
        3 => {
            let half = body.len() / 2;
            let mut decoder = tollgate_native_genai::ArrayDecoder::new();
            for piece in [&body[..half], &body[half..]] {
                decoder.push(piece);
                while let Ok(Some(_)) = decoder.next_response() {}
            }
            let _ = decoder.finish();
        }
        4 => {
            let _ = serde_json::from_slice::<tollgate_clip_tasks::Task>(body);
        }
        _ => {
            let _ = serde_json::from_slice::<tollgate_generic_tasks::VideoTask>(body);
        }
    }
});
