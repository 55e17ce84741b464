//! The images seam: what the gateway asks of an image channel, whatever format the channel
//! speaks (docs/architecture.md, "Upstream seams"). One adapter per format implements
//! [`ImageGenerator`]: `openai-images` ([`crate::adapters::openai_images::OpenAiImages`]).
//!
//! Its request and answer are OpenAI's Images format — the one image vendors copy — so the one
//! format today sends the request as it is and hands back the answer's body (or its events)
//! unread: the gateway vets every image in them before a byte reaches the client.

use crate::common::multipart::FilePart;
use crate::common::{Answer, FrameStream};
use crate::{Endpoint, HttpClient, UpstreamError};
use bytes::Bytes;
use futures_util::future::BoxFuture;
use tollgate_images::{ImageRequest, Operation};

/// One image call: a generation, an edit of the images given, or a variation of one.
#[derive(Debug, Clone, Copy)]
pub struct ImageJob<'a> {
    /// The request, its model the channel's.
    pub request: &'a ImageRequest,
    /// An edit's images (`image[]`) and mask (`mask`), or a variation's `image`, in order;
    /// empty for a generation.
    pub files: &'a [FilePart<'a>],
    /// Which call it is.
    pub operation: Operation,
}

/// The images seam.
pub trait ImageGenerator: Send + Sync {
    /// A whole answer: OpenAI's `ImagesResponse` JSON, unread.
    fn create<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        job: ImageJob<'a>,
    ) -> BoxFuture<'a, Result<Answer<Bytes>, UpstreamError>>;

    /// The answer as events (`image_generation.partial_image`, `…completed`); returns once the
    /// response head has arrived.
    fn stream<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        job: ImageJob<'a>,
    ) -> BoxFuture<'a, Result<FrameStream, UpstreamError>>;
}
