//! Reading a `multipart/form-data` request as a stream (DESIGN §2 step 3), with limits: the
//! `file` part is spooled ([`crate::spool`]) and refused with 413 as soon as it passes its limit —
//! the rest of the body is never read — and the other fields are bounded in number and size.
//! Parsing is multer's; this module maps its outcomes to the client's errors.

use crate::errors::{ApiError, ErrorKind};
use crate::spool::{Spool, Spooled};
use http::HeaderMap;
use http::header::CONTENT_TYPE;
use http_body_util::BodyExt;
use hyper::body::Incoming;

/// The limits of one form.
#[derive(Debug, Clone, Copy)]
pub struct UploadLimits {
    /// The `file` part.
    pub file_bytes: u64,
    /// Each other field.
    pub field_bytes: u64,
    /// Number of fields besides the file.
    pub max_fields: usize,
    /// The longest pause between two pieces of the body.
    pub body_pause: std::time::Duration,
}

/// A received form.
#[derive(Debug)]
pub struct Upload {
    /// The text fields, in order.
    pub fields: Vec<(String, String)>,
    /// The `file` part, if there was one.
    pub file: Option<UploadedFile>,
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

/// Reads the whole form.
pub async fn read(
    headers: &HeaderMap,
    body: Incoming,
    limits: UploadLimits,
) -> Result<Upload, ApiError> {
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
    let too_large_file = || {
        ApiError::new(
            ErrorKind::PayloadTooLarge,
            format!(
                "'file' is larger than {} MB; split the audio into smaller files",
                limits.file_bytes / 1_000_000
            ),
        )
        .param("file")
        .code("file_too_large")
    };
    // The file is spooled as it arrives; no whole-stream limit beyond what the parts allow.
    let whole = limits.file_bytes + (limits.max_fields as u64 + 1) * (limits.field_bytes + 1024);
    if headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .is_some_and(|n| n > whole)
    {
        return Err(too_large_file());
    }
    let constraints = multer::Constraints::new().size_limit(
        multer::SizeLimit::new()
            .whole_stream(whole)
            .per_field(limits.field_bytes)
            .for_field("file", limits.file_bytes),
    );
    let mut form = multer::Multipart::with_constraints(
        crate::body::Paced::new(body, limits.body_pause).into_data_stream(),
        boundary,
        constraints,
    );
    let mut upload = Upload {
        fields: Vec::new(),
        file: None,
    };
    loop {
        let field = match form.next_field().await {
            Ok(Some(field)) => field,
            Ok(None) => break,
            Err(e) => return Err(multipart_error(e, &too_large_file)),
        };
        let name = field.name().unwrap_or_default().to_owned();
        if name == "file" {
            if upload.file.is_some() {
                return Err(ApiError::invalid(
                    "file",
                    "duplicate",
                    "Send one 'file' part, not several",
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
                    Err(e) => return Err(multipart_error(e, &too_large_file)),
                }
            }
            let data = spool
                .finish()
                .await
                .map_err(|e| ApiError::internal("spooling the upload", e))?;
            upload.file = Some(UploadedFile {
                filename,
                content_type,
                data,
            });
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
                format!("'{name}' must be a text field; only 'file' may be a file"),
            ));
        }
        let value = field
            .text()
            .await
            .map_err(|e| multipart_error(e, &too_large_file))?;
        upload.fields.push((name, value));
    }
    Ok(upload)
}

fn multipart_error(e: multer::Error, too_large_file: &dyn Fn() -> ApiError) -> ApiError {
    match e {
        multer::Error::FieldSizeExceeded { field_name, limit } => match field_name.as_deref() {
            Some("file") => too_large_file(),
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
        multer::Error::StreamReadFailed(e) if e.is::<crate::body::BodyStalled>() => {
            crate::body::body_stalled(&*e)
        }
        other => ApiError::invalid(
            "body",
            "malformed_multipart",
            format!("The multipart/form-data body could not be read: {other}"),
        ),
    }
}
