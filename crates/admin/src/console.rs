//! The web console (`/console`): one page of HTML and CSS and one script, embedded in the
//! binary, so that it needs no front-end build, no CDN and no network (`docs/operations.md`,
//! "The console"). It signs in with an admin token and reads everything from the admin API.
//!
//! The page's Content-Security-Policy lets scripts run only from the gateway itself
//! (`script-src 'self'`, no `'unsafe-inline'`): the script is its own file, and an injected
//! `<script>` or `onclick` attribute would not run even if some text slipped past the
//! script's DOM discipline (it builds nodes with `textContent`, never `innerHTML`).

use http::Response;
use tollgate_exchange::body::{self, ResponseBody};

const PAGE: &str = include_str!("assets/console.html");
const SCRIPT: &str = include_str!("assets/console.js");

/// Where the page loads its script from.
pub const SCRIPT_PATH: &str = "/console/console.js";

/// The console's script for [`SCRIPT_PATH`]; its page for `/console` and any other path under
/// it (its pages are `#/…` routes).
pub fn asset(path: &str) -> Response<ResponseBody> {
    if path == SCRIPT_PATH {
        body::embedded_asset(SCRIPT, "text/javascript; charset=utf-8")
    } else {
        body::embedded_asset(PAGE, "text/html; charset=utf-8")
    }
}
