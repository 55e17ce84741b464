//! Sums of nano-units that cannot overflow, on both databases (issue 42 item 8). SQLite's
//! `SUM` of integers fails with "integer overflow" the moment a running sum passes `i64`, even
//! when the end result would fit again — all the credits ever made pass 9.2 × 10⁹ units in a
//! currency of small units, and an insider could use it to switch the audit off. PostgreSQL's
//! `SUM(bigint)` is `numeric`, which `sqlx::Any` cannot read.
//!
//! So a sum is taken in two halves: each value `v` as `v / 2³²` and `v % 2³²` (both truncate
//! toward zero, alike on both databases, so `v = high × 2³² + low` exactly). Each half's sum fits
//! `i64` for up to 2³¹ rows; [`total`] puts them back together in an `i128`.

use tollgate_billing::Total;

/// The two `BIGINT` columns of the sum of `expression` over a query's rows (0 for none), named
/// `{name}_high` and `{name}_low`: select them and read them back with [`total`].
pub(crate) fn wide_sum(expression: &str, name: &str) -> String {
    format!(
        "CAST(COALESCE(SUM(({expression}) / 4294967296), 0) AS BIGINT) AS {name}_high, \
         CAST(COALESCE(SUM(({expression}) % 4294967296), 0) AS BIGINT) AS {name}_low"
    )
}

/// The sum [`wide_sum`]'s two columns stand for.
pub(crate) fn total(high: i64, low: i64) -> Total {
    Total::from_nanos(i128::from(high) * (1_i128 << 32) + i128::from(low))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_put_back_are_the_value() {
        for v in [
            0,
            1,
            -1,
            i64::MAX,
            i64::MIN,
            1 << 32,
            -(1 << 32) - 7,
            123_456_789_012,
        ] {
            // Rust's `/` and `%` truncate toward zero, as SQLite's and PostgreSQL's do.
            assert_eq!(total(v / (1 << 32), v % (1 << 32)).nanos(), i128::from(v));
        }
    }
}
