use tollgate_billing::Amount;

/// What can go wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The balance minus open holds does not cover the requested hold.
    #[error("insufficient balance: {available} available, {requested} requested")]
    InsufficientBalance {
        /// What the account may still spend.
        available: Amount,
        /// The hold that was refused.
        requested: Amount,
    },
    /// A correction would take more than the account has available (balance − held −
    /// leased).
    #[error(
        "{requested} is more than the {available} available: {held} is held by tasks and {leased} leased by running gateways"
    )]
    NotAvailable {
        /// What the account could give.
        available: Amount,
        /// Its open task holds.
        held: Amount,
        /// Its replicas' open leases.
        leased: Amount,
        /// What the correction would take.
        requested: Amount,
    },
    /// An account or key already has as many video tasks in flight as its policy allows.
    #[error("{limit} video tasks in flight already for this {holder}")]
    TooManyTasks {
        /// `account` or `key`.
        holder: &'static str,
        /// Its limit.
        limit: u32,
    },
    /// No account, key or hold with that id or name.
    #[error("not found: {0}")]
    NotFound(String),
    /// The account, or the key, is disabled.
    #[error("account disabled: {0}")]
    Disabled(String),
    /// The key was revoked for good: it no longer exists as a credential.
    #[error("key revoked: {0}")]
    Revoked(String),
    /// A name that must be unique is taken.
    #[error("already exists: {0}")]
    AlreadyExists(String),
    /// Another transaction changed the row meanwhile (a compare-and-swap lost): asked again,
    /// it applies or finds itself applied.
    #[error("changed meanwhile: {0}")]
    Raced(String),
    /// A name that must not be empty was.
    #[error("invalid name: {0}")]
    InvalidName(String),
    /// An amount that must be positive was not, or arithmetic overflowed.
    #[error("invalid amount: {0}")]
    InvalidAmount(String),
    /// A price version that cannot be made: a negative price, a changed meter, a time past.
    #[error("invalid price: {0}")]
    InvalidPrice(String),
    /// The database URL is neither `sqlite://…` nor `postgres://…`.
    #[error("unsupported database URL {0:?}: use sqlite://PATH or postgres://…")]
    UnsupportedUrl(String),
    /// A file-system error while preparing an SQLite file.
    #[error("i/o: {0}")]
    Io(String),
    /// A row held a value this version cannot read.
    #[error("corrupt row: {0}")]
    Corrupt(String),
    /// The database refused or failed.
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    /// SQLite refused or failed on the journal thread's connection.
    #[error("database: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

impl StoreError {
    /// Whether the database could not be reached at all (no connection in time, the connection
    /// broken), rather than refusing what was asked.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            StoreError::Database(
                sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_)
            )
        )
    }
}
