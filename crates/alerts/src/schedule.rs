//! When a failed delivery is tried again (`docs/decisions.md`, "Alerts"). The default follows
//! the Standard Webhooks recommendation: 5 seconds, 5 minutes, 30 minutes, 2 hours, 5 hours, 10
//! hours and 10 hours after each failure — eight attempts over about a day — then the delivery
//! is given up (and can be redelivered by hand).

/// The waits after each failed attempt, in seconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetrySchedule(Vec<u64>);

/// The Standard Webhooks recommendation.
pub const DEFAULT_RETRY_SECONDS: [u64; 7] = [5, 300, 1800, 7200, 18000, 36000, 36000];

impl Default for RetrySchedule {
    fn default() -> Self {
        RetrySchedule(DEFAULT_RETRY_SECONDS.to_vec())
    }
}

impl RetrySchedule {
    /// A schedule of these waits, in seconds.
    pub fn new(seconds: Vec<u64>) -> RetrySchedule {
        RetrySchedule(seconds)
    }

    /// How long after the failure of attempt number `attempt` (1 for the first) the next is
    /// made, in milliseconds; `None` once the schedule is spent.
    pub fn after_failure(&self, attempt: u32) -> Option<i64> {
        let index = usize::try_from(attempt).ok()?.checked_sub(1)?;
        self.0
            .get(index)
            .map(|s| i64::try_from(s.saturating_mul(1000)).unwrap_or(i64::MAX))
    }

    /// The most attempts a delivery gets.
    pub fn attempts(&self) -> usize {
        self.0.len() + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_eight_attempts_over_about_a_day() {
        let s = RetrySchedule::default();
        assert_eq!(s.attempts(), 8);
        assert_eq!(s.after_failure(1), Some(5_000));
        assert_eq!(s.after_failure(7), Some(36_000_000));
        assert_eq!(s.after_failure(8), None);
        assert_eq!(s.after_failure(0), None);
        let total: u64 = DEFAULT_RETRY_SECONDS.iter().sum();
        assert_eq!(total, 99_305, "about 27.6 hours");
    }
}
