//! Wall-clock time, in the units rows and wire formats use.

/// Unix milliseconds now (what task rows store).
pub fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Unix seconds now (what `created` and `expires` fields carry).
pub fn unix_now() -> i64 {
    now_millis().div_euclid(1000)
}
