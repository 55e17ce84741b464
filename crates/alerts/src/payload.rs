//! The body of a delivery (`docs/decisions.md`, "Alerts"): a Standard Webhooks event, or a
//! Slack incoming webhook's `{"text"}`.

use crate::rule::Format;
use serde_json::{Value, json};

/// An event as the gateway recorded it.
#[derive(Debug, Clone, PartialEq)]
pub struct Event<'a> {
    /// `evt_…`.
    pub id: &'a str,
    /// `alert.fired` or `alert.resolved`.
    pub event_type: &'a str,
    /// When it was recorded, RFC 3339 (UTC).
    pub timestamp: &'a str,
    pub rule: &'a str,
    /// The rule's condition (`balance_below`, …).
    pub when: &'a str,
    pub subject: &'a str,
    /// The subject's episode: how many times it has fired, this time included.
    pub episode: i64,
    pub level: i64,
    pub summary: &'a str,
    pub facts: &'a Value,
    /// What the gateway did (`key key_… disabled`), if the rule acts.
    pub action: Option<&'a str>,
}

/// The bytes posted for `event` in `format`.
pub fn body(format: Format, event: &Event<'_>) -> Vec<u8> {
    let value = match format {
        Format::Standard => json!({
            "type": event.event_type,
            "timestamp": event.timestamp,
            "data": {
                "event_id": event.id,
                "rule": event.rule,
                "when": event.when,
                "subject": event.subject,
                "episode": event.episode,
                "level": event.level,
                "summary": event.summary,
                "facts": event.facts,
                "action": event.action,
            },
        }),
        Format::Slack => {
            let mark = if event.event_type == "alert.resolved" {
                "resolved"
            } else {
                "fired"
            };
            let mut text = format!("tollgate alert {} {mark}: {}", event.rule, event.summary);
            if let Some(action) = event.action {
                text.push_str(&format!(" ({action})"));
            }
            json!({ "text": text })
        }
    };
    serde_json::to_vec(&value).unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn standard_and_slack_bodies() {
        let facts = json!({"balance": "4.2"});
        let event = Event {
            id: "evt_1",
            event_type: "alert.fired",
            timestamp: "2026-11-27T06:00:00.000Z",
            rule: "low",
            when: "balance_below",
            subject: "account:acct_1",
            episode: 2,
            level: 1,
            summary: "account a has a balance of 4.2, below 5",
            facts: &facts,
            action: None,
        };
        let standard: Value = serde_json::from_slice(&body(Format::Standard, &event)).unwrap();
        assert_eq!(standard["type"], "alert.fired");
        assert_eq!(standard["timestamp"], "2026-11-27T06:00:00.000Z");
        assert_eq!(standard["data"]["facts"]["balance"], "4.2");
        assert_eq!(standard["data"]["episode"], 2);
        let slack: Value = serde_json::from_slice(&body(
            Format::Slack,
            &Event {
                action: Some("key key_1 disabled"),
                ..event
            },
        ))
        .unwrap();
        assert_eq!(
            slack,
            json!({"text": "tollgate alert low fired: account a has a balance of 4.2, below 5 (key key_1 disabled)"})
        );
    }
}
