//! `GET /api/v3/contents/generations/tasks?...`: query parsing (defaults, repeated task ids,
//! percent-encoding, errors naming the parameter), the query sent upstream, filtering, and the
//! list response.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use serde_json::json;
use tollgate_clip_tasks::list::{MAX_FILTER_TASK_IDS, MAX_PAGE_SIZE};
use tollgate_clip_tasks::{ListQuery, ListResponse, Rule, Task, TaskStatus};

#[track_caller]
fn refused(query: &str, field: &str, rule: Rule) {
    let err = ListQuery::parse(query).expect_err("expected an error");
    assert_eq!(
        (err.field.as_str(), err.rule),
        (field, rule),
        "{query}: {err:?}"
    );
    assert!(err.message.contains(field) || field == "query", "{err}");
}

#[test]
fn defaults() {
    for query in ["", "?", "&&", "unknown=1&other", "page_num=&filter.status="] {
        let parsed = ListQuery::parse(query).unwrap();
        assert_eq!(parsed, ListQuery::default(), "{query}");
    }
    let default = ListQuery::default();
    assert_eq!((default.page_num, default.page_size), (1, 10));
    assert_eq!(default.offset(), 0);
}

#[test]
fn the_reference_query() {
    let query = ListQuery::parse(
        "?page_num=1&page_size=10&filter.status=queued&filter.task_ids=a&filter.task_ids=b\
         &filter.model=clipgen-cn-2.0-260128&filter.service_tier=flex",
    )
    .unwrap();
    assert_eq!(
        query,
        ListQuery {
            page_num: 1,
            page_size: 10,
            status: Some(TaskStatus::Queued),
            task_ids: vec!["a".into(), "b".into()],
            model: Some("clipgen-cn-2.0-260128".into()),
            service_tier: Some("flex".into()),
        }
    );
}

#[test]
fn repeated_and_comma_joined_task_ids() {
    let query =
        ListQuery::parse("filter.task_ids=cgt-1&filter.task_ids=cgt-2,cgt-3&filter.task_ids=,")
            .unwrap();
    assert_eq!(query.task_ids, ["cgt-1", "cgt-2", "cgt-3"]);
    let ids: Vec<String> = (0..MAX_FILTER_TASK_IDS)
        .map(|i| format!("filter.task_ids=t{i}"))
        .collect();
    assert_eq!(
        ListQuery::parse(&ids.join("&")).unwrap().task_ids.len(),
        MAX_FILTER_TASK_IDS
    );
    refused(
        &format!("{}&filter.task_ids=one-more", ids.join("&")),
        "filter.task_ids",
        Rule::TooMany,
    );
}

#[test]
fn percent_encoding() {
    let query = ListQuery::parse(
        "filter%2Emodel=clipgen%2Dcn%2D2.0%2D260128&filter.task_ids=cgt%2D1&filter.task_ids=a+b\
         &filter.task_ids=%E4%BB%BB%E5%8A%A1&filter.status=%71ueued&page%5Fsize=%32%30",
    )
    .unwrap();
    assert_eq!(query.model.as_deref(), Some("clipgen-cn-2.0-260128"));
    assert_eq!(query.task_ids, ["cgt-1", "a b", "任务"]);
    assert_eq!(query.status, Some(TaskStatus::Queued));
    assert_eq!(query.page_size, 20);
    // A comma sent encoded still splits: the value is decoded first.
    assert_eq!(
        ListQuery::parse("filter.task_ids=x%2Cy").unwrap().task_ids,
        ["x", "y"]
    );
}

#[test]
fn bad_percent_encoding_names_the_parameter() {
    refused("filter.model=%zz", "filter.model", Rule::Malformed);
    refused("filter.model=abc%", "filter.model", Rule::Malformed);
    refused("filter.model=abc%4", "filter.model", Rule::Malformed);
    refused("filter.task_ids=%E4%BB", "filter.task_ids", Rule::Malformed);
    refused("filter.task_ids=%FF", "filter.task_ids", Rule::Malformed);
    refused("page%zz=1", "query", Rule::Malformed);
}

#[test]
fn page_numbers_and_sizes() {
    let query = ListQuery::parse("page_num=3&page_size=25").unwrap();
    assert_eq!(
        (query.page_num, query.page_size, query.offset()),
        (3, 25, 50)
    );
    assert_eq!(
        ListQuery::parse(&format!("page_size={MAX_PAGE_SIZE}"))
            .unwrap()
            .page_size,
        100
    );
    assert_eq!(
        ListQuery::parse("page_num=4294967295").unwrap().page_num,
        u32::MAX
    );
    // The last value wins.
    assert_eq!(
        ListQuery::parse("page_num=2&page_num=5").unwrap().page_num,
        5
    );
    for bad in ["0", "-1", "abc", "1.5", "+1", " 1", "4294967296", "1e3"] {
        refused(&format!("page_num={bad}"), "page_num", Rule::OutOfRange);
    }
    for bad in ["0", "101", "1000", "x"] {
        refused(&format!("page_size={bad}"), "page_size", Rule::OutOfRange);
    }
}

#[test]
fn status_and_service_tier_filters() {
    for status in TaskStatus::KNOWN {
        let query = ListQuery::parse(&format!("filter.status={status}")).unwrap();
        assert_eq!(query.status, Some(status));
    }
    assert_eq!(
        ListQuery::parse("filter.status=SUCCEEDED").unwrap().status,
        Some(TaskStatus::Succeeded)
    );
    refused(
        "filter.status=paused",
        "filter.status",
        Rule::UnsupportedValue,
    );
    assert_eq!(
        ListQuery::parse("filter.service_tier=default")
            .unwrap()
            .service_tier
            .as_deref(),
        Some("default")
    );
    refused(
        "filter.service_tier=turbo",
        "filter.service_tier",
        Rule::UnsupportedValue,
    );
}

#[test]
fn query_string_for_upstream() {
    let query = ListQuery {
        page_num: 2,
        page_size: 50,
        status: Some(TaskStatus::Failed),
        task_ids: vec!["cgt-1".into(), "a b&c=d".into()],
        model: Some("clipgen-cn-2.0-260128".into()),
        service_tier: Some("flex".into()),
    };
    let text = query.to_query_string();
    assert_eq!(
        text,
        "page_num=2&page_size=50&filter.status=failed&filter.task_ids=cgt-1\
         &filter.task_ids=a%20b%26c%3Dd&filter.model=clipgen-cn-2.0-260128&filter.service_tier=flex"
    );
    assert_eq!(ListQuery::parse(&text).unwrap(), query);
}

#[test]
fn filters_match_tasks() {
    let mut task = Task::new("cgt-1", "clipgen-cn-2.0-260128", TaskStatus::Running);
    task.service_tier = Some("flex".into());
    let passes = |query: &str| ListQuery::parse(query).unwrap().matches(&task);
    assert!(passes(""));
    assert!(passes(
        "filter.status=running&filter.model=clipgen-cn-2.0-260128"
    ));
    assert!(passes("filter.task_ids=cgt-0&filter.task_ids=cgt-1"));
    assert!(passes("filter.service_tier=flex"));
    assert!(!passes("filter.status=queued"));
    assert!(!passes("filter.task_ids=cgt-2"));
    assert!(!passes("filter.model=clipgen-cn-2.5-260301"));
    assert!(!passes("filter.service_tier=default"));
}

#[test]
fn list_response_round_trip() {
    let body = json!({"total": 2, "items": [
        {"id": "cgt-1", "model": "m", "status": "queued"},
        {"id": "cgt-2", "model": "m", "status": "succeeded",
         "content": {"video_url": "https://e.com/v.mp4"}, "usage": {"completion_tokens": 10}}
    ]});
    let page: ListResponse = serde_json::from_value(body.clone()).unwrap();
    assert_eq!(page.total, 2);
    assert_eq!(page.items[1].completion_tokens(), Some(10));
    assert_eq!(serde_json::to_value(&page).unwrap(), body);
    let empty: ListResponse = serde_json::from_value(json!({"total": 0, "items": null})).unwrap();
    assert!(empty.items.is_empty());
}

proptest! {
    #[test]
    fn to_query_string_parses_back(
        page_num in 1u32..,
        page_size in 1u32..=MAX_PAGE_SIZE,
        status in proptest::option::of(proptest::sample::select(TaskStatus::KNOWN.to_vec())),
        task_ids in proptest::collection::vec("[^,]{1,12}", 0..5),
        model in proptest::option::of("\\PC{1,20}"),
    ) {
        let query = ListQuery { page_num, page_size, status, task_ids, model, service_tier: None };
        prop_assert_eq!(ListQuery::parse(&query.to_query_string()).unwrap(), query);
    }

    #[test]
    fn parse_never_panics(query in "\\PC{0,60}") {
        let _ = ListQuery::parse(&query);
    }
}
