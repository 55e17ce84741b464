//! Listing tasks: `GET /api/v3/contents/generations/tasks?...` (wire-formats §5.3).
//!
//! The query parameters:
//!
//! | Parameter | Value | Default |
//! |---|---|---|
//! | `page_num` | page number, from 1 | [`DEFAULT_PAGE_NUM`] |
//! | `page_size` | tasks per page, 1 to [`MAX_PAGE_SIZE`] | [`DEFAULT_PAGE_SIZE`] |
//! | `filter.status` | one known [`TaskStatus`] | any |
//! | `filter.task_ids` | a task id, **repeated** for several (at most [`MAX_FILTER_TASK_IDS`]) | any |
//! | `filter.model` | a model id | any |
//! | `filter.service_tier` | `default` or `flex` | any |
//!
//! The answer is a [`ListResponse`], `{"total": N, "items": [task, ...]}`.

use serde::{Deserialize, Deserializer, Serialize};

use crate::error::{FieldError, Rule};
use crate::task::{Task, TaskStatus};

/// The page number when `page_num` is absent.
pub const DEFAULT_PAGE_NUM: u32 = 1;

/// The page size when `page_size` is absent.
pub const DEFAULT_PAGE_SIZE: u32 = 10;

/// The largest page size accepted (the vendor states none; this bounds one answer).
pub const MAX_PAGE_SIZE: u32 = 100;

/// The most `filter.task_ids` accepted in one query (the vendor states none; this bounds the
/// lookup).
pub const MAX_FILTER_TASK_IDS: usize = 100;

/// wire-formats §5.1: the values of `service_tier`.
pub const SERVICE_TIERS: [&str; 2] = ["default", "flex"];

/// A list query, read from the raw query string of the request URI.
///
/// ```
/// use tollgate_clip_tasks::{ListQuery, TaskStatus};
///
/// let query = ListQuery::parse(
///     "page_num=2&page_size=20&filter.status=running&filter.task_ids=cgt-a&filter.task_ids=cgt-b\
///      &filter.model=clipgen-cn-2.0-260128",
/// )?;
/// assert_eq!((query.page_num, query.page_size), (2, 20));
/// assert_eq!(query.status, Some(TaskStatus::Running));
/// assert_eq!(query.task_ids, ["cgt-a", "cgt-b"]);
/// assert_eq!(query.offset(), 20);
///
/// let err = ListQuery::parse("page_size=500").unwrap_err();
/// assert_eq!(err.field, "page_size");
/// # Ok::<(), tollgate_clip_tasks::FieldError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery {
    /// `page_num`, from 1.
    pub page_num: u32,
    /// `page_size`, 1 to [`MAX_PAGE_SIZE`].
    pub page_size: u32,
    /// `filter.status`.
    pub status: Option<TaskStatus>,
    /// `filter.task_ids`, in the order given; empty for no filter.
    pub task_ids: Vec<String>,
    /// `filter.model`.
    pub model: Option<String>,
    /// `filter.service_tier`.
    pub service_tier: Option<String>,
}

impl Default for ListQuery {
    fn default() -> Self {
        Self {
            page_num: DEFAULT_PAGE_NUM,
            page_size: DEFAULT_PAGE_SIZE,
            status: None,
            task_ids: Vec::new(),
            model: None,
            service_tier: None,
        }
    }
}

impl ListQuery {
    /// Reads a raw query string (with or without the leading `?`).
    ///
    /// Names and values are percent-decoded (`+` is a space) and must be UTF-8. An empty value
    /// counts as absent. A repeated `page_num`, `page_size`, `filter.status`, `filter.model` or
    /// `filter.service_tier` takes the last value; `filter.task_ids` collects every value, and
    /// a value with commas is also split, so a comma-joined list works too. Unknown parameters
    /// are ignored. Errors name the parameter:
    ///
    /// | Parameter | Rule | [`Rule`] |
    /// |---|---|---|
    /// | any | valid percent-encoding of UTF-8 (the parameter, or `query` when its name is bad) | [`Malformed`](Rule::Malformed) |
    /// | `page_num` | a whole number from 1 | [`OutOfRange`](Rule::OutOfRange) |
    /// | `page_size` | a whole number from 1 to [`MAX_PAGE_SIZE`] | [`OutOfRange`](Rule::OutOfRange) |
    /// | `filter.status` | a known status | [`UnsupportedValue`](Rule::UnsupportedValue) |
    /// | `filter.service_tier` | one of [`SERVICE_TIERS`] | [`UnsupportedValue`](Rule::UnsupportedValue) |
    /// | `filter.task_ids` | at most [`MAX_FILTER_TASK_IDS`] | [`TooMany`](Rule::TooMany) |
    pub fn parse(query: &str) -> Result<ListQuery, FieldError> {
        let query = query.strip_prefix('?').unwrap_or(query);
        let mut out = ListQuery::default();
        for pair in query.split('&').filter(|pair| !pair.is_empty()) {
            let (raw_name, raw_value) = pair.split_once('=').unwrap_or((pair, ""));
            let name = percent_decode(raw_name).ok_or_else(|| {
                FieldError::new(
                    "query",
                    Rule::Malformed,
                    format!(
                        "the query parameter name {raw_name:?} is not valid percent-encoded UTF-8"
                    ),
                )
            })?;
            let value = percent_decode(raw_value).ok_or_else(|| {
                FieldError::new(
                    name.clone(),
                    Rule::Malformed,
                    format!("'{name}' is not valid percent-encoded UTF-8"),
                )
            })?;
            if value.is_empty() {
                continue;
            }
            match name.as_str() {
                "page_num" => out.page_num = page_number("page_num", &value, u32::MAX)?,
                "page_size" => out.page_size = page_number("page_size", &value, MAX_PAGE_SIZE)?,
                "filter.status" => match TaskStatus::parse(&value) {
                    TaskStatus::Unknown(_) => {
                        return Err(FieldError::new(
                            "filter.status",
                            Rule::UnsupportedValue,
                            format!(
                                "'filter.status' {value:?} is not accepted; use one of {}",
                                TaskStatus::KNOWN.map(|s| s.to_string()).join(", ")
                            ),
                        ));
                    }
                    status => out.status = Some(status),
                },
                "filter.task_ids" => {
                    out.task_ids.extend(
                        value
                            .split(',')
                            .filter(|id| !id.is_empty())
                            .map(str::to_owned),
                    );
                    if out.task_ids.len() > MAX_FILTER_TASK_IDS {
                        return Err(FieldError::new(
                            "filter.task_ids",
                            Rule::TooMany,
                            format!("'filter.task_ids' takes at most {MAX_FILTER_TASK_IDS} ids"),
                        ));
                    }
                }
                "filter.model" => out.model = Some(value),
                "filter.service_tier" => {
                    if !SERVICE_TIERS.contains(&value.as_str()) {
                        return Err(FieldError::new(
                            "filter.service_tier",
                            Rule::UnsupportedValue,
                            format!(
                                "'filter.service_tier' {value:?} is not accepted; use one of {}",
                                SERVICE_TIERS.join(", ")
                            ),
                        ));
                    }
                    out.service_tier = Some(value);
                }
                _ => {}
            }
        }
        Ok(out)
    }

    /// The query string to send upstream (without the `?`): `page_num` and `page_size` always,
    /// then the filters that are set, `filter.task_ids` repeated; percent-encoded so that
    /// [`parse`](Self::parse) reads it back unchanged.
    ///
    /// ```
    /// use tollgate_clip_tasks::ListQuery;
    ///
    /// let query = ListQuery {
    ///     task_ids: vec!["a b".into(), "c&d".into()],
    ///     ..ListQuery::default()
    /// };
    /// assert_eq!(
    ///     query.to_query_string(),
    ///     "page_num=1&page_size=10&filter.task_ids=a%20b&filter.task_ids=c%26d"
    /// );
    /// ```
    pub fn to_query_string(&self) -> String {
        let mut out = format!("page_num={}&page_size={}", self.page_num, self.page_size);
        let mut push = |name: &str, value: &str| {
            out.push('&');
            out.push_str(name);
            out.push('=');
            out.push_str(&percent_encode(value));
        };
        if let Some(status) = &self.status {
            push("filter.status", status.as_str());
        }
        for id in &self.task_ids {
            push("filter.task_ids", id);
        }
        if let Some(model) = &self.model {
            push("filter.model", model);
        }
        if let Some(tier) = &self.service_tier {
            push("filter.service_tier", tier);
        }
        out
    }

    /// The number of tasks before this page: `(page_num - 1) × page_size`.
    pub fn offset(&self) -> u64 {
        u64::from(self.page_num.saturating_sub(1)) * u64::from(self.page_size)
    }

    /// Whether a task passes the filters (status, ids, model, service tier).
    pub fn matches(&self, task: &Task) -> bool {
        self.status.as_ref().is_none_or(|s| *s == task.status)
            && (self.task_ids.is_empty() || self.task_ids.contains(&task.id))
            && self.model.as_ref().is_none_or(|m| *m == task.model)
            && self
                .service_tier
                .as_ref()
                .is_none_or(|t| task.service_tier.as_ref() == Some(t))
    }
}

fn page_number(name: &str, value: &str, max: u32) -> Result<u32, FieldError> {
    match value.parse::<u32>() {
        Ok(n) if (1..=max).contains(&n) && value.bytes().all(|b| b.is_ascii_digit()) => Ok(n),
        _ => Err(FieldError::new(
            name,
            Rule::OutOfRange,
            if max == u32::MAX {
                format!("'{name}' must be a whole number from 1, not {value:?}")
            } else {
                format!("'{name}' must be a whole number from 1 to {max}, not {value:?}")
            },
        )),
    }
}

/// Percent-decodes a query component (`+` is a space); `None` for a bad escape or bytes that
/// are not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let high = hex_value(*bytes.get(i + 1)?)?;
                let low = hex_value(*bytes.get(i + 2)?)?;
                out.push((high << 4) | low);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            byte => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

fn hex_value(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

/// Percent-encodes everything but the RFC 3986 unreserved characters.
fn percent_encode(text: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 0x0f)]));
        }
    }
    out
}

/// The answer to a list query (wire-formats §5.3): `{"total": N, "items": [task, ...]}`.
///
/// ```
/// use tollgate_clip_tasks::{ListResponse, Task, TaskStatus};
///
/// let page = ListResponse {
///     total: 1,
///     items: vec![Task::new("cgt-1", "clipgen-cn-2.0-260128", TaskStatus::Queued)],
/// };
/// let json = serde_json::to_string(&page)?;
/// assert_eq!(json, r#"{"total":1,"items":[{"id":"cgt-1","model":"clipgen-cn-2.0-260128","status":"queued"}]}"#);
/// assert_eq!(serde_json::from_str::<ListResponse>(&json)?, page);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(rename = "ClipTaskList")
)]
pub struct ListResponse {
    /// The number of tasks that pass the filters, over all pages.
    #[serde(default)]
    pub total: u64,
    /// The tasks of this page.
    #[serde(default, deserialize_with = "null_as_empty_tasks")]
    pub items: Vec<Task>,
}

fn null_as_empty_tasks<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Task>, D::Error> {
    Ok(Option::<Vec<Task>>::deserialize(deserializer)?.unwrap_or_default())
}
