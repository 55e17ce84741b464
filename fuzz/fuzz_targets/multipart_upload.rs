//! The multipart upload reader (`tollgate_gateway::upload::read`) over arbitrary bodies, with
//! small limits so that every limit is reached: it never panics, never keeps more than its
//! limits allow, and every refusal is a 4xx (a malformed form is the client's fault, never a
//! 500).
#![no_main]

use bytes::Bytes;
use http::HeaderMap;
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use std::time::Duration;
use tollgate_gateway::upload::{UploadLimits, read};

const LIMITS: UploadLimits = UploadLimits {
    file_field: "file",
    file_bytes: 4096,
    more_files: &[],
    max_more: 0,
    whole_bytes: None,
    field_bytes: 256,
    max_fields: 8,
    pace: tollgate_exchange::body::Pace {
        pause: Duration::from_secs(30),
        min_rate: 0,
        window: Duration::from_secs(30),
        deadline: Duration::from_secs(600),
    },
};

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a runtime")
    })
}

fuzz_target!(|data: &[u8]| {
    let mut headers = HeaderMap::new();
    headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("multipart/form-data; boundary=XyZ"),
    );
    let body = http_body_util::Full::new(Bytes::copy_from_slice(data));
    match runtime().block_on(read(&headers, body, LIMITS)) {
        Ok(upload) => {
            assert!(upload.fields.len() <= LIMITS.max_fields);
            assert!(
                upload
                    .fields
                    .iter()
                    .all(|(_, v)| v.len() as u64 <= LIMITS.field_bytes)
            );
            if let Some(file) = &upload.file {
                assert!(file.data.len() <= LIMITS.file_bytes);
            }
        }
        Err(e) => assert!(e.kind.status().is_client_error(), "{:?}: {}", e.kind, e.message),
    }
});
