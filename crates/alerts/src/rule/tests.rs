use super::*;

fn config(when: &str) -> RuleConfig {
    RuleConfig {
        name: "r".into(),
        when: when.into(),
        threshold: None,
        percents: None,
        factor: None,
        window_minutes: None,
        baseline_hours: None,
        min_spend: None,
        rate: None,
        min_tasks: None,
        min_failures: None,
        channel: None,
        account: None,
        key: None,
        webhook_url: "http://127.0.0.1:9/hook".into(),
        secret_env: Some("ALERT_SECRET".into()),
        format: None,
        action: None,
        throttle_rpm: None,
    }
}

fn amount(text: &str) -> Amount {
    text.parse().unwrap()
}

fn problem(c: &RuleConfig) -> (&'static str, String) {
    let e = Rule::from_config(c).unwrap_err();
    (e.field, e.problem)
}

#[test]
fn each_condition_takes_its_own_fields_and_names_the_others() {
    let mut c = config("balance_below");
    assert_eq!(problem(&c).0, "threshold");
    c.threshold = Some(amount("5"));
    assert!(Rule::from_config(&c).is_ok());
    c.factor = Some("3".into());
    assert_eq!(
        problem(&c),
        (
            "factor",
            "not a field of balance_below (it is of spend_velocity)".into()
        )
    );
    let mut c = config("budget_used");
    c.percents = Some(vec![100, 50, 50]);
    let rule = Rule::from_config(&c).unwrap();
    assert_eq!(
        rule.condition,
        Condition::BudgetUsed {
            percents: vec![50, 100]
        }
    );
    c.percents = Some(vec![0]);
    assert_eq!(problem(&c).0, "percents");
    assert_eq!(problem(&config("budget_exceeded")).0, "when");
    let mut c = config("task_failures");
    c.rate = Some("1".into());
    assert_eq!(problem(&c).0, "rate");
    c.rate = Some("half".into());
    assert_eq!(problem(&c).0, "rate");
    let mut c = config("spend_velocity");
    c.factor = Some("0.5".into());
    assert_eq!(problem(&c).0, "factor");
    c.factor = None;
    c.window_minutes = Some(0);
    assert_eq!(problem(&c).0, "window_minutes");
    let mut c = config("channel_circuit");
    c.name = "has space".into();
    assert_eq!(problem(&c).0, "name");
}

#[test]
fn a_delivery_needs_a_url_and_a_secret_unless_slack() {
    let mut c = config("channel_circuit");
    c.webhook_url = "ftp://x".into();
    assert_eq!(problem(&c).0, "webhook_url");
    let mut c = config("channel_circuit");
    c.secret_env = None;
    assert_eq!(problem(&c).0, "secret_env");
    c.format = Some("slack".into());
    assert_eq!(Rule::from_config(&c).unwrap().target.format, Format::Slack);
    c.format = Some("teams".into());
    assert_eq!(problem(&c).0, "format");
    let mut c = config("channel_circuit");
    c.secret_env = Some("NOT-A-VAR".into());
    assert_eq!(problem(&c).0, "secret_env");
}

#[test]
fn only_rules_about_a_key_or_an_account_act() {
    let mut c = config("spend_velocity");
    c.action = Some("disable".into());
    assert_eq!(Rule::from_config(&c).unwrap().action, Some(Action::Disable));
    c.action = Some("throttle".into());
    assert_eq!(problem(&c).0, "throttle_rpm");
    c.throttle_rpm = Some(10);
    assert_eq!(
        Rule::from_config(&c).unwrap().action,
        Some(Action::Throttle { rpm: 10 })
    );
    c.action = Some("disable".into());
    assert_eq!(problem(&c).0, "throttle_rpm");
    c.action = Some("delete".into());
    c.throttle_rpm = None;
    assert_eq!(problem(&c).0, "action");
    let mut c = config("channel_circuit");
    c.action = Some("disable".into());
    assert_eq!(problem(&c).0, "action");
}

#[test]
fn a_balance_fires_below_its_threshold_only() {
    let mut c = config("balance_below");
    c.threshold = Some(amount("5"));
    let rule = Rule::from_config(&c).unwrap();
    let at = |balance: &str| {
        rule.judge(&Observed::Balances(vec![Balance {
            account_id: "acct_1".into(),
            account_name: "alice".into(),
            balance: amount(balance),
        }]))[0]
            .level
    };
    assert_eq!(at("4.999999999"), 1);
    assert_eq!(at("5"), 0);
    assert_eq!(at("-1"), 1);
    // Another condition's observations are not this rule's.
    assert!(rule.judge(&Observed::Circuits(vec![])).is_empty());
}

#[test]
fn a_budget_reports_the_highest_percentage_reached_per_period() {
    let rule = Rule::from_config(&config("budget_used")).unwrap();
    let at = |spent: &str| {
        let v = rule.judge(&Observed::Budgets(vec![BudgetUse {
            holder_kind: "key",
            holder_id: "key_1".into(),
            account_id: "acct_1".into(),
            period: "day",
            period_start: "2026-11-27".into(),
            spent: amount(spent),
            budget: amount("10"),
        }]));
        (v[0].level, v[0].subject.clone())
    };
    assert_eq!(at("4.99"), (0, "key:key_1:day:2026-11-27".into()));
    assert_eq!(at("5").0, 50);
    assert_eq!(at("9.99").0, 80);
    assert_eq!(at("10").0, 100);
    assert_eq!(at("250").0, 100);
    assert!(!rule.resolves());
}

#[test]
fn spend_velocity_compares_a_key_with_its_own_baseline() {
    // 5 minutes against 24 hours: a baseline of 28.8 a day is 0.1 per window.
    let rule = Rule::from_config(&config("spend_velocity")).unwrap();
    let at = |recent: &str, before: &str| {
        rule.judge(&Observed::Spend(vec![KeySpend {
            key_id: "key_1".into(),
            account_id: "acct_1".into(),
            recent: amount(recent),
            before: amount(before),
        }]))[0]
            .clone()
    };
    let v = at("1", "28.8");
    assert_eq!(v.level, 1, "1 is 10 × 0.1, over 5 ×");
    assert_eq!(v.facts["baseline_per_window"], "0.1");
    assert_eq!(at("0.5", "28.8").level, 0, "0.5 is exactly 5 ×: not over");
    assert_eq!(
        at("0.99", "0").level,
        0,
        "under min_spend, however new the key"
    );
    assert_eq!(
        at("1", "0").level,
        1,
        "a key with no history that spends the minimum"
    );
    assert_eq!(at("100", "28800").level, 0, "a busy key at its usual pace");
    assert_eq!(
        v.acts_on,
        Some(Holder {
            kind: "key",
            id: "key_1".into()
        })
    );
}

#[test]
fn circuits_and_task_failures() {
    let rule = Rule::from_config(&config("channel_circuit")).unwrap();
    let v = rule.judge(&Observed::Circuits(vec![
        Circuit {
            channel: "a".into(),
            open_on: vec!["r1".into()],
        },
        Circuit {
            channel: "b".into(),
            open_on: vec![],
        },
    ]));
    assert_eq!((v[0].level, v[1].level), (1, 0));
    assert_eq!(v[0].subject, "channel:a");
    let rule = Rule::from_config(&config("task_failures")).unwrap();
    let at = |failed, finished| {
        rule.judge(&Observed::Tasks(vec![TaskOutcomes {
            channel: "v".into(),
            failed,
            finished,
        }]))[0]
            .level
    };
    assert_eq!(at(4, 4), 0, "fewer than min_tasks");
    assert_eq!(at(3, 5), 1);
    assert_eq!(at(5, 10), 0, "exactly the rate: not above");
}

#[test]
fn payment_signature_failures_and_refunds_after_spend() {
    let mut c = config("payment_signature_failures");
    c.min_failures = Some(3);
    let rule = Rule::from_config(&c).unwrap();
    assert!(rule.resolves());
    let at = |failures| {
        rule.judge(&Observed::SignatureFailures(vec![SignatureFailures {
            provider: "stripe".into(),
            failures,
        }]))[0]
            .clone()
    };
    assert_eq!(at(2).level, 0);
    assert_eq!(at(3).level, 1);
    assert_eq!(at(3).subject, "provider:stripe");
    c.account = Some("acme".into());
    assert_eq!(problem(&c).0, "account");

    let mut c = config("refund_after_spend");
    c.account = Some("acme".into());
    let rule = Rule::from_config(&c).unwrap();
    assert!(!rule.resolves(), "each refund is told once");
    c.min_failures = Some(1);
    assert_eq!(problem(&c).0, "min_failures");
    let v = rule.judge(&Observed::RefundsAfterSpend(vec![RefundAfterSpend {
        ledger_id: "led_1".into(),
        account_id: "acct_1".into(),
        payment_id: "pay_1".into(),
        cause: "refund".into(),
        amount: amount("-50"),
        overdraw: amount("48"),
        balance: amount("-45"),
    }]));
    assert_eq!((v[0].level, v[0].subject.as_str()), (1, "ledger:led_1"));
    assert!(v[0].summary.contains("pay_1") && v[0].summary.contains("48"));
}

#[test]
fn a_change_is_news_once() {
    use Change::*;
    assert_eq!(Change::between(0, 1, true), Some(Fired));
    assert_eq!(Change::between(1, 1, true), None);
    assert_eq!(Change::between(1, 0, true), Some(Resolved));
    assert_eq!(Change::between(0, 0, true), None);
    // A budget: 50 then 80 fire; a fall (a raised budget) is no news.
    assert_eq!(Change::between(50, 80, false), Some(Fired));
    assert_eq!(Change::between(80, 50, false), None);
    assert_eq!(Change::between(80, 0, false), None);
}

proptest::proptest! {
    /// Whatever the levels observed, in whatever order, a subject's events alternate: never
    /// two resolutions in a row, a resolution only after a firing.
    #[test]
    fn events_of_a_subject_alternate(levels in proptest::collection::vec(0i64..3, 0..40)) {
        let mut stored = 0;
        let mut last = None;
        for level in levels {
            if let Some(change) = Change::between(stored, level, true) {
                if change == Change::Resolved {
                    proptest::prop_assert_ne!(last, Some(Change::Resolved));
                    proptest::prop_assert!(stored > 0);
                }
                stored = level;
                last = Some(change);
            }
        }
    }
}
