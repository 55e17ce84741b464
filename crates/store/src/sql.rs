//! The few statement shapes the ledger journal needs, behind one small trait, so that its logic
//! is written once and runs both on an sqlx connection (PostgreSQL, and SQLite when no journal
//! thread can be used) and on the SQLite journal thread's own connection
//! ([`crate::sqlite_journal`]). Statements use `$n` placeholders, numbered in order.

use crate::StoreError;
use std::ops::Range;
use std::sync::OnceLock;

/// A bound parameter.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Param<'a> {
    Int(i64),
    Text(&'a str),
    OptText(Option<&'a str>),
    OptInt(Option<i64>),
}

/// The type of a selected column.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Col {
    Int,
    Text,
    OptText,
}

/// A selected value.
#[derive(Debug, Clone)]
pub(crate) enum Cell {
    Int(i64),
    Text(String),
    OptText(Option<String>),
}

/// A selected row, its columns typed as asked.
#[derive(Debug)]
pub(crate) struct Row(pub(crate) Vec<Cell>);

impl Row {
    /// Reads one cell per column with `read` (given the column's index and type).
    pub(crate) fn read<E>(
        columns: &[Col],
        mut read: impl FnMut(usize, Col) -> Result<Cell, E>,
    ) -> Result<Row, E> {
        let mut cells = Vec::with_capacity(columns.len());
        for (i, col) in columns.iter().enumerate() {
            cells.push(read(i, *col)?);
        }
        Ok(Row(cells))
    }

    pub(crate) fn int(&self, i: usize) -> Result<i64, StoreError> {
        match self.0.get(i) {
            Some(Cell::Int(v)) => Ok(*v),
            _ => Err(StoreError::Corrupt(format!("column {i} is not an integer"))),
        }
    }

    pub(crate) fn text(&mut self, i: usize) -> Result<String, StoreError> {
        match self.0.get_mut(i) {
            Some(Cell::Text(v)) => Ok(std::mem::take(v)),
            _ => Err(StoreError::Corrupt(format!("column {i} is not text"))),
        }
    }

    pub(crate) fn opt_text(&mut self, i: usize) -> Result<Option<String>, StoreError> {
        match self.0.get_mut(i) {
            Some(Cell::OptText(v)) => Ok(v.take()),
            _ => Err(StoreError::Corrupt(format!(
                "column {i} is not nullable text"
            ))),
        }
    }
}

/// A multi-row `INSERT INTO {table} ({columns}) VALUES ($1, …), …` (the journal's batches):
/// rows go in chunks of a power of two (`max_rows`, …, 2, 1), so that only a few distinct
/// statements exist — each prepared once per connection, then taken from the statement cache —
/// and each chunk size's text is written once per process, not once per batch (it cost about
/// 34,000 instructions a request: `docs/benchmarks.md`, "Instructions per request").
pub(crate) struct Insert {
    table: &'static str,
    /// Comma-separated column lists, joined in order.
    columns: &'static [&'static str],
    /// Placeholders per row: how many columns `columns` names.
    width: usize,
    /// The largest chunk, a power of two of at most 2⁸.
    max_rows: usize,
    /// The text of the chunk of 2ⁱ rows, once written.
    texts: [OnceLock<String>; 9],
}

impl Insert {
    /// The INSERT of rows of `width` values into `table`'s `columns`, at most `max_rows` a
    /// statement (a power of two, at most 256; keep `max_rows × width` under SQLite's 32,766
    /// and PostgreSQL's 65,535 bound parameters). `width` is the caller's typed row (an array's
    /// length, a constant); the columns are counted against it, so that in a `static` a
    /// mismatch is a compile error, not a statement that fails on its first use.
    pub(crate) const fn new(
        table: &'static str,
        columns: &'static [&'static str],
        width: usize,
        max_rows: usize,
    ) -> Insert {
        assert!(max_rows.is_power_of_two() && max_rows <= 256);
        assert!(count_columns(columns) == width, "one value per column");
        Insert {
            table,
            columns,
            width,
            max_rows,
            texts: [const { OnceLock::new() }; 9],
        }
    }

    /// `rows` rows in chunks, largest first: each chunk's range of rows and its statement.
    pub(crate) fn chunks(&self, rows: usize) -> impl Iterator<Item = (Range<usize>, &str)> {
        let mut start = 0;
        std::iter::from_fn(move || {
            let left = rows - start;
            if left == 0 {
                return None;
            }
            let size = self.max_rows.min(1 << left.ilog2());
            let chunk = start..start + size;
            start += size;
            Some((chunk, self.text(size)))
        })
    }

    /// The statement of one row.
    pub(crate) fn one(&self) -> &str {
        self.text(1)
    }

    /// The statement of `rows` rows, a power of two.
    fn text(&self, rows: usize) -> &str {
        debug_assert!(rows.is_power_of_two() && rows <= self.max_rows);
        self.texts[rows.trailing_zeros() as usize].get_or_init(|| {
            let mut sql = format!(
                "INSERT INTO {} ({}) VALUES ",
                self.table,
                self.columns.join(", ")
            );
            for i in 0..rows {
                if i > 0 {
                    sql.push(',');
                }
                sql.push('(');
                for k in 1..=self.width {
                    if k > 1 {
                        sql.push_str(", ");
                    }
                    sql.push_str(&format!("${}", i * self.width + k));
                }
                sql.push(')');
            }
            sql
        })
    }
}

/// The names in comma-separated column lists.
const fn count_columns(columns: &[&str]) -> usize {
    let mut count = 0;
    let mut list = 0;
    while list < columns.len() {
        let names = columns[list].as_bytes();
        count += 1;
        let mut at = 0;
        while at < names.len() {
            if names[at] == b',' {
                count += 1;
            }
            at += 1;
        }
        list += 1;
    }
    count
}

/// A connection inside a transaction.
pub(crate) trait Statements {
    /// Runs a statement; returns the rows it changed.
    async fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64, StoreError>;

    /// Runs a statement and reads its first row, if any (a `SELECT`, or `… RETURNING`).
    async fn fetch_optional(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        columns: &[Col],
    ) -> Result<Option<Row>, StoreError>;
}

fn bind<'q>(
    mut query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments>,
    params: &[Param<'_>],
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments> {
    for p in params {
        query = match *p {
            Param::Int(v) => query.bind(v),
            Param::Text(v) => query.bind(v.to_owned()),
            Param::OptText(v) => query.bind(v.map(str::to_owned)),
            Param::OptInt(v) => query.bind(v),
        };
    }
    query
}

impl Statements for sqlx::AnyConnection {
    async fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64, StoreError> {
        let query = bind(sqlx::query(sqlx::AssertSqlSafe(sql)), params);
        Ok(query.execute(&mut *self).await?.rows_affected())
    }

    async fn fetch_optional(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        columns: &[Col],
    ) -> Result<Option<Row>, StoreError> {
        use sqlx::Row as _;
        let query = bind(sqlx::query(sqlx::AssertSqlSafe(sql)), params);
        let Some(row) = query.fetch_optional(&mut *self).await? else {
            return Ok(None);
        };
        let row = Row::read(columns, |i, col| -> Result<Cell, sqlx::Error> {
            Ok(match col {
                Col::Int => Cell::Int(row.try_get::<i64, _>(i)?),
                Col::Text => Cell::Text(row.try_get::<String, _>(i)?),
                Col::OptText => Cell::OptText(row.try_get::<Option<String>, _>(i)?),
            })
        })?;
        Ok(Some(row))
    }
}

#[cfg(test)]
mod tests {
    use super::Insert;

    static ROWS: Insert = Insert::new("t", &["a, b", "c"], 3, 8);

    #[test]
    fn rows_go_in_chunks_of_powers_of_two_each_row_once() {
        for rows in 0..40 {
            let mut next = 0;
            for (chunk, sql) in ROWS.chunks(rows) {
                assert_eq!(
                    chunk.start, next,
                    "{rows} rows: chunks in order, none skipped"
                );
                assert!(chunk.len().is_power_of_two() && chunk.len() <= 8);
                assert_eq!(sql.matches('(').count(), 1 + chunk.len(), "{sql}");
                assert_eq!(sql.matches('$').count(), 3 * chunk.len(), "{sql}");
                next = chunk.end;
            }
            assert_eq!(next, rows, "{rows} rows: every row written");
        }
        let chunks: Vec<usize> = ROWS.chunks(21).map(|(c, _)| c.len()).collect();
        assert_eq!(chunks, [8, 8, 4, 1]);
    }

    #[test]
    fn a_statement_is_written_once_and_numbers_its_placeholders_in_order() {
        assert_eq!(ROWS.one(), "INSERT INTO t (a, b, c) VALUES ($1, $2, $3)");
        let (_, two) = ROWS.chunks(2).next().unwrap_or_default();
        assert_eq!(
            two,
            "INSERT INTO t (a, b, c) VALUES ($1, $2, $3),($4, $5, $6)"
        );
        assert!(std::ptr::eq(ROWS.one(), ROWS.one()), "the text is kept");
    }
}
