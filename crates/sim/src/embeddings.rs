//! Simulated `openai-embeddings`: deterministic unit-norm vectors seeded by the model and the
//! input, in the model's native dimension, with cl100k token counts as usage.
//!
//! `dimensions` is deliberately ignored (vectors always come back at the native size) so that the
//! gateway's truncate-and-renormalise path is exercised end to end.

use tollgate_embeddings::{
    Embedding, EmbeddingInput, EmbeddingRequest, EmbeddingResponse, EmbeddingUsage,
    EmbeddingVector, model_family,
};

/// What went wrong, as (status, OpenAI error type, code, param, message).
pub(crate) type SimError = (
    u16,
    &'static str,
    Option<&'static str>,
    Option<&'static str>,
    String,
);

/// Answers one embeddings request.
pub(crate) fn respond(body: &[u8]) -> Result<EmbeddingResponse, SimError> {
    let request: EmbeddingRequest = serde_json::from_slice(body).map_err(|e| {
        (
            400,
            "invalid_request_error",
            None,
            None,
            format!("We could not parse the JSON body of your request: {e}"),
        )
    })?;
    let Some(family) = model_family(&request.model) else {
        return Err((
            404,
            "invalid_request_error",
            Some("model_not_found"),
            Some("model"),
            format!(
                "The model `{}` does not exist or you do not have access to it.",
                request.model
            ),
        ));
    };
    let dims = usize::try_from(family.native_dimensions).unwrap_or(0);
    let format = request.encoding_format.unwrap_or_default();
    let bpe = bpe_openai::cl100k_base();
    let mut tokens = 0u64;
    let mut data = Vec::new();
    let mut push = |index: usize, seed_bytes: &[u8], count: usize| {
        tokens += count as u64;
        let values = unit_vector(&request.model, seed_bytes, dims);
        data.push(Embedding {
            object: "embedding".into(),
            index: u32::try_from(index).unwrap_or(u32::MAX),
            embedding: EmbeddingVector::encode(&values, format),
        });
    };
    match &request.input {
        EmbeddingInput::Text(text) => push(0, text.as_bytes(), bpe.count(text.as_str())),
        EmbeddingInput::Texts(texts) => {
            for (i, text) in texts.iter().enumerate() {
                push(i, text.as_bytes(), bpe.count(text.as_str()));
            }
        }
        EmbeddingInput::Tokens(ids) => push(0, &token_bytes(ids), ids.len()),
        EmbeddingInput::TokenBatches(batches) => {
            for (i, ids) in batches.iter().enumerate() {
                push(i, &token_bytes(ids), ids.len());
            }
        }
    }
    if data.is_empty() {
        return Err((
            400,
            "invalid_request_error",
            None,
            Some("input"),
            "'input' must not be empty".into(),
        ));
    }
    Ok(EmbeddingResponse {
        object: "list".into(),
        data,
        model: request.model,
        usage: EmbeddingUsage {
            prompt_tokens: tokens,
            total_tokens: tokens,
        },
    })
}

fn token_bytes(ids: &[u32]) -> Vec<u8> {
    ids.iter().flat_map(|t| t.to_le_bytes()).collect()
}

/// A deterministic unit vector: SplitMix64 seeded with FNV-1a of model and input, mapped to
/// [-1, 1) and L2-normalised.
pub(crate) fn unit_vector(model: &str, input: &[u8], dims: usize) -> Vec<f32> {
    let mut seed = 0xcbf2_9ce4_8422_2325u64;
    for b in model.bytes().chain([0u8]).chain(input.iter().copied()) {
        seed ^= u64::from(b);
        seed = seed.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let mut values: Vec<f64> = (0..dims)
        .map(|_| {
            seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = seed;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            // 53 random bits → [0, 1) → [-1, 1)
            ((z >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect();
    let norm = values.iter().map(|v| v * v).sum::<f64>().sqrt();
    if norm > 0.0 {
        for v in &mut values {
            *v /= norm;
        }
    }
    values.into_iter().map(|v| v as f32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_are_deterministic_unit_norm_and_native_sized() {
        let a = unit_vector("m", b"hello", 1536);
        assert_eq!(a, unit_vector("m", b"hello", 1536));
        assert_ne!(a, unit_vector("m", b"hellp", 1536));
        let norm: f64 = a.iter().map(|v| f64::from(*v) * f64::from(*v)).sum();
        assert!((norm - 1.0).abs() < 1e-5);

        let body = br#"{"model":"text-embedding-3-large","input":["a","b c"],"dimensions":8}"#;
        let r = respond(body).unwrap();
        assert_eq!(r.data.len(), 2);
        assert_eq!(r.data[1].index, 1);
        assert_eq!(r.data[0].embedding.to_floats().unwrap().len(), 3072);
        assert_eq!(r.usage.prompt_tokens, 3);
    }

    #[test]
    fn unknown_models_are_404() {
        let err = respond(br#"{"model":"nope","input":"x"}"#).unwrap_err();
        assert_eq!(err.0, 404);
    }
}
