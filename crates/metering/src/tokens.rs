//! Local token counting for holds (DESIGN §4: the local count is the hold and the fallback; the
//! upstream's usage settles). OpenAI's embedding models use `cl100k_base`.

use tollgate_embeddings::{EmbeddingInput, InputItem};

/// Loads the tokenizer's tables (about 100 ms) so the first request does not pay for it.
pub fn warm_up() {
    let _ = tiktoken_rs::cl100k_base_singleton();
}

/// Tokens of each input of an embeddings request, in order: a string is tokenized with
/// `cl100k_base`, a token array counts its length.
pub fn count_embedding_inputs(input: &EmbeddingInput) -> Vec<usize> {
    let bpe = tiktoken_rs::cl100k_base_singleton();
    input
        .items()
        .map(|item| match item {
            InputItem::Text(text) => bpe.encode_ordinary(text).len(),
            InputItem::Tokens(ids) => ids.len(),
        })
        .collect()
}

/// Tokens of a text by `cl100k_base`: the local estimate used where no vendor tokenizer is at
/// hand (native generation's hold and its fallback count).
pub fn count_text(text: &str) -> u64 {
    tiktoken_rs::cl100k_base_singleton()
        .encode_ordinary(text)
        .len() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_follow_cl100k() {
        let counts = count_embedding_inputs(&EmbeddingInput::Texts(vec![
            "hello world".into(),
            "tiktoken is great!".into(),
        ]));
        assert_eq!(counts, vec![2, 6]);
        assert_eq!(
            count_embedding_inputs(&EmbeddingInput::Tokens(vec![1, 2, 3])),
            vec![3]
        );
    }
}
