//! The web console (`/console`): one page of HTML, CSS and JavaScript embedded in the binary,
//! so that it needs no front-end build, no CDN and no network (`docs/operations.md`, "The
//! console"). It signs in with an admin token and reads everything from the admin API.

use crate::body::{self, ResponseBody};
use http::{HeaderValue, Response, StatusCode, header};

const PAGE: &str = include_str!("assets/console.html");

/// The console's page for `/console` and any path under it (its pages are `#/…` routes).
pub fn asset(_path: &str) -> Response<ResponseBody> {
    let mut response = Response::new(body::full(PAGE));
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    // Everything is inline and from here; nothing may load from elsewhere, and no other site
    // may frame the page.
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
             img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'",
        ),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}
