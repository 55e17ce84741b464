//! Decoding and encoding of the wire format: requests, responses, base64 vectors, shortening.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use serde_json::json;
use tollgate_embeddings::{
    AnswerShape, Embedding, EmbeddingInput, EmbeddingRequest, EmbeddingResponse, EmbeddingUsage,
    EmbeddingVector, EncodingError, EncodingFormat, RelayedResponse, decode_base64, encode_base64,
    is_base64_alphabet, shorten,
};

fn request(body: serde_json::Value) -> EmbeddingRequest {
    serde_json::from_value(body).expect("request decodes")
}

fn request_err(body: &str) -> String {
    serde_json::from_str::<EmbeddingRequest>(body)
        .expect_err("request must not decode")
        .to_string()
}

// ----- requests ----------------------------------------------------------------------------

#[test]
fn decodes_a_single_string() {
    let req = request(json!({"model": "text-embedding-3-small", "input": "hello"}));
    assert_eq!(req.model, "text-embedding-3-small");
    assert_eq!(req.input, EmbeddingInput::Text("hello".into()));
    assert_eq!(req.encoding_format, None);
    assert_eq!(req.dimensions, None);
    assert_eq!(req.user, None);
    assert_eq!(req.input.len(), 1);
}

#[test]
fn decodes_an_array_of_strings() {
    let req = request(json!({"model": "m", "input": ["a", "b", ""]}));
    assert_eq!(
        req.input,
        EmbeddingInput::Texts(vec!["a".into(), "b".into(), String::new()])
    );
    assert_eq!(req.input.len(), 3);
}

#[test]
fn decodes_a_token_array() {
    let req = request(json!({"model": "m", "input": [1, 2, 4294967295u64]}));
    assert_eq!(req.input, EmbeddingInput::Tokens(vec![1, 2, u32::MAX]));
    assert_eq!(req.input.len(), 1);
}

#[test]
fn decodes_an_array_of_token_arrays() {
    let req = request(json!({"model": "m", "input": [[1, 2], [3], []]}));
    assert_eq!(
        req.input,
        EmbeddingInput::TokenBatches(vec![vec![1, 2], vec![3], vec![]])
    );
    assert_eq!(req.input.len(), 3);
}

#[test]
fn empty_array_decodes_as_an_empty_batch() {
    let req = request(json!({"model": "m", "input": []}));
    assert!(req.input.is_empty());
    assert_eq!(req.input, EmbeddingInput::Texts(vec![]));
}

#[test]
fn decodes_both_encoding_formats() {
    let float = request(json!({"model": "m", "input": "x", "encoding_format": "float"}));
    assert_eq!(float.encoding_format, Some(EncodingFormat::Float));
    let base64 = request(json!({"model": "m", "input": "x", "encoding_format": "base64"}));
    assert_eq!(base64.encoding_format, Some(EncodingFormat::Base64));
    assert_eq!(base64.encoding_format_or_default(), EncodingFormat::Base64);
}

#[test]
fn decodes_dimensions_and_user() {
    let req = request(json!({"model": "m", "input": "x", "dimensions": 256, "user": "u-1"}));
    assert_eq!(req.dimensions, Some(256));
    assert_eq!(req.user.as_deref(), Some("u-1"));
}

#[test]
fn null_optional_fields_are_absent() {
    let req = request(json!({
        "model": "m", "input": "x", "encoding_format": null, "dimensions": null, "user": null
    }));
    assert_eq!(req, EmbeddingRequest::new("m", "x"));
}

#[test]
fn unknown_fields_are_ignored() {
    let req = request(json!({
        "model": "m",
        "input": "x",
        "future_option": {"nested": [1, 2, 3]},
        "another": true
    }));
    assert_eq!(req, EmbeddingRequest::new("m", "x"));
}

#[test]
fn invalid_encoding_format_is_a_decode_error() {
    let err = request_err(r#"{"model":"m","input":"x","encoding_format":"base32"}"#);
    assert!(err.contains("unknown variant `base32`"), "{err}");
    assert!(err.contains("float") && err.contains("base64"), "{err}");
    // Case matters, as upstream.
    request_err(r#"{"model":"m","input":"x","encoding_format":"FLOAT"}"#);
}

#[test]
fn missing_required_fields_are_decode_errors() {
    assert!(request_err(r#"{"input":"x"}"#).contains("missing field `model`"));
    assert!(request_err(r#"{"model":"m"}"#).contains("missing field `input`"));
}

#[test]
fn wrong_input_types_are_decode_errors_that_say_what_is_expected() {
    for body in [
        r#"{"model":"m","input":5}"#,
        r#"{"model":"m","input":null}"#,
        r#"{"model":"m","input":{"text":"x"}}"#,
        r#"{"model":"m","input":true}"#,
    ] {
        let err = request_err(body);
        assert!(
            err.contains("expected 'input' as a string, an array of strings"),
            "{body}: {err}"
        );
    }
}

#[test]
fn mixed_arrays_name_the_offending_item() {
    let err = request_err(r#"{"model":"m","input":["a","b",3]}"#);
    assert!(
        err.contains("'input[2]' is a token id but 'input[0]' is a string"),
        "{err}"
    );
    let err = request_err(r#"{"model":"m","input":[1,[2]]}"#);
    assert!(
        err.contains("'input[1]' is a token-id array but 'input[0]' is a token id"),
        "{err}"
    );
    let err = request_err(r#"{"model":"m","input":[[1],"x"]}"#);
    assert!(err.contains("'input[1]' is a string"), "{err}");
}

#[test]
fn bad_token_ids_are_decode_errors() {
    let err = request_err(r#"{"model":"m","input":[-1]}"#);
    assert!(err.contains("token id -1 is out of range"), "{err}");
    let err = request_err(r#"{"model":"m","input":[[1, 4294967296]]}"#);
    assert!(err.contains("token id 4294967296 is out of range"), "{err}");
    let err = request_err(r#"{"model":"m","input":[1.5]}"#);
    assert!(err.contains("floating point"), "{err}");
    let err = request_err(r#"{"model":"m","input":[["a"]]}"#);
    assert!(err.contains("expected a token id"), "{err}");
    // Arrays nest at most two deep.
    request_err(r#"{"model":"m","input":[[[1]]]}"#);
}

#[test]
fn negative_or_fractional_dimensions_are_decode_errors() {
    request_err(r#"{"model":"m","input":"x","dimensions":-1}"#);
    request_err(r#"{"model":"m","input":"x","dimensions":1.5}"#);
}

#[test]
fn requests_round_trip_through_json() {
    let inputs = [
        EmbeddingInput::Text("hello".into()),
        EmbeddingInput::Texts(vec!["a".into(), "b".into()]),
        EmbeddingInput::Tokens(vec![1, 2, 3]),
        EmbeddingInput::TokenBatches(vec![vec![1], vec![2, 3]]),
    ];
    for input in inputs {
        let req = EmbeddingRequest {
            model: "text-embedding-3-large".into(),
            input,
            encoding_format: Some(EncodingFormat::Base64),
            dimensions: Some(1024),
            user: Some("user-7".into()),
        };
        let text = serde_json::to_string(&req).unwrap();
        assert_eq!(
            serde_json::from_str::<EmbeddingRequest>(&text).unwrap(),
            req
        );
    }
}

#[test]
fn serializes_the_plain_json_forms() {
    let req = EmbeddingRequest::new("m", EmbeddingInput::TokenBatches(vec![vec![1], vec![2]]));
    assert_eq!(
        serde_json::to_value(&req).unwrap(),
        json!({"model": "m", "input": [[1], [2]]})
    );
    let mut req = EmbeddingRequest::new("m", vec!["a", "b"]);
    req.encoding_format = Some(EncodingFormat::Float);
    assert_eq!(
        serde_json::to_value(&req).unwrap(),
        json!({"model": "m", "input": ["a", "b"], "encoding_format": "float"})
    );
}

// ----- responses ---------------------------------------------------------------------------

#[test]
fn decodes_a_response_with_float_vectors() {
    let response: EmbeddingResponse = serde_json::from_value(json!({
        "object": "list",
        "data": [
            {"object": "embedding", "index": 0, "embedding": [0.0123, -0.0456, 0.0789]},
            {"object": "embedding", "index": 1, "embedding": [1, 0, -1]}
        ],
        "model": "text-embedding-3-small",
        "usage": {"prompt_tokens": 5, "total_tokens": 5}
    }))
    .unwrap();
    assert_eq!(response.object, "list");
    assert_eq!(response.model, "text-embedding-3-small");
    assert_eq!(
        response.usage,
        EmbeddingUsage {
            prompt_tokens: 5,
            total_tokens: 5
        }
    );
    assert_eq!(response.data.len(), 2);
    assert_eq!(response.data[0].object, "embedding");
    assert_eq!(response.data[1].index, 1);
    assert_eq!(
        response.data[0].embedding,
        EmbeddingVector::Float(vec![0.0123, -0.0456, 0.0789])
    );
    assert_eq!(
        response.data[1].embedding.to_floats().unwrap(),
        vec![1.0, 0.0, -1.0]
    );
}

#[test]
fn decodes_a_response_with_base64_vectors() {
    let response: EmbeddingResponse = serde_json::from_value(json!({
        "object": "list",
        "data": [{"object": "embedding", "index": 0, "embedding": "AACAPwAAAMA="}],
        "model": "text-embedding-3-small",
        "usage": {"prompt_tokens": 2, "total_tokens": 2}
    }))
    .unwrap();
    assert_eq!(
        response.data[0].embedding,
        EmbeddingVector::Base64("AACAPwAAAMA=".into())
    );
    assert_eq!(response.data[0].embedding.format(), EncodingFormat::Base64);
    assert_eq!(
        response.data[0].embedding.to_floats().unwrap(),
        vec![1.0, -2.0]
    );
}

#[test]
fn response_object_fields_default_but_usage_is_required() {
    let lenient: EmbeddingResponse = serde_json::from_value(json!({
        "data": [{"index": 0, "embedding": []}],
        "model": "m",
        "usage": {"prompt_tokens": 0, "total_tokens": 0}
    }))
    .unwrap();
    assert_eq!(lenient.object, "list");
    assert_eq!(lenient.data[0].object, "embedding");

    let err = serde_json::from_value::<EmbeddingResponse>(json!({
        "object": "list", "data": [], "model": "m"
    }))
    .unwrap_err();
    assert!(err.to_string().contains("missing field `usage`"), "{err}");
}

#[test]
fn responses_serialize_in_the_wire_shape() {
    use tollgate_embeddings::Embedding;
    let response = EmbeddingResponse::new(
        "text-embedding-3-small",
        vec![
            Embedding::new(
                0,
                EmbeddingVector::encode(&[0.5, -0.25], EncodingFormat::Float),
            ),
            Embedding::new(
                1,
                EmbeddingVector::encode(&[1.0, -2.0], EncodingFormat::Base64),
            ),
        ],
        EmbeddingUsage::from_prompt_tokens(7),
    );
    let value = serde_json::to_value(&response).unwrap();
    assert_eq!(
        value,
        json!({
            "object": "list",
            "data": [
                {"object": "embedding", "index": 0, "embedding": [0.5, -0.25]},
                {"object": "embedding", "index": 1, "embedding": "AACAPwAAAMA="}
            ],
            "model": "text-embedding-3-small",
            "usage": {"prompt_tokens": 7, "total_tokens": 7}
        })
    );
    assert_eq!(
        serde_json::from_value::<EmbeddingResponse>(value).unwrap(),
        response
    );
}

// ----- base64 ------------------------------------------------------------------------------

#[test]
fn known_vector_has_known_base64() {
    assert_eq!(encode_base64(&[1.0, -2.0]), "AACAPwAAAMA=");
    assert_eq!(decode_base64("AACAPwAAAMA=").unwrap(), vec![1.0f32, -2.0]);
    assert_eq!(encode_base64(&[]), "");
    assert_eq!(decode_base64("").unwrap(), Vec::<f32>::new());
}

#[test]
fn special_values_round_trip_bit_exact() {
    let values = [
        0.0f32,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MIN_POSITIVE,
        f32::MAX,
    ];
    let decoded = decode_base64(&encode_base64(&values)).unwrap();
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&decoded), bits(&values));
}

#[test]
fn decode_rejects_invalid_base64() {
    for bad in [
        "AACA PwAAAMA=",
        "AACAPwAAAMA*",
        "AACAPwAAAMA",
        "AACAPwAAAMA==",
    ] {
        assert!(
            matches!(decode_base64(bad), Err(EncodingError::InvalidBase64 { .. })),
            "{bad:?} -> {:?}",
            decode_base64(bad)
        );
    }
    // URL-safe alphabet is not the standard one.
    let url_safe = encode_base64(&[f32::from_bits(0xFBFF_FFFF)])
        .replace('+', "-")
        .replace('/', "_");
    assert!(
        url_safe.contains('-') || url_safe.contains('_'),
        "{url_safe}"
    );
    assert!(matches!(
        decode_base64(&url_safe),
        Err(EncodingError::InvalidBase64 { .. })
    ));
}

#[test]
fn decode_rejects_lengths_that_are_not_whole_floats() {
    // 1, 2, 3, 5 and 7 bytes.
    for (text, bytes) in [
        ("AA==", 1),
        ("AAA=", 2),
        ("AAAA", 3),
        ("AAAAAAA=", 5),
        ("AAAAAAAAAA==", 7),
    ] {
        assert_eq!(
            decode_base64(text),
            Err(EncodingError::LengthNotMultipleOfFour { bytes }),
            "{text}"
        );
    }
    let err = EmbeddingVector::Base64("AAAA".into())
        .to_floats()
        .unwrap_err();
    assert!(err.to_string().contains("3 bytes"), "{err}");
}

fn finite_f32() -> impl Strategy<Value = f32> {
    use proptest::num::f32::{NEGATIVE, NORMAL, POSITIVE, SUBNORMAL, ZERO};
    POSITIVE | NEGATIVE | NORMAL | SUBNORMAL | ZERO
}

proptest! {
    #[test]
    fn base64_round_trip_is_bit_exact(values in prop::collection::vec(finite_f32(), 0..300)) {
        let text = encode_base64(&values);
        prop_assert_eq!(text.len(), 4 * (values.len() * 4).div_ceil(3));
        let decoded = decode_base64(&text).unwrap();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        prop_assert_eq!(bits(&decoded), bits(&values));

        let vector = EmbeddingVector::encode(&values, EncodingFormat::Base64);
        prop_assert_eq!(bits(&vector.to_floats().unwrap()), bits(&values));
    }

    /// The hand-written writer is the serializer, byte for byte: base64 vectors (copied as
    /// they are), strings that need escaping where a vector should be, float vectors, names.
    #[test]
    fn to_json_writes_what_serde_json_writes(
        vectors in prop::collection::vec(
            prop_oneof![
                prop::collection::vec(finite_f32(), 0..40)
                    .prop_map(|v| EmbeddingVector::encode(&v, EncodingFormat::Base64)),
                prop::collection::vec(finite_f32(), 0..40).prop_map(EmbeddingVector::Float),
                "[A-Za-z0-9+/=\"\\\\\u{0}-\u{1f}é]{0,40}".prop_map(EmbeddingVector::Base64),
            ],
            0..5,
        ),
        model in "[a-z0-9\"\\\\é-]{0,20}",
        tokens in any::<u64>(),
    ) {
        let data = vectors.into_iter().enumerate().map(|(i, v)| Embedding::new(i as u32, v)).collect();
        let response = EmbeddingResponse::new(model, data, EmbeddingUsage::from_prompt_tokens(tokens));
        prop_assert_eq!(response.to_json(), serde_json::to_vec(&response).unwrap());
    }

    /// The vectorised alphabet check agrees with the alphabet, byte for byte.
    #[test]
    fn the_alphabet_check_agrees_with_the_alphabet(
        valid in "[A-Za-z0-9+/]{0,300}",
        stray in any::<u8>(),
        at in any::<prop::sample::Index>(),
    ) {
        let alphabet = |c: u8| c.is_ascii_alphanumeric() || c == b'+' || c == b'/';
        prop_assert!(is_base64_alphabet(valid.as_bytes()));
        // One byte anywhere, past every chunk boundary too.
        let mut text = valid.into_bytes();
        text.insert(at.index(text.len() + 1), stray);
        prop_assert_eq!(is_base64_alphabet(&text), alphabet(stray));
    }

    #[test]
    fn decode_never_panics(text in ".{0,64}") {
        let _ = decode_base64(&text);
    }

    #[test]
    fn shortened_vectors_have_unit_norm(
        values in prop::collection::vec(finite_f32(), 2..200),
        cut in 1usize..200,
    ) {
        let dims = cut % (values.len() - 1) + 1; // 1..len: always a real truncation
        let mut shortened = values.clone();
        shorten(&mut shortened, dims);
        prop_assert_eq!(shortened.len(), dims);
        let prefix_is_zero = values[..dims].iter().all(|&v| v == 0.0);
        if prefix_is_zero {
            prop_assert!(shortened.iter().all(|&v| v == 0.0));
        } else {
            let norm = shortened.iter().map(|&v| f64::from(v) * f64::from(v)).sum::<f64>().sqrt();
            prop_assert!((norm - 1.0).abs() < 1e-5, "norm {} of {:?}", norm, shortened);
            // Direction is kept: every component keeps its sign.
            for (a, b) in values[..dims].iter().zip(&shortened) {
                prop_assert!(a.signum() == b.signum() || *b == 0.0);
            }
        }
    }

    #[test]
    fn shorten_to_len_or_more_changes_nothing(
        values in prop::collection::vec(finite_f32(), 0..50),
        extra in 0usize..5,
    ) {
        let mut same = values.clone();
        shorten(&mut same, values.len() + extra);
        prop_assert_eq!(same, values);
    }
}

#[test]
fn zero_vector_stays_zero() {
    let mut v = vec![0.0f32; 8];
    shorten(&mut v, 4);
    assert_eq!(v, vec![0.0; 4]);
}

#[test]
fn shorten_matches_the_guide_formula() {
    // v[:d] / ||v[:d]|| for d = 2 of (1, 2, 3): (1, 2) / sqrt(5).
    let mut v = vec![1.0f32, 2.0, 3.0];
    shorten(&mut v, 2);
    let s = 5f32.sqrt();
    assert!(
        (v[0] - 1.0 / s).abs() < 1e-7 && (v[1] - 2.0 / s).abs() < 1e-7,
        "{v:?}"
    );
}

// ----- answers passed through (relayed) -----------------------------------------------------

/// How an upstream spells one vector.
#[derive(Debug, Clone, Copy)]
enum Spelling {
    /// Numbers as `float32`'s shortest form, as `serde_json` writes them.
    Float,
    /// Base64, as asked.
    Base64,
    /// Base64 with `/` escaped as `\/`, as PHP's `json_encode` writes it.
    EscapedBase64,
    /// Numbers as `float64` text of the `float32` value, with spaces (a server that widens
    /// before printing).
    WideFloat,
}

fn spell(values: &[f32], spelling: Spelling) -> String {
    match spelling {
        Spelling::Float => serde_json::to_string(values).unwrap(),
        Spelling::Base64 => format!("\"{}\"", encode_base64(values)),
        Spelling::EscapedBase64 => format!("\"{}\"", encode_base64(values).replace('/', "\\/")),
        Spelling::WideFloat => {
            let numbers: Vec<String> = values
                .iter()
                .map(|v| serde_json::to_string(&f64::from(*v)).unwrap())
                .collect();
            format!("[ {} ]", numbers.join(", "))
        }
    }
}

/// The answer before the pass-through: the whole answer decoded, each vector decoded unless it
/// is base64 passed on as it came, shortened, encoded, and written by `to_json` — except that a
/// decoded vector holding NaN or an infinity is now refused (it was written as `null`, which no
/// client reads as a number).
fn decoded_and_encoded(body: &[u8], shape: &AnswerShape, model: &str) -> Option<Vec<u8>> {
    let upstream: EmbeddingResponse = serde_json::from_slice(body).ok()?;
    if upstream.data.len() != shape.inputs {
        return None;
    }
    let mut slots: Vec<Option<EmbeddingVector>> = vec![None; shape.inputs];
    for item in upstream.data {
        let slot = slots.get_mut(item.index as usize)?;
        if slot.is_some() {
            return None;
        }
        if let EmbeddingVector::Base64(text) = &item.embedding
            && shape.format == EncodingFormat::Base64
        {
            let n = tollgate_embeddings::base64_dimensions(text).ok()?;
            if shape.dimensions.is_none_or(|d| d == n) {
                *slot = Some(item.embedding);
                continue;
            }
        }
        let mut values = item.embedding.into_floats().ok()?;
        // The one change: a decoded vector with NaN or an infinity is refused, not written
        // as `null`.
        if !values.iter().all(|v| v.is_finite()) {
            return None;
        }
        if let Some(d) = shape.dimensions {
            if values.len() < d {
                return None;
            }
            shorten(&mut values, d);
        }
        *slot = Some(EmbeddingVector::encode(&values, shape.format));
    }
    let data = slots
        .into_iter()
        .enumerate()
        .map(|(i, v)| v.map(|v| Embedding::new(i as u32, v)))
        .collect::<Option<Vec<_>>>()?;
    Some(EmbeddingResponse::new(model, data, upstream.usage).to_json())
}

/// Whether a float vector of `body` holds a number that is infinite as a `float32` (read as
/// text: a JSON reader refuses what is beyond even `float64`).
fn beyond_float32(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Answer<'a> {
        #[serde(borrow)]
        data: Vec<Item<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Item<'a> {
        #[serde(borrow)]
        embedding: &'a serde_json::value::RawValue,
    }
    let Ok(answer) = serde_json::from_slice::<Answer>(body) else {
        return false;
    };
    answer.data.iter().any(|item| {
        let text = item.embedding.get();
        text.starts_with('[')
            && text.trim_matches(['[', ']']).split(',').any(|n| {
                n.trim()
                    .parse::<f64>()
                    .is_ok_and(|v| (v as f32).is_infinite())
            })
    })
}

fn upstream_body(items: &[(u32, String)], tokens: u64) -> Vec<u8> {
    let data: Vec<String> = items
        .iter()
        .map(|(index, vector)| {
            format!(r#"{{"object":"embedding","index":{index},"embedding":{vector}}}"#)
        })
        .collect();
    format!(
        r#"{{"object":"list","data":[{}],"model":"vendor-model","usage":{{"prompt_tokens":{tokens},"total_tokens":{tokens}}}}}"#,
        data.join(",")
    )
    .into_bytes()
}

fn spelling() -> impl Strategy<Value = Spelling> {
    prop_oneof![
        Just(Spelling::Float),
        Just(Spelling::Base64),
        Just(Spelling::EscapedBase64),
        Just(Spelling::WideFloat),
    ]
}

proptest! {
    /// The answer passed through is today's full decode and encode: byte for byte when the
    /// upstream spells its vectors as `serde_json` does or in base64 (escaped or not); the same
    /// `float32` values when it spells its numbers otherwise. Vectors in any order, any asked
    /// encoding and length, and answers broken by a byte: refused exactly when today's refuses.
    #[test]
    fn a_relayed_answer_is_the_decoded_and_encoded_one(
        vectors in prop::collection::vec(
            (prop::collection::vec(finite_f32(), 0..24), spelling()),
            1..4,
        ),
        order in any::<prop::sample::Index>(),
        base64 in any::<bool>(),
        dimensions in prop::option::of(1usize..26),
        extra_inputs in prop_oneof![Just(0usize), Just(0), Just(0), 0usize..2],
        corrupt in prop::option::of((any::<prop::sample::Index>(), prop::sample::select(b"[]\",ae-0 n/\\".to_vec()))),
        tokens in 0u64..1000,
    ) {
        let mut items: Vec<(u32, String)> = vectors
            .iter()
            .enumerate()
            .map(|(i, (values, spelling))| (i as u32, spell(values, *spelling)))
            .collect();
        let turn = order.index(items.len());
        items.rotate_left(turn);
        let mut body = upstream_body(&items, tokens);
        if let Some((at, with)) = corrupt {
            let at = at.index(body.len());
            body[at] = with;
        }
        // Passed through, an answer needs no `model` (the client's names its own); today's
        // decoding refused one without.
        prop_assume!(body.windows(7).any(|w| w == b"\"model\""));
        let shape = AnswerShape {
            inputs: vectors.len() + extra_inputs,
            format: if base64 { EncodingFormat::Base64 } else { EncodingFormat::Float },
            dimensions,
        };
        let today = decoded_and_encoded(&body, &shape, "small");
        // Read as the gateway reads it, the vectors lifted out, and read whole: the same answer
        // either way.
        let [relayed, whole] = [RelayedResponse::read, RelayedResponse::read_whole]
            .map(|read| read(&body).and_then(|r| r.write(&shape, "small")));
        prop_assert_eq!(relayed.as_ref().ok(), whole.as_ref().ok());
        let canonical = vectors
            .iter()
            .all(|(_, s)| !matches!(s, Spelling::WideFloat));
        match (&today, &relayed) {
            (None, Err(_)) => {}
            // A number past float32's range in a float vector passed on as it came: relayed as
            // the vendor wrote it (its magnitude is not checked, docs/decisions.md), where
            // decoding makes it infinite and refuses it.
            (None, Ok(_)) if !base64 && beyond_float32(&body) => {}
            (Some(today), Ok(relayed)) if corrupt.is_none() && (canonical || base64) => {
                prop_assert_eq!(String::from_utf8_lossy(relayed), String::from_utf8_lossy(today));
            }
            (Some(today), Ok(relayed)) => {
                let bits = |body: &[u8]| -> Vec<Vec<u32>> {
                    let answer: EmbeddingResponse = serde_json::from_slice(body).unwrap();
                    answer.data.iter().map(|item| item.embedding.to_floats().unwrap().iter().map(|v| v.to_bits()).collect()).collect()
                };
                prop_assert_eq!(bits(relayed), bits(today));
            }
            _ => prop_assert!(false, "today {:?}, relayed {:?} for {}", today.as_ref().map(|b| String::from_utf8_lossy(b).into_owned()), relayed, String::from_utf8_lossy(&body)),
        }
    }
}

/// The fuzz target's first find (`upstream_answers`): a vector's string with raw NUL bytes in
/// it, which JSON refuses. Lifted, it was read; read whole, it was not. Both refuse it now.
#[test]
fn a_control_character_in_a_vector_is_refused_however_the_answer_is_read() {
    let mut body = br#"{"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": "AACAPwAAAM"#.to_vec();
    body.extend_from_slice(&[0; 60]);
    body.extend_from_slice(
        br#"A="}], "model": "m", "usage": {"prompt_tokens": 2, "total_tokens": 2}}"#,
    );
    let lifted = RelayedResponse::read(&body)
        .map(|_| ())
        .map_err(|e| e.to_string());
    let whole = RelayedResponse::read_whole(&body)
        .map(|_| ())
        .map_err(|e| e.to_string());
    assert_eq!(lifted, whole);
    assert!(lifted.unwrap_err().contains("control character"));
}

#[test]
fn a_relayed_answer_names_what_is_wrong() {
    let shape = AnswerShape {
        inputs: 2,
        format: EncodingFormat::Float,
        dimensions: None,
    };
    let write = |items: &[(u32, &str)]| {
        let items: Vec<(u32, String)> = items.iter().map(|(i, v)| (*i, v.to_string())).collect();
        let body = upstream_body(&items, 3);
        RelayedResponse::read(&body)
            .and_then(|r| r.write(&shape, "m"))
            .map_err(|e| e.to_string())
    };
    assert_eq!(
        write(&[(0, "[1]")]).unwrap_err(),
        "1 embeddings for 2 inputs"
    );
    assert_eq!(
        write(&[(0, "[1]"), (2, "[1]")]).unwrap_err(),
        "embedding index 2 out of range"
    );
    assert_eq!(
        write(&[(1, "[1]"), (1, "[1]")]).unwrap_err(),
        "embedding index 1 repeated"
    );
    assert_eq!(
        write(&[(0, "[1]"), (1, "[1,\"2\"]")]).unwrap_err(),
        "embedding 1: embedding is neither an array of numbers nor a base64 string"
    );
    assert_eq!(
        write(&[(0, "[1]"), (1, "{\"values\":[1]}")]).unwrap_err(),
        "embedding 1: embedding is neither an array of numbers nor a base64 string"
    );
    assert!(
        write(&[(0, "[1]"), (1, "\"AAAA\"")])
            .unwrap_err()
            .contains("not a multiple of 4")
    );
    let shape = AnswerShape {
        dimensions: Some(3),
        ..shape
    };
    let body = upstream_body(&[(0, "[1,0]".into()), (1, "[1,0,0]".into())], 3);
    assert_eq!(
        RelayedResponse::read(&body)
            .and_then(|r| r.write(&shape, "m"))
            .unwrap_err()
            .to_string(),
        "embedding 0 has 2 dimensions, 3 were asked"
    );
    let body = br#"{"data":[],"model":"m"}"#;
    assert!(
        RelayedResponse::read(body)
            .unwrap_err()
            .to_string()
            .contains("missing field `usage`")
    );
}

fn json_element() -> impl Strategy<Value = serde_json::Value> {
    prop_oneof![
        4 => finite_f32().prop_map(|v| json!(v)),
        2 => any::<i64>().prop_map(|v| json!(v)),
        1 => Just(json!(null)),
        1 => any::<bool>().prop_map(|v| json!(v)),
        1 => "[a-z0-9 .,\\[\\]]{0,6}".prop_map(|v| json!(v)),
        1 => prop::collection::vec(finite_f32(), 0..3).prop_map(|v| json!(v)),
        1 => Just(json!({"v": 1})),
    ]
}

proptest! {
    /// The float vector check agrees with a JSON reader: an array of numbers, counted, and
    /// nothing else — compact or pretty.
    #[test]
    fn the_float_vector_check_agrees_with_a_json_reader(
        items in prop::collection::vec(json_element(), 0..12),
        pretty in any::<bool>(),
    ) {
        let value = serde_json::Value::Array(items.clone());
        let text = if pretty { serde_json::to_string_pretty(&value) } else { serde_json::to_string(&value) }.unwrap();
        let raw = serde_json::value::RawValue::from_string(text).unwrap();
        let expected = items.iter().all(serde_json::Value::is_number).then_some(items.len());
        prop_assert_eq!(tollgate_embeddings::float_array_dimensions(&raw).ok(), expected);
    }
}
