//! Reading a `multipart/form-data` request as a stream (DESIGN §2 step 3), with limits: the
//! `file` part is spooled ([`crate::spool`]) and refused with 413 as soon as it passes its limit —
//! the rest of the body is never read — and the other fields are bounded in number and size.
//! Parsing is multer's; this module maps its outcomes to the client's errors.

use crate::spool::{Spool, Spooled};
use bytes::Bytes;
use http::HeaderMap;
use http::header::CONTENT_TYPE;
use http_body_util::BodyExt;
use tollgate_exchange::errors::{ApiError, ErrorKind};

/// The limits of one form.
#[derive(Debug, Clone, Copy)]
pub struct UploadLimits {
    /// The name of the one part that is a file (`file`; `/v1/videos`: `input_reference`).
    pub file_field: &'static str,
    /// The file part (and each of `more_files`).
    pub file_bytes: u64,
    /// Other fields that are files, each of which may come more than once, up to `max_more`
    /// parts in all (an image edit's `image` and `image[]`; none elsewhere).
    pub more_files: &'static [&'static str],
    /// The most parts of `more_files`.
    pub max_more: usize,
    /// The whole form, when less than its parts allow.
    pub whole_bytes: Option<u64>,
    /// Each other field.
    pub field_bytes: u64,
    /// Number of fields besides the file.
    pub max_fields: usize,
    /// How the body must arrive.
    pub pace: tollgate_exchange::body::Pace,
}

/// A received form.
#[derive(Debug)]
pub struct Upload {
    /// The text fields, in order.
    pub fields: Vec<(String, String)>,
    /// The `file` part, if there was one.
    pub file: Option<UploadedFile>,
    /// The parts of `more_files`, in order, each with its field's name.
    pub more: Vec<(String, UploadedFile)>,
}

impl Upload {
    /// The fields as borrowed pairs, for the format crates' `from_fields`.
    pub fn field_pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.fields.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

/// The uploaded file.
#[derive(Debug)]
pub struct UploadedFile {
    /// The client's file name, if it sent one.
    pub filename: Option<String>,
    /// The part's content type, if it sent one.
    pub content_type: Option<String>,
    /// The bytes.
    pub data: Spooled,
}

/// Reads the whole form. Any body type (the server's `Incoming`; a fixed buffer in the fuzz
/// target, `fuzz/fuzz_targets/multipart_upload.rs`).
pub async fn read<B>(headers: &HeaderMap, body: B, limits: UploadLimits) -> Result<Upload, ApiError>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let content_type = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let boundary = multer::parse_boundary(content_type).map_err(|_| {
        ApiError::new(
            ErrorKind::UnsupportedMediaType,
            "The request must be multipart/form-data with a boundary",
        )
    })?;
    // The field named: the form's main file (an edit's images, where it has more than one).
    let main = limits
        .more_files
        .first()
        .copied()
        .unwrap_or(limits.file_field);
    let too_large_file = || {
        ApiError::new(
            ErrorKind::PayloadTooLarge,
            format!(
                "'{main}' is larger than {} MB{}",
                limits.whole_bytes.unwrap_or(limits.file_bytes) / 1_000_000,
                if limits.file_field == "file" {
                    "; split the audio into smaller files"
                } else {
                    ""
                }
            ),
        )
        .param(main)
        .code("file_too_large")
    };
    // The file is spooled as it arrives; no whole-stream limit beyond what the parts allow.
    let whole = (limits.file_bytes * (1 + limits.max_more as u64)
        + (limits.max_fields as u64 + 1) * (limits.field_bytes + 1024))
        .min(limits.whole_bytes.unwrap_or(u64::MAX));
    if headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .is_some_and(|n| n > whole)
    {
        return Err(too_large_file());
    }
    let mut size_limit = multer::SizeLimit::new()
        .whole_stream(whole)
        .per_field(limits.field_bytes)
        .for_field(limits.file_field, limits.file_bytes);
    for name in limits.more_files {
        size_limit = size_limit.for_field(*name, limits.file_bytes);
    }
    let constraints = multer::Constraints::new().size_limit(size_limit);
    let mut form = multer::Multipart::with_constraints(
        tollgate_exchange::body::Paced::new(body, limits.pace).into_data_stream(),
        boundary,
        constraints,
    );
    let mut upload = Upload {
        fields: Vec::new(),
        file: None,
        more: Vec::new(),
    };
    loop {
        let field = match form.next_field().await {
            Ok(Some(field)) => field,
            Ok(None) => break,
            Err(e) => return Err(multipart_error(e, limits.file_field, &too_large_file)),
        };
        let Some(name) = field.name().map(str::to_owned) else {
            return Err(ApiError::invalid(
                "body",
                "malformed_multipart",
                "A part of the form has no name (Content-Disposition: form-data; name=\"...\")",
            ));
        };
        let another = limits.more_files.contains(&name.as_str());
        if name == limits.file_field || another {
            if (!another && upload.file.is_some())
                || (another && upload.more.len() >= limits.max_more)
            {
                return Err(ApiError::invalid(
                    name.clone(),
                    "duplicate",
                    if another {
                        format!("Send at most {} '{name}' parts", limits.max_more)
                    } else {
                        format!("Send one '{name}' part, not several")
                    },
                ));
            }
            let filename = field.file_name().map(str::to_owned);
            let content_type = field.content_type().map(ToString::to_string);
            let mut field = field;
            let mut spool = Spool::new();
            loop {
                match field.chunk().await {
                    Ok(Some(chunk)) => spool
                        .write(&chunk)
                        .await
                        .map_err(|e| ApiError::internal("spooling the upload", e))?,
                    Ok(None) => break,
                    Err(e) => return Err(multipart_error(e, &name, &too_large_file)),
                }
            }
            let data = spool
                .finish()
                .await
                .map_err(|e| ApiError::internal("spooling the upload", e))?;
            let file = UploadedFile {
                filename,
                content_type,
                data,
            };
            if another {
                upload.more.push((name, file));
            } else {
                upload.file = Some(file);
            }
            continue;
        }
        if upload.fields.len() >= limits.max_fields {
            return Err(ApiError::invalid(
                name,
                "too_many_fields",
                format!("The form has more than {} fields", limits.max_fields),
            ));
        }
        if field.file_name().is_some() {
            return Err(ApiError::invalid(
                name.clone(),
                "unexpected_file",
                format!(
                    "'{name}' must be a text field; only '{}' may be a file",
                    limits.file_field
                ),
            ));
        }
        // Text fields are UTF-8 as sent: a lossy decoding would both mangle the value and let
        // it grow past its limit (each stray byte becoming a 3-byte U+FFFD).
        let bytes = field
            .bytes()
            .await
            .map_err(|e| multipart_error(e, limits.file_field, &too_large_file))?;
        let Ok(value) = String::from_utf8(bytes.to_vec()) else {
            return Err(ApiError::invalid(
                name.clone(),
                "invalid_utf8",
                format!("'{name}' must be UTF-8 text"),
            ));
        };
        upload.fields.push((name, value));
    }
    Ok(upload)
}

fn multipart_error(
    e: multer::Error,
    file_field: &str,
    too_large_file: &dyn Fn() -> ApiError,
) -> ApiError {
    match e {
        multer::Error::FieldSizeExceeded { field_name, limit } => match field_name.as_deref() {
            Some(name) if name == file_field => too_large_file(),
            other => {
                let name = other.unwrap_or("field").to_owned();
                ApiError::new(
                    ErrorKind::PayloadTooLarge,
                    format!("'{name}' is longer than {limit} bytes"),
                )
                .param(name)
            }
        },
        multer::Error::StreamSizeExceeded { .. } => too_large_file(),
        multer::Error::StreamReadFailed(e)
            if let Some(failure) = tollgate_exchange::body::read_failure(&*e) =>
        {
            failure
        }
        other => ApiError::invalid(
            "body",
            "malformed_multipart",
            format!("The multipart/form-data body could not be read: {other}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const LIMITS: UploadLimits = UploadLimits {
        file_field: "file",
        file_bytes: 4096,
        more_files: &[],
        max_more: 0,
        whole_bytes: None,
        field_bytes: 256,
        max_fields: 8,
        pace: tollgate_exchange::body::Pace {
            pause: std::time::Duration::from_secs(30),
            min_rate: 0,
            window: std::time::Duration::from_secs(30),
            deadline: std::time::Duration::from_secs(600),
        },
    };

    async fn read_form(body: &[u8]) -> Result<Upload, ApiError> {
        let mut headers = HeaderMap::new();
        headers.insert(
            CONTENT_TYPE,
            "multipart/form-data; boundary=XyZ".parse().unwrap(),
        );
        let body = http_body_util::Full::new(Bytes::copy_from_slice(body));
        read(&headers, body, LIMITS).await
    }

    /// Found by the `multipart_upload` fuzz target: an unnamed part of stray bytes was kept as
    /// a field named "" and decoded lossily to three times its size limit.
    #[tokio::test]
    async fn fuzz_regression_unnamed_part_of_stray_bytes() {
        let input = include_bytes!("../../../fuzz/corpus/multipart_upload/regression-lossy-field");
        let e = read_form(input).await.unwrap_err();
        assert_eq!(
            (e.kind, e.code.as_deref()),
            (ErrorKind::InvalidRequest, Some("malformed_multipart"))
        );
    }

    #[tokio::test]
    async fn a_field_must_be_utf8_text() {
        let body = b"--XyZ\r\nContent-Disposition: form-data; name=\"language\"\r\n\r\nen\xf2\r\n--XyZ--\r\n";
        let e = read_form(body).await.unwrap_err();
        assert_eq!(e.param.as_deref(), Some("language"));
        assert_eq!(e.code.as_deref(), Some("invalid_utf8"));
        let body =
            "--XyZ\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\n日本語\r\n--XyZ--\r\n";
        let upload = read_form(body.as_bytes()).await.unwrap();
        assert_eq!(upload.fields, [("prompt".to_owned(), "日本語".to_owned())]);
    }
}
