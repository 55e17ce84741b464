//! Wall-clock time, in the units rows and wire formats use.

/// Unix milliseconds now (what task rows store).
pub fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Unix milliseconds now, unsigned.
pub fn now_millis_unsigned() -> u64 {
    u64::try_from(now_millis()).unwrap_or(0)
}

/// Milliseconds on a monotonic clock (since the first call in this process): the ledger
/// engine's clock (`tollgate_ledger`). It never jumps back when the wall clock is set, and it
/// runs on while the process is stopped, so a replica that was paused sees the time it lost
/// and gives up the leases it can no longer trust (`docs/decisions.md`, "Fenced leases").
pub fn monotonic_millis() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let start = *START.get_or_init(std::time::Instant::now);
    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Unix seconds now (what `created` and `expires` fields carry).
pub fn unix_now() -> i64 {
    now_millis().div_euclid(1000)
}

/// RFC 3339 (`2027-01-31T00:00:00Z`, `2027-01-31T08:00:00.5+08:00`) to Unix milliseconds.
pub fn parse_rfc3339(text: &str) -> Result<i64, String> {
    let bad =
        || format!("--expires: {text:?} is not an RFC 3339 time such as 2027-01-31T00:00:00Z");
    let b = text.trim().as_bytes();
    let num = |range: std::ops::Range<usize>| -> Result<i64, String> {
        let digits = b.get(range).ok_or_else(bad)?;
        if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
            return Err(bad());
        }
        std::str::from_utf8(digits)
            .ok()
            .and_then(|d| d.parse().ok())
            .ok_or_else(bad)
    };
    let sep = |i: usize, allowed: &[u8]| -> Result<(), String> {
        match b.get(i) {
            Some(c) if allowed.contains(c) => Ok(()),
            _ => Err(bad()),
        }
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    sep(4, b"-")?;
    sep(7, b"-")?;
    sep(10, b"Tt ")?;
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    sep(13, b":")?;
    sep(16, b":")?;
    let mut i = 19;
    let mut millis = 0;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return Err(bad());
        }
        // Milliseconds: the first three digits, padded.
        let frac: String = b[start..i.min(start + 3)]
            .iter()
            .map(|d| char::from(*d))
            .chain(std::iter::repeat('0'))
            .take(3)
            .collect();
        millis = frac.parse::<i64>().map_err(|_| bad())?;
    }
    let offset_minutes = match b.get(i) {
        Some(b'Z' | b'z') if i + 1 == b.len() => 0,
        Some(sign @ (b'+' | b'-')) if i + 6 == b.len() => {
            sep(i + 3, b":")?;
            let (hours, minutes) = (num(i + 1..i + 3)?, num(i + 4..i + 6)?);
            if hours > 23 || minutes > 59 {
                return Err(bad());
            }
            let minutes = hours * 60 + minutes;
            if *sign == b'-' { -minutes } else { minutes }
        }
        _ => return Err(bad()),
    };
    let days_in_month = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        _ => return Err(bad()),
    };
    if day < 1 || day > days_in_month || hour > 23 || minute > 59 || second > 60 {
        return Err(bad());
    }
    let seconds =
        days_from_civil(year, month, day) * 86_400 + hour * 3_600 + minute * 60 + second.min(59)
            - offset_minutes * 60;
    Ok(seconds * 1_000 + millis)
}

/// Unix milliseconds as RFC 3339 in UTC, to the second.
pub fn format_rfc3339(millis: i64) -> String {
    let seconds = millis.div_euclid(1_000);
    let (days, rest) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3_600,
        rest % 3_600 / 60,
        rest % 60
    )
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The inverse of [`days_from_civil`]: (year, month, day).
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_times_read_and_print_exactly() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Ok(0));
        assert_eq!(parse_rfc3339("2000-03-01T00:00:00Z"), Ok(951_868_800_000));
        assert_eq!(
            parse_rfc3339("2027-01-31T08:00:00.25+08:00"),
            parse_rfc3339("2027-01-31T00:00:00.250Z")
        );
        assert_eq!(
            parse_rfc3339("2026-12-31T19:00:00-05:00"),
            parse_rfc3339("2027-01-01T00:00:00Z")
        );
        assert_eq!(parse_rfc3339("2024-02-29T12:00:00Z").map(|_| ()), Ok(()));
        for bad in [
            "2023-02-29T00:00:00Z",
            "2027-13-01T00:00:00Z",
            "2027-01-01",
            "2027-01-01T00:00:00",
            "2027-01-01T24:00:00Z",
            "2027-01-01T00:00:00+0800",
            "2027-01-01T00:00:00.Z",
            "2027-01-01T00:00:00+08:60",
            "2027-01-01T00:00:00+24:00",
            "tomorrow",
            "",
        ] {
            assert!(parse_rfc3339(bad).is_err(), "{bad}");
        }
        for millis in [0, 951_868_800_000, 1_798_675_200_000, -86_400_000] {
            assert_eq!(parse_rfc3339(&format_rfc3339(millis)), Ok(millis));
        }
        assert_eq!(format_rfc3339(1_798_761_600_000), "2027-01-01T00:00:00Z");
        assert_eq!(parse_rfc3339("2027-01-01T00:00:00Z"), Ok(1_798_761_600_000));
    }
}
