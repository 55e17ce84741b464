//! A client that reuses tollgate's wire types: builds an `EmbeddingRequest`, posts it to a
//! gateway, and reads the `EmbeddingResponse` back (base64 decoded by the same crate).
//!
//! ```sh
//! KEY=$(tollgate keys create --name demo --balance 1)
//! TOLLGATE_KEY=$KEY cargo run --example embeddings_client -- http://127.0.0.1:8080 "hello" "world"
//! ```

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tollgate_embeddings::{EmbeddingRequest, EmbeddingResponse, EncodingFormat};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let base = args
        .next()
        .unwrap_or_else(|| "http://127.0.0.1:8080".into());
    let inputs: Vec<String> = args.collect();
    let inputs = if inputs.is_empty() {
        vec!["hello".to_owned()]
    } else {
        inputs
    };
    let key = std::env::var("TOLLGATE_KEY")?;

    let mut request = EmbeddingRequest::new("text-embedding-3-small", inputs);
    request.encoding_format = Some(EncodingFormat::Base64);
    request.dimensions = Some(8);

    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let http_request = hyper::Request::post(format!("{base}/v1/embeddings"))
        .header("authorization", format!("Bearer {key}"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(serde_json::to_vec(&request)?)))?;
    let response = client.request(http_request).await?;
    let status = response.status();
    let body = response.into_body().collect().await?.to_bytes();
    if !status.is_success() {
        return Err(format!("{status}: {}", String::from_utf8_lossy(&body)).into());
    }
    let answer: EmbeddingResponse = serde_json::from_slice(&body)?;
    for item in &answer.data {
        println!("{}: {:?}", item.index, item.embedding.to_floats()?);
    }
    println!("{} tokens", answer.usage.prompt_tokens);
    Ok(())
}
