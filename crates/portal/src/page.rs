//! The portal's page (`/portal`): one page of HTML and CSS and one script, embedded in the
//! binary like the console's (`tollgate_admin::console`), served with the same
//! Content-Security-Policy (`tollgate_exchange::body::embedded_asset`): scripts run only from
//! the gateway itself. The script builds every node with
//! `textContent`, never `innerHTML`: a name with markup in it shows as text.

use http::{HeaderValue, Response, header};
use tollgate_exchange::body::{self, ResponseBody};

const PAGE: &str = include_str!("assets/portal.html");
const SCRIPT: &str = include_str!("assets/portal.js");

/// Where the page loads its script from.
pub const SCRIPT_PATH: &str = "/portal/portal.js";

/// The portal's script for [`SCRIPT_PATH`]; its page for `/portal` and any other path under it
/// (its pages are `#/…` routes).
pub fn asset(path: &str) -> Response<ResponseBody> {
    let mut response = if path == SCRIPT_PATH {
        body::embedded_asset(SCRIPT, "text/javascript; charset=utf-8")
    } else {
        body::embedded_asset(PAGE, "text/html; charset=utf-8")
    };
    // A new release's page, not a cached one: the page and the API change together.
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}
