//! The few statement shapes the ledger journal needs, behind one small trait, so that its logic
//! is written once and runs both on an sqlx connection (PostgreSQL, and SQLite when no journal
//! thread can be used) and on the SQLite journal thread's own connection
//! ([`crate::sqlite_journal`]). Statements use `$n` placeholders, numbered in order.

use crate::StoreError;

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

/// `INSERT INTO {table} ({columns}) VALUES ($1, …), …`: `rows` rows of `width` placeholders each,
/// numbered in order (the journal's batched INSERTs).
pub(crate) fn insert_rows(table: &str, columns: &str, width: usize, rows: usize) -> String {
    let mut sql = format!("INSERT INTO {table} ({columns}) VALUES ");
    for i in 0..rows {
        if i > 0 {
            sql.push(',');
        }
        sql.push('(');
        for k in 1..=width {
            if k > 1 {
                sql.push_str(", ");
            }
            sql.push_str(&format!("${}", i * width + k));
        }
        sql.push(')');
    }
    sql
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
