//! Writing a `multipart/form-data` request body as a stream: text fields, then one file part
//! whose bytes come from the caller's source piece by piece (a spooled upload is never loaded
//! whole), with an exact `Content-Length`.

use crate::common::client::Body;
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};

/// Where the file's bytes come from; it can be read from the start more than once (a retry on
/// the next channel reads it again).
pub trait UploadSource: Send + Sync {
    /// Its length in bytes.
    fn len(&self) -> u64;
    /// True when it is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Its bytes from the start.
    fn chunks(&self) -> Pin<Box<dyn Stream<Item = io::Result<Bytes>> + Send>>;
}

/// The file part of a form.
#[derive(Clone, Copy)]
pub struct FilePart<'a> {
    /// The form field's name (`file`).
    pub name: &'a str,
    /// The file name sent to the upstream (its extension helps some vendors).
    pub filename: &'a str,
    /// The part's content type.
    pub content_type: &'a str,
    /// The bytes.
    pub source: &'a dyn UploadSource,
}

impl std::fmt::Debug for FilePart<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FilePart")
            .field("name", &self.name)
            .field("filename", &self.filename)
            .field("content_type", &self.content_type)
            .field("len", &self.source.len())
            .finish()
    }
}

/// A form ready to send: its `Content-Type`, `Content-Length` and streaming body.
#[derive(Debug)]
pub struct Form {
    /// `multipart/form-data; boundary=…`
    pub content_type: String,
    /// Exact length of the body.
    pub content_length: u64,
    /// The body.
    pub body: Body,
}

/// Builds the form: `fields` in order, then `file`.
pub fn form(fields: &[(&str, String)], file: FilePart<'_>) -> Form {
    form_of_files(fields, &[file])
}

/// Builds the form: `fields` in order, then each of `files` (an image edit's `image[]` and
/// `mask`), each streamed from its source in turn.
pub fn form_of_files(fields: &[(&str, String)], files: &[FilePart<'_>]) -> Form {
    static SEQUENCE: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let boundary = format!(
        "tollgate-{nanos:x}-{:x}",
        SEQUENCE.fetch_add(1, Ordering::Relaxed)
    );
    let mut head = String::new();
    for (name, value) in fields {
        head.push_str(&format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{}\"\r\n\r\n{value}\r\n",
            quote(name)
        ));
    }
    let mut content_length = 0u64;
    type Piece = Pin<Box<dyn Stream<Item = io::Result<Bytes>> + Send>>;
    let mut pieces: Vec<Piece> = Vec::with_capacity(files.len() * 2 + 1);
    for (i, file) in files.iter().enumerate() {
        let opening = format!(
            "{}--{boundary}\r\nContent-Disposition: form-data; name=\"{}\"; filename=\"{}\"\r\nContent-Type: {}\r\n\r\n",
            if i == 0 {
                std::mem::take(&mut head)
            } else {
                "\r\n".to_owned()
            },
            quote(file.name),
            quote(file.filename),
            file.content_type
        );
        content_length += opening.len() as u64 + file.source.len();
        pieces.push(Box::pin(futures_util::stream::iter([Ok(Bytes::from(
            opening,
        ))])));
        pieces.push(file.source.chunks());
    }
    let tail = if files.is_empty() {
        format!("{head}--{boundary}--\r\n")
    } else {
        format!("\r\n--{boundary}--\r\n")
    };
    content_length += tail.len() as u64;
    pieces.push(Box::pin(futures_util::stream::iter([Ok(Bytes::from(
        tail,
    ))])));
    let pieces = futures_util::stream::iter(pieces).flatten().map(|piece| {
        piece
            .map(Frame::data)
            .map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)
    });
    Form {
        content_type: format!("multipart/form-data; boundary={boundary}"),
        content_length,
        body: BodyExt::boxed_unsync(StreamBody::new(pieces)),
    }
}

/// A header parameter value: quotes and line breaks cannot appear inside it.
fn quote(value: &str) -> String {
    value
        .chars()
        .map(|c| match c {
            '"' => '\'',
            '\r' | '\n' => ' ',
            c => c,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Memory(Bytes);
    impl UploadSource for Memory {
        fn len(&self) -> u64 {
            self.0.len() as u64
        }
        fn chunks(&self) -> Pin<Box<dyn Stream<Item = io::Result<Bytes>> + Send>> {
            let (a, b) = (self.0.slice(..3), self.0.slice(3..));
            Box::pin(futures_util::stream::iter([Ok(a), Ok(b)]))
        }
    }

    #[tokio::test]
    async fn the_form_is_well_formed_and_its_length_exact() {
        let source = Memory(Bytes::from_static(b"RIFF1234WAVE"));
        let form = form(
            &[
                ("model", "asr-1.0".into()),
                ("response_format", "json".into()),
            ],
            FilePart {
                name: "file",
                filename: "a\"b.wav",
                content_type: "audio/wav",
                source: &source,
            },
        );
        let bytes = form.body.collect().await.unwrap().to_bytes();
        assert_eq!(bytes.len() as u64, form.content_length);
        let text = String::from_utf8_lossy(&bytes);
        let boundary = form.content_type.split("boundary=").nth(1).unwrap();
        assert!(text.starts_with(&format!("--{boundary}\r\n")));
        assert!(text.contains("name=\"model\"\r\n\r\nasr-1.0\r\n"));
        assert!(
            text.contains(
                "filename=\"a'b.wav\"\r\nContent-Type: audio/wav\r\n\r\nRIFF1234WAVE\r\n"
            )
        );
        assert!(text.ends_with(&format!("--{boundary}--\r\n")));
    }
}
