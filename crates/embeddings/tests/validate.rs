//! Every rule of `validate` and `validate_token_counts`, with the field path and message asserted.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use tollgate_embeddings::{
    EmbeddingInput, EmbeddingRequest, FieldError, MAX_BATCH_ITEMS, MAX_TOKENS_PER_INPUT,
    MAX_TOKENS_PER_REQUEST, ModelFamily, Rule, model_family, validate, validate_input_token_counts,
    validate_token_counts,
};

const SMALL: Option<ModelFamily> = Some(ModelFamily::TEXT_EMBEDDING_3_SMALL);
const LARGE: Option<ModelFamily> = Some(ModelFamily::TEXT_EMBEDDING_3_LARGE);
const ADA: Option<ModelFamily> = Some(ModelFamily::TEXT_EMBEDDING_ADA_002);

fn req(model: &str, input: impl Into<EmbeddingInput>) -> EmbeddingRequest {
    EmbeddingRequest::new(model, input)
}

fn with_dims(model: &str, dimensions: u32) -> EmbeddingRequest {
    let mut r = req(model, "hello");
    r.dimensions = Some(dimensions);
    r
}

#[track_caller]
fn assert_error(result: Result<(), FieldError>, field: &str, rule: Rule, message: &str) {
    let err = result.expect_err("expected a validation error");
    assert_eq!(err.field, field, "{err:?}");
    assert_eq!(err.rule, rule, "{err:?}");
    assert_eq!(err.message, message, "{err:?}");
    assert_eq!(err.to_string(), message);
}

// ----- valid requests ----------------------------------------------------------------------

#[test]
fn valid_requests_pass() {
    let inputs: [EmbeddingInput; 4] = [
        "hello".into(),
        vec!["a", "b"].into(),
        vec![1u32, 2, 3].into(),
        vec![vec![1u32], vec![2, 3]].into(),
    ];
    for input in inputs {
        for family in [SMALL, LARGE, ADA, None] {
            assert_eq!(
                validate(&req("m", input.clone()), family),
                Ok(()),
                "{input:?}"
            );
        }
    }
}

#[test]
fn batches_of_exactly_the_limit_pass() {
    let texts = vec!["x".to_owned(); MAX_BATCH_ITEMS];
    assert_eq!(validate(&req("m", texts), SMALL), Ok(()));
    let tokens = vec![7u32; MAX_BATCH_ITEMS];
    assert_eq!(validate(&req("m", tokens), SMALL), Ok(()));
    let batches = vec![vec![7u32]; MAX_BATCH_ITEMS];
    assert_eq!(validate(&req("m", batches), SMALL), Ok(()));
}

// ----- model -------------------------------------------------------------------------------

#[test]
fn empty_model_is_refused() {
    assert_error(
        validate(&req("", "hello"), None),
        "model",
        Rule::Required,
        "'model' is required and must not be empty",
    );
}

// ----- input -------------------------------------------------------------------------------

#[test]
fn a_lone_empty_string_is_accepted_but_not_inside_an_array() {
    assert_eq!(validate(&req("m", ""), SMALL), Ok(()));
    let batch = EmbeddingRequest::new("m", vec!["", "x"]);
    assert_error(
        validate(&batch, SMALL),
        "input[0]",
        Rule::EmptyString,
        "'input[0]' must not be an empty string",
    );
}

#[test]
fn empty_array_input_decoded_from_json_is_refused() {
    let r: EmbeddingRequest =
        serde_json::from_str(r#"{"model":"text-embedding-3-small","input":[]}"#).unwrap();
    assert_error(
        validate(&r, SMALL),
        "input",
        Rule::Empty,
        "'input' must not be empty",
    );
}

#[test]
fn empty_token_batch_is_refused() {
    assert_error(
        validate(&req("m", EmbeddingInput::TokenBatches(vec![])), SMALL),
        "input",
        Rule::Empty,
        "'input' must not be empty",
    );
}

#[test]
fn empty_string_inside_an_array_names_its_index() {
    let input = vec!["a", "b", "c", "", ""];
    assert_error(
        validate(&req("m", input), SMALL),
        "input[3]",
        Rule::EmptyString,
        "'input[3]' must not be an empty string",
    );
}

#[test]
fn empty_token_array_inside_token_batches_names_its_index() {
    let input = vec![vec![1u32], vec![], vec![2]];
    assert_error(
        validate(&req("m", input), SMALL),
        "input[1]",
        Rule::EmptyTokenArray,
        "'input[1]' must not be an empty token array",
    );
}

#[test]
fn empty_single_token_array_is_refused() {
    assert_error(
        validate(&req("m", EmbeddingInput::Tokens(vec![])), SMALL),
        "input",
        Rule::EmptyTokenArray,
        "'input' must not be an empty token array",
    );
}

#[test]
fn too_many_strings_are_refused() {
    let texts = vec!["x".to_owned(); MAX_BATCH_ITEMS + 1];
    assert_error(
        validate(&req("m", texts), SMALL),
        "input",
        Rule::TooManyItems,
        "'input' has 2049 items; at most 2048 are allowed",
    );
}

#[test]
fn too_many_token_arrays_are_refused() {
    let batches = vec![vec![1u32]; 3000];
    assert_error(
        validate(&req("m", batches), SMALL),
        "input",
        Rule::TooManyItems,
        "'input' has 3000 items; at most 2048 are allowed",
    );
}

#[test]
fn too_long_single_token_array_is_refused() {
    let tokens = vec![1u32; MAX_BATCH_ITEMS + 1];
    assert_error(
        validate(&req("m", tokens), SMALL),
        "input",
        Rule::TooManyItems,
        "'input' has 2049 items; at most 2048 are allowed",
    );
}

#[test]
fn item_count_is_checked_before_item_contents() {
    let mut texts = vec!["x".to_owned(); MAX_BATCH_ITEMS + 1];
    texts[0] = String::new();
    assert_eq!(
        validate(&req("m", texts), SMALL).unwrap_err().rule,
        Rule::TooManyItems
    );
}

#[test]
fn model_is_checked_before_input() {
    assert_eq!(validate(&req("", ""), SMALL).unwrap_err().field, "model");
}

// ----- dimensions --------------------------------------------------------------------------

#[test]
fn dimensions_within_range_pass() {
    for d in [1, 256, 1536] {
        assert_eq!(
            validate(&with_dims("text-embedding-3-small", d), SMALL),
            Ok(())
        );
    }
    for d in [1, 1024, 3072] {
        assert_eq!(
            validate(&with_dims("text-embedding-3-large", d), LARGE),
            Ok(())
        );
    }
}

#[test]
fn dimensions_above_native_are_refused() {
    assert_error(
        validate(&with_dims("text-embedding-3-small", 1537), SMALL),
        "dimensions",
        Rule::DimensionsOutOfRange,
        "'dimensions' must be between 1 and 1536 for text-embedding-3-small",
    );
    assert_error(
        validate(&with_dims("text-embedding-3-large", 3073), LARGE),
        "dimensions",
        Rule::DimensionsOutOfRange,
        "'dimensions' must be between 1 and 3072 for text-embedding-3-large",
    );
}

#[test]
fn zero_dimensions_are_refused() {
    assert_error(
        validate(&with_dims("text-embedding-3-small", 0), SMALL),
        "dimensions",
        Rule::DimensionsOutOfRange,
        "'dimensions' must be between 1 and 1536 for text-embedding-3-small",
    );
    assert_error(
        validate(&with_dims("custom-model", 0), None),
        "dimensions",
        Rule::DimensionsOutOfRange,
        "'dimensions' must be at least 1",
    );
}

#[test]
fn out_of_range_message_names_the_model_the_client_sent() {
    // The client used an alias; the caller resolved it to the family.
    assert_error(
        validate(&with_dims("embed-small", 2000), SMALL),
        "dimensions",
        Rule::DimensionsOutOfRange,
        "'dimensions' must be between 1 and 1536 for embed-small",
    );
}

#[test]
fn dimensions_are_refused_for_ada() {
    for d in [1, 256, 1536] {
        assert_error(
            validate(&with_dims("text-embedding-ada-002", d), ADA),
            "dimensions",
            Rule::DimensionsUnsupported,
            "'dimensions' is only supported by text-embedding-3 models",
        );
    }
}

#[test]
fn unknown_family_leaves_the_upper_bound_to_the_upstream() {
    assert_eq!(validate(&with_dims("custom-model", 1), None), Ok(()));
    assert_eq!(validate(&with_dims("custom-model", 100_000), None), Ok(()));
}

#[test]
fn input_is_checked_before_dimensions() {
    let mut r = with_dims("text-embedding-ada-002", 5);
    r.input = EmbeddingInput::Texts(Vec::new());
    assert_eq!(validate(&r, ADA).unwrap_err().field, "input");
}

#[test]
fn family_lookup_and_validate_work_together() {
    let r = with_dims("text-embedding-3-large", 3072);
    assert_eq!(validate(&r, model_family(&r.model)), Ok(()));
    let r = with_dims("text-embedding-ada-002", 3072);
    assert_eq!(
        validate(&r, model_family(&r.model)).unwrap_err().rule,
        Rule::DimensionsUnsupported
    );
}

// ----- token counts ------------------------------------------------------------------------

#[test]
fn token_counts_at_the_limits_pass() {
    assert_eq!(validate_token_counts(&[MAX_TOKENS_PER_INPUT]), Ok(()));
    assert_eq!(validate_token_counts(&[8192, 1, 8192]), Ok(()));
    assert_eq!(validate_token_counts(&[]), Ok(()));
    // 36 × 8192 + 5088 = 300 000 exactly.
    let mut counts = vec![8192; 36];
    counts.push(5088);
    assert_eq!(counts.iter().sum::<usize>(), MAX_TOKENS_PER_REQUEST);
    assert_eq!(validate_token_counts(&counts), Ok(()));
}

#[test]
fn an_input_over_8192_tokens_is_named() {
    assert_error(
        validate_token_counts(&[10, 20, 8193, 9000]),
        "input[2]",
        Rule::TooManyTokens,
        "'input[2]' has 8193 tokens; at most 8192 are allowed per input",
    );
    assert_error(
        validate_token_counts(&[8193]),
        "input[0]",
        Rule::TooManyTokens,
        "'input[0]' has 8193 tokens; at most 8192 are allowed per input",
    );
}

#[test]
fn a_total_over_300000_tokens_is_refused() {
    let mut counts = vec![8192; 36];
    counts.push(5089);
    assert_error(
        validate_token_counts(&counts),
        "input",
        Rule::TooManyTotalTokens,
        "'input' has 300001 tokens in total; at most 300000 are allowed per request",
    );
}

#[test]
fn token_counts_are_named_by_the_shape_of_the_input() {
    let single: EmbeddingInput = "long text".into();
    assert_error(
        validate_input_token_counts(&single, &[8193]),
        "input",
        Rule::TooManyTokens,
        "'input' has 8193 tokens; at most 8192 are allowed per input",
    );
    let tokens: EmbeddingInput = vec![1u32; 10].into();
    assert_eq!(
        validate_input_token_counts(&tokens, &[10_000])
            .unwrap_err()
            .field,
        "input"
    );
    let batch: EmbeddingInput = vec!["a", "b"].into();
    assert_eq!(
        validate_input_token_counts(&batch, &[1, 10_000])
            .unwrap_err()
            .field,
        "input[1]"
    );
    assert_eq!(validate_input_token_counts(&batch, &[1, 8192]), Ok(()));
}

#[test]
fn rule_codes_are_stable() {
    let expected = [
        (Rule::Required, "required"),
        (Rule::Empty, "empty"),
        (Rule::EmptyString, "empty_string"),
        (Rule::EmptyTokenArray, "empty_token_array"),
        (Rule::TooManyItems, "too_many_items"),
        (Rule::DimensionsUnsupported, "dimensions_unsupported"),
        (Rule::DimensionsOutOfRange, "dimensions_out_of_range"),
        (Rule::TooManyTokens, "too_many_tokens"),
        (Rule::TooManyTotalTokens, "too_many_total_tokens"),
    ];
    assert_eq!(expected.len(), Rule::ALL.len());
    for (rule, code) in expected {
        assert_eq!(rule.code(), code);
        assert_eq!(rule.to_string(), code);
    }
}
