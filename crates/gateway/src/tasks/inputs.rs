//! The checks of task content that need the network (docs/api.md §2.7 content rules 3 and 4), done
//! before the hold and before any upstream call:
//!
//! - a media URL whose host is a name must not resolve to a loopback, private or link-local
//!   address (the text of the URL was checked by `tollgate-clip-tasks`); a name that does not
//!   resolve is refused too, unless the operator set `media_dns_fail_closed = false`;
//! - a reference video's length is read from the head of its MP4 (a bounded, time-limited range
//!   fetch), so that a total over the series' limit is refused before any upstream call; when
//!   any length cannot be read the upstream decides. The hold covers the series' maximum
//!   either way: the header is the client's word, not a measurement (`docs/decisions.md`,
//!   "Bounded settlement").

use bytes::{Bytes, BytesMut};
use futures_util::future::join_all;
use http::{Request, header};
use http_body_util::BodyExt;
use std::net::IpAddr;
use std::time::Duration;
use tollgate_clip_tasks::{ContentItem, CreateTaskRequest, Rule};
use tollgate_exchange::errors::ApiError;
use tollgate_media_url::{Host, is_public_ip, parse_http_url, url_host};
use tollgate_probe::mp4::{Mp4Scan, scan_mp4};
use tollgate_request::state::State;
use tollgate_upstream::{Timeouts, full_body};

/// How long a name may take to resolve.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(2);

/// The most bytes read per range fetch of a reference video.
const RANGE_BYTES: u64 = 1 << 20;

/// The most range fetches per reference video (the head, then the `moov` where it lies).
const MAX_FETCHES: usize = 3;

/// Refuses a media URL whose host name resolves to a non-public address, naming the field.
pub async fn check_hosts_resolve_public(
    state: &State,
    request: &CreateTaskRequest,
) -> Result<(), ApiError> {
    let fail_closed = state.tasks.media_dns_fail_closed;
    let checks = media_urls(request)
        .filter(|(_, url)| !state.outbound.is_trusted(url))
        .filter_map(|(field, url)| match parse_http_url(url) {
            Ok(parsed) => match parsed.host {
                Host::Name(name) => Some((field, name, parsed.port)),
                Host::Ip(_) => None,
            },
            Err(_) => None,
        })
        .map(|(field, name, port)| async move {
            let lookup = tokio::net::lookup_host((name.as_str(), port));
            match tokio::time::timeout(RESOLVE_TIMEOUT, lookup).await {
                Ok(Ok(addrs)) => {
                    let bad: Vec<IpAddr> = addrs
                        .map(|a| a.ip())
                        .filter(|ip| !is_public_ip(*ip))
                        .collect();
                    match bad.first() {
                        Some(ip) => Err(ApiError::invalid(
                            field.clone(),
                            Rule::NotPublic.code(),
                            format!(
                                "'{field}' must be publicly accessible: {name} resolves to the non-public address {ip}"
                            ),
                        )),
                        None => Ok(()),
                    }
                }
                // Unresolvable here: refused, unless the operator leaves such names to the
                // upstream.
                _ if fail_closed => Err(ApiError::invalid(
                    field.clone(),
                    "unresolvable",
                    format!("'{field}' must be publicly accessible: {name} could not be resolved"),
                )),
                _ => Ok(()),
            }
        });
    for result in join_all(checks).await {
        result?;
    }
    Ok(())
}

/// The lengths of the request's reference videos in content order, when every one could be
/// read; `None` when there are none or any could not be.
pub async fn reference_video_seconds(
    state: &State,
    request: &CreateTaskRequest,
) -> Option<Vec<f64>> {
    let urls: Vec<&str> = request.reference_videos().map(|(_, url)| url).collect();
    if urls.is_empty() {
        return None;
    }
    let limit = state.tasks.reference_probe_timeout;
    let reads = urls.iter().map(|url| async move {
        match tokio::time::timeout(limit, mp4_seconds(state, url, limit)).await {
            Ok(Some(seconds)) => Some(seconds),
            _ => {
                tracing::info!(
                    url,
                    "could not read a reference video's length; the upstream will judge it"
                );
                None
            }
        }
    });
    join_all(reads).await.into_iter().collect()
}

async fn mp4_seconds(state: &State, url: &str, limit: Duration) -> Option<f64> {
    let timeouts = Timeouts {
        connect: limit,
        first_byte: limit,
        idle: limit,
    };
    let mut offset = 0u64;
    for _ in 0..MAX_FETCHES {
        let bytes = fetch_range(state, url, offset, &timeouts).await?;
        match scan_mp4(&bytes, offset) {
            Mp4Scan::Seconds(s) if s.is_finite() && s >= 0.0 => return Some(s),
            Mp4Scan::FetchFrom(next) if next > offset || (next == offset && offset > 0) => {
                if next == offset {
                    // The moov starts here but is larger than one range: not worth more.
                    return None;
                }
                offset = next;
            }
            _ => return None,
        }
    }
    None
}

/// `RANGE_BYTES` of `url` from `offset`; a server that ignores `Range` is read only up to that
/// many bytes (from its start, so only useful for offset 0).
async fn fetch_range(state: &State, url: &str, offset: u64, timeouts: &Timeouts) -> Option<Bytes> {
    let request = Request::get(url)
        .header(
            header::RANGE,
            format!("bytes={offset}-{}", offset + RANGE_BYTES - 1),
        )
        .body(full_body(Bytes::new()))
        .ok()?;
    // The one address rule, and its guarded client: the address connected to is checked, not
    // only the one resolved earlier (`tollgate_settings::outbound`).
    let response = state.outbound.send(request, timeouts).await.ok()?;
    let partial = response.status() == http::StatusCode::PARTIAL_CONTENT;
    if !(partial || response.status().is_success() && offset == 0) {
        return None;
    }
    let mut body = response.into_body();
    let mut buf = BytesMut::new();
    while (buf.len() as u64) < RANGE_BYTES {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    buf.extend_from_slice(&data);
                }
            }
            Some(Err(_)) => return None,
            None => break,
        }
    }
    buf.truncate(usize::try_from(RANGE_BYTES).unwrap_or(usize::MAX));
    Some(buf.freeze())
}

/// Every http(s) media URL of the content, with its field path.
fn media_urls(request: &CreateTaskRequest) -> impl Iterator<Item = (String, &str)> {
    request
        .content
        .iter()
        .enumerate()
        .filter_map(|(i, item)| match item {
            ContentItem::ImageUrl { image_url, .. } => Some((
                format!("content[{i}].image_url.url"),
                image_url.url.as_str(),
            )),
            ContentItem::VideoUrl { video_url, .. } => Some((
                format!("content[{i}].video_url.url"),
                video_url.url.as_str(),
            )),
            ContentItem::AudioUrl { audio_url, .. } => Some((
                format!("content[{i}].audio_url.url"),
                audio_url.url.as_str(),
            )),
            _ => None,
        })
        .filter(|(_, url)| url_host(url).is_some())
}
