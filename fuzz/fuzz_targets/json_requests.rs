//! Every inbound JSON decoder with its validation, as a handler runs them: the first byte picks
//! the endpoint, the rest is the body. Decoding and validating never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&which, body)) = data.split_first() else {
        return;
    };
    match which % 8 {
        0 => {
            if let Ok(r) = serde_json::from_slice::<tollgate_embeddings::EmbeddingRequest>(body) {
                let _ =
                    tollgate_embeddings::validate(&r, tollgate_embeddings::model_family(&r.model));
            }
        }
        1 => {
            if let Ok(r) = serde_json::from_slice::<tollgate_compat_audio::SpeechRequest>(body) {
                let _ = tollgate_compat_audio::speech::validate(&r);
            }
        }
        2 => {
            if let Ok(r) = serde_json::from_slice::<tollgate_vendor_audio::T2aRequest>(body) {
                let _ = tollgate_vendor_audio::t2a::validate(&r);
            }
        }
        3 => {
            if let Ok(mut r) =
                serde_json::from_slice::<tollgate_clip_tasks::CreateTaskRequest>(body)
            {
                if tollgate_clip_tasks::lift_inline_flags(&mut r).is_ok() {
                    let _ = tollgate_clip_tasks::validate(&r);
                }
            }
        }
        4 => {
            if let Ok(r) =
                serde_json::from_slice::<tollgate_generic_tasks::CreateVideoRequest>(body)
            {
                if let Some(spec) = tollgate_generic_tasks::spec(&r.model) {
                    let _ = tollgate_generic_tasks::validate(&r, spec);
                }
            }
        }
        5 => {
            if let Ok(r) =
                serde_json::from_slice::<tollgate_native_genai::GenerateContentRequest>(body)
            {
                if let Some(limits) = tollgate_native_genai::limits("gen-2.5-flash") {
                    let _ = tollgate_native_genai::validate(&r, &limits);
                }
            }
        }
        6 => {
            if let Ok(r) =
                serde_json::from_slice::<tollgate_native_genai::ChatCompletionRequest>(body)
                && let Some(limits) = tollgate_native_genai::limits("gen-2.5-flash")
                && let Ok(native) = tollgate_native_genai::bridge::to_native(&r, &limits)
            {
                let _ = tollgate_native_genai::validate(&native, &limits);
            }
        }
        _ => {
            if let Ok(r) = serde_json::from_slice::<tollgate_native_genai::ResponsesRequest>(body)
                && let Some(limits) = tollgate_native_genai::limits("gen-2.5-flash")
                && let Ok(native) = tollgate_native_genai::responses::to_native(&r, &limits)
            {
                let _ = tollgate_native_genai::validate(&native, &limits);
            }
        }
    }
});
