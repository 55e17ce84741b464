//! The schema and its migrations.
//!
//! The DDL is written once for both engines: `TEXT` ids, `BIGINT` integers (nano-units, Unix
//! milliseconds, 0/1 flags — `sqlx::Any` has no decimal and no portable boolean), no
//! auto-increment. Migrations are numbered; each runs once and is recorded in
//! `tollgate_migrations`. On PostgreSQL an advisory lock keeps two replicas that start together
//! from migrating at the same time.
//!
//! PostgreSQL also gets stored routines ([`ROUTINES`]). They are code, not data: every start
//! (re)creates them, under the same lock, and a routine whose meaning changes gets a new
//! versioned name, so that replicas of two versions can run side by side during an upgrade.

use crate::{Backend, Store, StoreError, now_millis};

/// One schema step: its number, a name, and its statements.
struct Migration {
    version: i64,
    name: &'static str,
    statements: &'static [&'static str],
}

const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "accounts, keys, holds, ledger, tasks",
        statements: &[
            // An account owns a balance. balance_nanos = credits − captured charges = the sum of its
            // ledger rows; held_nanos = the sum of its open holds.
            "CREATE TABLE IF NOT EXISTS accounts (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            balance_nanos BIGINT NOT NULL DEFAULT 0,
            held_nanos BIGINT NOT NULL DEFAULT 0,
            disabled BIGINT NOT NULL DEFAULT 0,
            created_at BIGINT NOT NULL
        )",
            // API keys: only the SHA-256 of the secret is kept; `prefix` is what a listing shows.
            "CREATE TABLE IF NOT EXISTS api_keys (
            id TEXT PRIMARY KEY,
            account_id TEXT NOT NULL REFERENCES accounts(id),
            name TEXT NOT NULL,
            secret_hash TEXT NOT NULL UNIQUE,
            prefix TEXT NOT NULL,
            disabled BIGINT NOT NULL DEFAULT 0,
            created_at BIGINT NOT NULL
        )",
            "CREATE INDEX IF NOT EXISTS api_keys_account ON api_keys (account_id)",
            // A hold reserves part of a balance for one request or task. state: open → settled |
            // released, changed once by compare-and-swap.
            "CREATE TABLE IF NOT EXISTS holds (
            id TEXT PRIMARY KEY,
            account_id TEXT NOT NULL REFERENCES accounts(id),
            key_id TEXT,
            model TEXT NOT NULL,
            amount_nanos BIGINT NOT NULL,
            state TEXT NOT NULL,
            captured_nanos BIGINT,
            request_id TEXT,
            task_id TEXT,
            close_reason TEXT,
            created_at BIGINT NOT NULL,
            closed_at BIGINT
        )",
            "CREATE INDEX IF NOT EXISTS holds_account_state ON holds (account_id, state)",
            // The append-only ledger: every change of balance_nanos is one row. amount_nanos is
            // signed (credits positive, charges negative); balance_after_nanos is the balance right
            // after the row, for audits.
            "CREATE TABLE IF NOT EXISTS ledger (
            id TEXT PRIMARY KEY,
            account_id TEXT NOT NULL REFERENCES accounts(id),
            kind TEXT NOT NULL,
            amount_nanos BIGINT NOT NULL,
            balance_after_nanos BIGINT NOT NULL,
            model TEXT,
            quantity TEXT,
            hold_id TEXT UNIQUE,
            task_id TEXT,
            key_id TEXT,
            request_id TEXT,
            estimated BIGINT NOT NULL DEFAULT 0,
            note TEXT,
            created_at BIGINT NOT NULL
        )",
            "CREATE INDEX IF NOT EXISTS ledger_account ON ledger (account_id, created_at)",
            // Asynchronous video tasks (DESIGN §5). A row is written, state `submitting`, before the
            // upstream call; `id` is our public id (never the upstream's). Workers lease due rows
            // (next_poll_at, lease_until, lease_owner); terminal transitions are a compare-and-swap
            // on `status`, and only the winner settles or releases `hold_id`. `pricing` snapshots the
            // billing inputs (JSON) so a price change never reprices a task in flight.
            "CREATE TABLE IF NOT EXISTS tasks (
            id TEXT PRIMARY KEY,
            format TEXT NOT NULL,
            account_id TEXT NOT NULL REFERENCES accounts(id),
            key_id TEXT NOT NULL,
            model TEXT NOT NULL,
            channel TEXT NOT NULL,
            upstream_model TEXT NOT NULL,
            upstream_id TEXT,
            status TEXT NOT NULL,
            upstream_status TEXT,
            progress BIGINT NOT NULL DEFAULT 0,
            hold_id TEXT,
            pricing TEXT NOT NULL,
            request TEXT NOT NULL,
            result TEXT,
            error TEXT,
            created_at BIGINT NOT NULL,
            updated_at BIGINT NOT NULL,
            deadline_at BIGINT NOT NULL,
            next_poll_at BIGINT,
            lease_until BIGINT,
            lease_owner TEXT,
            poll_failures BIGINT NOT NULL DEFAULT 0,
            last_client_poll_at BIGINT,
            hidden BIGINT NOT NULL DEFAULT 0
        )",
            "CREATE INDEX IF NOT EXISTS tasks_due ON tasks (status, next_poll_at)",
            "CREATE INDEX IF NOT EXISTS tasks_owner ON tasks (account_id, created_at)",
        ],
    },
    Migration {
        version: 2,
        name: "settings",
        statements: &[
            // Values every replica must share, such as the key that signs media links: the first
            // replica to start writes it, the others read it.
            "CREATE TABLE IF NOT EXISTS settings (
                name TEXT PRIMARY KEY,
                value TEXT NOT NULL,
                created_at BIGINT NOT NULL
            )",
        ],
    },
    Migration {
        version: 3,
        name: "credit leases, ledger anomalies",
        statements: &[
            // The sum of the account's open leases (DESIGN §4): what the replicas' ledger
            // engines may hold for requests without asking the database.
            "ALTER TABLE accounts ADD COLUMN leased_nanos BIGINT NOT NULL DEFAULT 0",
            // A lease: a slice of one account's balance reserved by one replica (`owner`) until
            // `expires_at`, renewed while in use. amount_nanos is what is left of it (granted
            // minus the charges taken from it). state: open → returned | expired, once.
            "CREATE TABLE IF NOT EXISTS leases (
                id TEXT PRIMARY KEY,
                account_id TEXT NOT NULL REFERENCES accounts(id),
                owner TEXT NOT NULL,
                amount_nanos BIGINT NOT NULL,
                granted_nanos BIGINT NOT NULL,
                state TEXT NOT NULL,
                expires_at BIGINT NOT NULL,
                created_at BIGINT NOT NULL,
                closed_at BIGINT
            )",
            "CREATE INDEX IF NOT EXISTS leases_open ON leases (state, expires_at)",
            "CREATE INDEX IF NOT EXISTS leases_account ON leases (account_id, state)",
            // A charge the gateway refused to take in full (an upstream's usage beyond what it
            // can justify): what was reported, what was charged, why.
            "ALTER TABLE ledger ADD COLUMN anomaly TEXT",
            "ALTER TABLE ledger ADD COLUMN lease_id TEXT",
        ],
    },
    Migration {
        version: 4,
        name: "access policies",
        statements: &[
            // An account's and a key's access policy (`crate::policy`), JSON; NULL restricts
            // nothing.
            "ALTER TABLE accounts ADD COLUMN policy TEXT",
            "ALTER TABLE api_keys ADD COLUMN policy TEXT",
        ],
    },
    Migration {
        version: 5,
        name: "price groups",
        statements: &[
            // A price group (tier): every price of a key in it is multiplied by `multiplier`, a
            // decimal string (`crate::policy::PriceGroup`). A key without one pays list prices.
            "CREATE TABLE IF NOT EXISTS price_groups (
                name TEXT PRIMARY KEY,
                multiplier TEXT NOT NULL,
                created_at BIGINT NOT NULL
            )",
            // The group and multiplier a charge was priced with (NULL: list prices).
            "ALTER TABLE ledger ADD COLUMN price_group TEXT",
            "ALTER TABLE ledger ADD COLUMN price_multiplier TEXT",
        ],
    },
    Migration {
        version: 6,
        name: "usage log",
        statements: &[
            // The usage log (`crate::usage`): one row per billable request and per finished
            // task, for reports; pruned by age (`[usage] retention_days`), unlike the ledger.
            // No foreign keys and no primary key: ids are unique by construction (time and 48
            // random bits) and a page's cursor carries its time, so no index is looked up by
            // id; a row costs its three index entries and nothing more. The ledger already ties
            // money to accounts.
            "CREATE TABLE IF NOT EXISTS usage_log (
                id TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                kind TEXT NOT NULL,
                account_id TEXT NOT NULL,
                key_id TEXT,
                price_group TEXT,
                endpoint TEXT NOT NULL,
                model TEXT,
                channel TEXT,
                status BIGINT NOT NULL,
                meter TEXT,
                quantity TEXT,
                units BIGINT NOT NULL,
                charge_nanos BIGINT NOT NULL,
                hold_nanos BIGINT NOT NULL,
                latency_ms BIGINT NOT NULL,
                upstream_ms BIGINT,
                request_id TEXT,
                task_id TEXT,
                estimated BIGINT NOT NULL,
                note TEXT
            )",
            // The report's filters: by time alone, by account, by key (each then by time).
            "CREATE INDEX IF NOT EXISTS usage_log_time ON usage_log (created_at)",
            "CREATE INDEX IF NOT EXISTS usage_log_account ON usage_log (account_id, created_at)",
            "CREATE INDEX IF NOT EXISTS usage_log_key ON usage_log (key_id, created_at)",
        ],
    },
    Migration {
        version: 7,
        name: "quota windows",
        statements: &[
            // Windowed quotas (`crate::quota`): per holder (`acct_…` or `key_…`), quota
            // (`requests`, `tokens`, `spend_day`, …) and window, what all replicas have taken.
            "CREATE TABLE IF NOT EXISTS quota_windows (
                holder TEXT NOT NULL,
                quota TEXT NOT NULL,
                window_start BIGINT NOT NULL,
                taken BIGINT NOT NULL,
                updated_at BIGINT NOT NULL,
                PRIMARY KEY (holder, quota, window_start)
            )",
            "CREATE INDEX IF NOT EXISTS quota_windows_age ON quota_windows (window_start)",
        ],
    },
    Migration {
        version: 8,
        name: "per-model multipliers in price groups",
        statements: &[
            // A group's multipliers for single models, overriding its own (JSON: model →
            // decimal string); NULL: none.
            "ALTER TABLE price_groups ADD COLUMN model_multipliers TEXT",
        ],
    },
    Migration {
        version: 9,
        name: "admin tokens, admin audit log, idempotency keys, task events, channel switches",
        statements: &[
            // Admin API tokens: only the SHA-256 of the secret, as for API keys, in a table of
            // their own so that neither kind of credential is ever found by the other's lookup.
            "CREATE TABLE IF NOT EXISTS admin_tokens (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            secret_hash TEXT NOT NULL UNIQUE,
            prefix TEXT NOT NULL,
            read_only BIGINT NOT NULL,
            revoked BIGINT NOT NULL DEFAULT 0,
            created_at BIGINT NOT NULL
        )",
            // Every change an operator made (API or CLI): who, what, on what, before and after
            // (JSON), when. Ids are time-ordered, so the id is the paging cursor.
            "CREATE TABLE IF NOT EXISTS admin_audit (
            id TEXT PRIMARY KEY,
            created_at BIGINT NOT NULL,
            actor TEXT NOT NULL,
            action TEXT NOT NULL,
            target TEXT NOT NULL,
            before_json TEXT,
            after_json TEXT,
            request_id TEXT
        )",
            "CREATE INDEX IF NOT EXISTS admin_audit_target ON admin_audit (target, id)",
            // Idempotency keys of credits: written in the credit's transaction, so a retried
            // webhook finds the first credit instead of making a second one.
            "CREATE TABLE IF NOT EXISTS admin_idempotency (
            key TEXT PRIMARY KEY,
            fingerprint TEXT NOT NULL,
            ledger_id TEXT NOT NULL,
            created_at BIGINT NOT NULL
        )",
            // A task's history: every poll the workers recorded and how it ended.
            "CREATE TABLE IF NOT EXISTS task_events (
            task_id TEXT NOT NULL,
            created_at BIGINT NOT NULL,
            state TEXT NOT NULL,
            upstream_status TEXT,
            progress BIGINT,
            detail TEXT
        )",
            "CREATE INDEX IF NOT EXISTS task_events_task ON task_events (task_id, created_at)",
            // The admin API pages an account's ledger and every account's tasks newest first.
            "CREATE INDEX IF NOT EXISTS ledger_account_id ON ledger (account_id, id)",
            "CREATE INDEX IF NOT EXISTS tasks_time ON tasks (created_at)",
            // Channels an operator switched off (shared by replicas; absent: on).
            "CREATE TABLE IF NOT EXISTS channel_switches (
            name TEXT PRIMARY KEY,
            disabled BIGINT NOT NULL,
            updated_at BIGINT NOT NULL
        )",
        ],
    },
    Migration {
        version: 10,
        name: "usage rollup",
        statements: &[
            // Per hour and account, key, model, endpoint, status and meter: what the usage
            // log's records of that hour sum to (`crate::rollup`). Absent key, model or meter
            // are ''.
            "CREATE TABLE IF NOT EXISTS usage_hourly (
                hour BIGINT NOT NULL,
                account_id TEXT NOT NULL,
                key_id TEXT NOT NULL,
                model TEXT NOT NULL,
                endpoint TEXT NOT NULL,
                status BIGINT NOT NULL,
                meter TEXT NOT NULL,
                requests BIGINT NOT NULL,
                errors BIGINT NOT NULL,
                units BIGINT NOT NULL,
                charge_nanos BIGINT NOT NULL,
                PRIMARY KEY (hour, account_id, key_id, model, endpoint, status, meter)
            )",
            "CREATE INDEX IF NOT EXISTS usage_hourly_account ON usage_hourly (account_id, hour)",
            "CREATE INDEX IF NOT EXISTS usage_hourly_key ON usage_hourly (key_id, hour)",
        ],
    },
    Migration {
        version: 11,
        name: "fenced charges, the ledger's chain, usage records tied to charges, lease recalls",
        statements: &[
            // Each ledger row's place in its account's chain (`crate::audit`): `seq` counts the
            // account's rows from 1, `accounts.ledger_seq` is the last one given, and a row's
            // `balance_after_nanos` is the previous row's plus its own amount. Rows written
            // before this migration keep a NULL `seq`; the chain starts after them.
            "ALTER TABLE accounts ADD COLUMN ledger_seq BIGINT NOT NULL DEFAULT 0",
            "ALTER TABLE ledger ADD COLUMN seq BIGINT",
            "CREATE UNIQUE INDEX IF NOT EXISTS ledger_account_seq ON ledger (account_id, seq)",
            // What a charge could not take (`docs/decisions.md`, "Fenced leases"): a late charge
            // on a lease its replica no longer held, or a settlement above what the account had
            // available, is written for what there was; the rest is the operator's loss, said
            // in `anomaly`.
            "ALTER TABLE ledger ADD COLUMN loss_nanos BIGINT NOT NULL DEFAULT 0",
            // How far a row took the balance below what the account had available (balance −
            // held − leased): only an operator's correction with `allow_negative` does now.
            // Every negative balance must be covered by these (`tollgate audit`). Rows of
            // earlier versions that went below zero are attributed here, as they were written.
            "ALTER TABLE ledger ADD COLUMN overdraw_nanos BIGINT NOT NULL DEFAULT 0",
            "UPDATE ledger SET overdraw_nanos = CASE
                 WHEN -balance_after_nanos < -amount_nanos THEN -balance_after_nanos
                 ELSE -amount_nanos END
             WHERE balance_after_nanos < 0 AND amount_nanos < 0",
            // The charge a usage record belongs to: one record per charge, one charge per record.
            "ALTER TABLE usage_log ADD COLUMN hold_id TEXT",
            // A negative correction waiting for leases to shrink (`Store::credit_once`): while
            // `recall_until` is ahead, `recall_nanos` is kept out of new leases; a lease marked
            // `recall` gives its unreserved part back at its replica's next sweep.
            "ALTER TABLE accounts ADD COLUMN recall_nanos BIGINT NOT NULL DEFAULT 0",
            "ALTER TABLE accounts ADD COLUMN recall_until BIGINT NOT NULL DEFAULT 0",
            "ALTER TABLE leases ADD COLUMN recall BIGINT NOT NULL DEFAULT 0",
        ],
    },
    Migration {
        version: 12,
        name: "price versions, charges' explanations, the chained ledger, signed checkpoints",
        statements: &[
            // The price book (`crate::prices`, docs/architecture.md "Prices"): each model's list
            // tariffs over time (JSON, `tollgate_billing::Tariff`). A row is never updated: a
            // price change is a new version. `source` says who made it (`config`, `cli`,
            // `admin`); `reconstructed` marks the version an upgrade rebuilt from the
            // configuration for the rows written before versions existed.
            "CREATE TABLE IF NOT EXISTS price_versions (
                model TEXT NOT NULL,
                version BIGINT NOT NULL,
                tariff TEXT NOT NULL,
                effective_from BIGINT NOT NULL,
                created_at BIGINT NOT NULL,
                source TEXT NOT NULL,
                actor TEXT,
                reconstructed BIGINT NOT NULL DEFAULT 0,
                PRIMARY KEY (model, version)
            )",
            // The version a charge was priced at (with `model`, it names the tariff), and the
            // most the charge could be (`tollgate_metering::Bound`): what `tollgate audit
            // --recompute` needs to re-derive it.
            "ALTER TABLE ledger ADD COLUMN price_version BIGINT",
            "ALTER TABLE ledger ADD COLUMN bound_nanos BIGINT",
            "ALTER TABLE usage_log ADD COLUMN price_version BIGINT",
            // What explains a charge beside the record's other columns (docs/architecture.md,
            // "Explanations"): how its quantity was measured (`tollgate_billing::Measure`) and
            // why its bound is what it is.
            "ALTER TABLE usage_log ADD COLUMN measured TEXT",
            "ALTER TABLE usage_log ADD COLUMN bound_basis TEXT",
            // `tollgate explain REQUEST_ID`, `GET /admin/v1/requests/{id}` and
            // `GET /v1/charges/{request_id}` look a request's records up by its id.
            "CREATE INDEX IF NOT EXISTS usage_log_request ON usage_log (request_id)",
            // The chained ledger (`crate::chain`): each row's hash over its columns and the
            // previous row's hash in its account's chain; `accounts.ledger_head` is the last.
            // Rows written before this migration stay unhashed; each chain starts after them.
            "ALTER TABLE ledger ADD COLUMN hash TEXT",
            "ALTER TABLE accounts ADD COLUMN ledger_head TEXT",
            // Signed checkpoints of every chain head (`crate::checkpoint`): `heads` is the
            // signed text, `key_id` names the operator key that signed it.
            "CREATE TABLE IF NOT EXISTS ledger_checkpoints (
                id TEXT PRIMARY KEY,
                created_at BIGINT NOT NULL,
                heads TEXT NOT NULL,
                key_id TEXT NOT NULL,
                public_key TEXT NOT NULL,
                signature TEXT NOT NULL
            )",
        ],
    },
    Migration {
        version: 13,
        name: "alerts: levels, events, deliveries and their attempts, circuit reports, rules; tasks' traces",
        statements: &[
            // Each rule's level per subject (`crate::alerts`): changed by compare-and-swap, so
            // that one replica reports a change. `episode` counts the subject's firings.
            "CREATE TABLE IF NOT EXISTS alert_levels (
                rule TEXT NOT NULL,
                subject TEXT NOT NULL,
                level BIGINT NOT NULL,
                episode BIGINT NOT NULL,
                changed_at BIGINT NOT NULL,
                PRIMARY KEY (rule, subject)
            )",
            // The events, written by the change's winner; at most one per episode and type.
            "CREATE TABLE IF NOT EXISTS alert_events (
                id TEXT PRIMARY KEY,
                created_at BIGINT NOT NULL,
                rule TEXT NOT NULL,
                subject TEXT NOT NULL,
                event_type TEXT NOT NULL,
                episode BIGINT NOT NULL,
                level BIGINT NOT NULL,
                summary TEXT NOT NULL,
                facts TEXT NOT NULL,
                action TEXT,
                UNIQUE (rule, subject, episode, event_type, level)
            )",
            "CREATE INDEX IF NOT EXISTS alert_events_time ON alert_events (created_at)",
            // One webhook delivery per event (`id` is the `webhook-id`), leased like tasks with
            // a fencing token.
            "CREATE TABLE IF NOT EXISTS alert_deliveries (
                id TEXT PRIMARY KEY,
                event_id TEXT NOT NULL,
                rule TEXT NOT NULL,
                url TEXT NOT NULL,
                format TEXT NOT NULL,
                secret_env TEXT,
                body TEXT NOT NULL,
                state TEXT NOT NULL,
                attempts BIGINT NOT NULL,
                next_attempt_at BIGINT,
                lease_owner TEXT,
                lease_until BIGINT,
                lease_token BIGINT NOT NULL,
                created_at BIGINT NOT NULL,
                updated_at BIGINT NOT NULL,
                delivered_at BIGINT
            )",
            "CREATE INDEX IF NOT EXISTS alert_deliveries_due ON alert_deliveries (state, next_attempt_at)",
            "CREATE INDEX IF NOT EXISTS alert_deliveries_time ON alert_deliveries (created_at)",
            "CREATE TABLE IF NOT EXISTS alert_attempts (
                delivery_id TEXT NOT NULL,
                attempt BIGINT NOT NULL,
                started_at BIGINT NOT NULL,
                duration_ms BIGINT NOT NULL,
                owner TEXT NOT NULL,
                status BIGINT,
                answer TEXT,
                error TEXT,
                PRIMARY KEY (delivery_id, attempt)
            )",
            // Each replica's circuits, so that an alert on a channel's circuit is about all of
            // them.
            "CREATE TABLE IF NOT EXISTS circuit_reports (
                channel TEXT NOT NULL,
                replica TEXT NOT NULL,
                open BIGINT NOT NULL,
                updated_at BIGINT NOT NULL,
                PRIMARY KEY (channel, replica)
            )",
            // The W3C `traceparent` of the request that submitted a task, when traces are
            // exported: its polls and settlement are spans of the same trace
            // (`docs/decisions.md`, "Traces").
            "ALTER TABLE tasks ADD COLUMN traceparent TEXT",
            // `task_failures` rules read the tasks finished in a recent window.
            "CREATE INDEX IF NOT EXISTS tasks_updated ON tasks (updated_at)",
            // Rules added through the admin API (definition: the `[[alerts]]` table as JSON).
            "CREATE TABLE IF NOT EXISTS alert_rules (
                name TEXT PRIMARY KEY,
                definition TEXT NOT NULL,
                created_at BIGINT NOT NULL
            )",
        ],
    },
    Migration {
        version: 14,
        name: "checkpoints sign a Merkle root of the heads",
        statements: &[
            // `crate::checkpoint`: version 2 signs `root`, the Merkle root of `heads`; the rows
            // before it are version 1, which signed the heads themselves.
            "ALTER TABLE ledger_checkpoints ADD COLUMN version BIGINT NOT NULL DEFAULT 1",
            "ALTER TABLE ledger_checkpoints ADD COLUMN root TEXT",
        ],
    },
    Migration {
        version: 15,
        name: "journal batches by name",
        statements: &[
            // `Store::write_journal_batch`: each journal batch written in a transaction, by
            // name, with what it came to — what a writer whose commit answer was lost reads
            // back (`Store::journal_landed`); pruned after an hour.
            "CREATE TABLE IF NOT EXISTS journal_batches (
                id TEXT PRIMARY KEY,
                owner TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                written TEXT NOT NULL
            )",
            "CREATE INDEX IF NOT EXISTS journal_batches_time ON journal_batches (created_at)",
        ],
    },
    Migration {
        version: 16,
        name: "a lease's arithmetic",
        statements: &[
            // What a lease paid charges with, and what went back to the balance (shrinks and
            // the close): `granted = charged + returned + what is left while open`, an audit
            // rule (`lease_arithmetic`). NULL on the leases made before: not checked.
            "ALTER TABLE leases ADD COLUMN charged_nanos BIGINT",
            "ALTER TABLE leases ADD COLUMN returned_nanos BIGINT",
        ],
    },
    Migration {
        version: 17,
        name: "live voice sessions",
        statements: &[
            // `crate::sessions`: a session names the hold of its response in progress, beats
            // while its replica relays, and journals what that response delivered as measured
            // (`unsettled_nanos`) — what the sweeper charges when the heartbeat stops.
            "CREATE TABLE IF NOT EXISTS sessions (
                id TEXT PRIMARY KEY,
                account_id TEXT NOT NULL REFERENCES accounts(id),
                key_id TEXT,
                model TEXT NOT NULL,
                request_id TEXT,
                hold_id TEXT,
                state TEXT NOT NULL,
                unsettled_nanos BIGINT NOT NULL,
                responses BIGINT NOT NULL,
                charged_nanos BIGINT NOT NULL,
                close_reason TEXT,
                created_at BIGINT NOT NULL,
                heartbeat_at BIGINT NOT NULL,
                closed_at BIGINT
            )",
            "CREATE INDEX IF NOT EXISTS sessions_state_heartbeat ON sessions (state, heartbeat_at)",
            // A session's holds, which no sweep of orphaned request holds may take.
            "ALTER TABLE holds ADD COLUMN session_id TEXT",
        ],
    },
    Migration {
        version: 18,
        name: "ephemeral client secrets of live sessions",
        statements: &[
            // `crate::client_secrets`: a secret's hash, the key it stands for, the model it is
            // for, and the sessions it may still open until it expires.
            "CREATE TABLE IF NOT EXISTS client_secrets (
                id TEXT PRIMARY KEY,
                secret_hash TEXT NOT NULL UNIQUE,
                key_id TEXT NOT NULL,
                model TEXT,
                session TEXT,
                sessions_left BIGINT NOT NULL,
                created_at BIGINT NOT NULL,
                expires_at BIGINT NOT NULL
            )",
            "CREATE INDEX IF NOT EXISTS client_secrets_expiry ON client_secrets (expires_at)",
        ],
    },
    Migration {
        version: 19,
        name: "when the sessions a client secret opens must end",
        statements: &[
            // Gemini's ephemeral tokens (`expireTime`): the sessions a token opened end then,
            // whatever their own limit. NULL: only the session's own limit.
            "ALTER TABLE client_secrets ADD COLUMN sessions_end_at BIGINT",
        ],
    },
    Migration {
        version: 20,
        name: "the seal of a live session's journal, and its endpoint",
        statements: &[
            // `crate::sessions::JournalSeal`: an HMAC of what a session's replica journaled,
            // keyed by the operator's ledger signing key, which the database does not hold.
            "ALTER TABLE sessions ADD COLUMN journal_mac TEXT",
            // The endpoint its usage records are under (`realtime`, `live`), for the sweeper's.
            "ALTER TABLE sessions ADD COLUMN endpoint TEXT",
        ],
    },
    Migration {
        version: 21,
        name: "images handed out by the gateway's signed links",
        statements: &[
            // `crate::media`: an image kept until its link lapses (`expires_at`, Unix seconds),
            // and its bytes in chunks, read one at a time by the link's answer. BYTEA is
            // PostgreSQL's; SQLite keeps a blob as a blob whatever the column's type says.
            "CREATE TABLE IF NOT EXISTS media_files (
                id TEXT PRIMARY KEY,
                account_id TEXT NOT NULL,
                content_type TEXT NOT NULL,
                bytes BIGINT NOT NULL,
                chunks BIGINT NOT NULL,
                created_at BIGINT NOT NULL,
                expires_at BIGINT NOT NULL
            )",
            "CREATE INDEX IF NOT EXISTS media_files_expiry ON media_files (expires_at)",
            "CREATE TABLE IF NOT EXISTS media_chunks (
                media_id TEXT NOT NULL,
                seq BIGINT NOT NULL,
                data BYTEA NOT NULL,
                PRIMARY KEY (media_id, seq)
            )",
        ],
    },
    Migration {
        version: 22,
        name: "redemption codes, and attempts counted across replicas",
        statements: &[
            // `crate::codes`: a batch the operator issued, and its codes, each kept only as
            // its hash; `redeemed_at` is set by the one UPDATE that claims it.
            "CREATE TABLE IF NOT EXISTS code_batches (
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL,
                amount_nanos BIGINT NOT NULL,
                count BIGINT NOT NULL,
                created_at BIGINT NOT NULL,
                created_by TEXT NOT NULL,
                expires_at BIGINT,
                revoked_at BIGINT
            )",
            "CREATE TABLE IF NOT EXISTS codes (
                hash TEXT PRIMARY KEY,
                batch_id TEXT NOT NULL,
                number BIGINT NOT NULL,
                redeemed_at BIGINT,
                account_id TEXT,
                ledger_id TEXT,
                request_id TEXT,
                address TEXT
            )",
            "CREATE INDEX IF NOT EXISTS codes_batch ON codes (batch_id, redeemed_at)",
            // `crate::throttle`: attempts per scope and fixed window.
            "CREATE TABLE IF NOT EXISTS throttle_counts (
                scope TEXT NOT NULL,
                window_start BIGINT NOT NULL,
                count BIGINT NOT NULL,
                PRIMARY KEY (scope, window_start)
            )",
        ],
    },
    Migration {
        version: 23,
        name: "the customer portal's people, invitations, sessions and recovery codes",
        statements: &[
            // `crate::portal`: every secret kept as its SHA-256; the password as the portal's
            // argon2id hash.
            "CREATE TABLE IF NOT EXISTS portal_people (
                id TEXT PRIMARY KEY,
                account_id TEXT NOT NULL,
                email TEXT NOT NULL UNIQUE,
                name TEXT NOT NULL,
                password_hash TEXT,
                totp_secret TEXT,
                totp_enabled BIGINT NOT NULL,
                totp_last_step BIGINT,
                created_at BIGINT NOT NULL
            )",
            "CREATE INDEX IF NOT EXISTS portal_people_account ON portal_people (account_id)",
            "CREATE TABLE IF NOT EXISTS portal_invites (
                hash TEXT PRIMARY KEY,
                person_id TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                expires_at BIGINT NOT NULL,
                used_at BIGINT
            )",
            "CREATE TABLE IF NOT EXISTS portal_sessions (
                hash TEXT PRIMARY KEY,
                id TEXT NOT NULL,
                person_id TEXT NOT NULL,
                csrf TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                expires_at BIGINT NOT NULL,
                last_seen BIGINT NOT NULL,
                revoked_at BIGINT,
                address TEXT
            )",
            "CREATE INDEX IF NOT EXISTS portal_sessions_person ON portal_sessions (person_id)",
            "CREATE TABLE IF NOT EXISTS portal_recovery (
                hash TEXT PRIMARY KEY,
                person_id TEXT NOT NULL,
                used_at BIGINT
            )",
        ],
    },
    Migration {
        version: 24,
        name: "payments: top-ups through a payment provider, their reversals, automatic top-ups",
        statements: &[
            // `crate::payments`: one row per top-up the gateway started, open until the
            // provider says it was paid; `ledger_id` is its one credit, set by the conditional
            // UPDATE that moves it to `paid`.
            "CREATE TABLE IF NOT EXISTS payments (
                id TEXT PRIMARY KEY,
                account_id TEXT NOT NULL,
                provider TEXT NOT NULL,
                automatic INTEGER NOT NULL,
                person_id TEXT,
                currency TEXT NOT NULL,
                amount_minor BIGINT NOT NULL,
                amount_nanos BIGINT NOT NULL,
                status TEXT NOT NULL,
                checkout_id TEXT,
                checkout_url TEXT,
                intent_id TEXT,
                customer_id TEXT,
                ledger_id TEXT,
                refunded_minor BIGINT NOT NULL DEFAULT 0,
                dispute TEXT,
                failure TEXT,
                created_at BIGINT NOT NULL,
                paid_at BIGINT
            )",
            "CREATE INDEX IF NOT EXISTS payments_account ON payments (account_id, created_at)",
            "CREATE UNIQUE INDEX IF NOT EXISTS payments_intent ON payments (intent_id)",
            // At most one automatic top-up in flight per account, whichever replica starts it.
            "CREATE UNIQUE INDEX IF NOT EXISTS payments_one_automatic ON payments (account_id)
                WHERE automatic = 1 AND status = 'open'",
            // A refund, a chargeback or a chargeback reversed: each its own ledger row.
            "CREATE TABLE IF NOT EXISTS payment_reversals (
                ledger_id TEXT PRIMARY KEY,
                payment_id TEXT NOT NULL,
                cause TEXT NOT NULL,
                reference TEXT NOT NULL,
                amount_minor BIGINT NOT NULL,
                amount_nanos BIGINT NOT NULL,
                created_at BIGINT NOT NULL
            )",
            "CREATE INDEX IF NOT EXISTS payment_reversals_payment ON payment_reversals (payment_id)",
            "CREATE INDEX IF NOT EXISTS payment_reversals_created ON payment_reversals (created_at)",
            // The audit finds a credit's payment by it.
            "CREATE INDEX IF NOT EXISTS payments_ledger ON payments (ledger_id)",
            // The provider's customer and saved card of an account, and its automatic top-up.
            "CREATE TABLE IF NOT EXISTS payment_methods (
                account_id TEXT PRIMARY KEY,
                provider TEXT NOT NULL,
                customer_id TEXT NOT NULL,
                payment_method TEXT,
                updated_at BIGINT NOT NULL
            )",
            "CREATE TABLE IF NOT EXISTS auto_topups (
                account_id TEXT PRIMARY KEY,
                threshold_nanos BIGINT NOT NULL,
                amount_minor BIGINT NOT NULL,
                daily_cap_minor BIGINT NOT NULL,
                enabled INTEGER NOT NULL,
                paused TEXT,
                updated_at BIGINT NOT NULL,
                updated_by TEXT NOT NULL
            )",
        ],
    },
    Migration {
        version: 25,
        name: "balance alerts a customer sets in the portal",
        statements: &[
            // `crate::balance_alerts`: judged as `balance_below` rules named by their id.
            "CREATE TABLE IF NOT EXISTS balance_alerts (
                id TEXT PRIMARY KEY,
                account_id TEXT NOT NULL,
                threshold_nanos BIGINT NOT NULL,
                webhook_url TEXT,
                format TEXT NOT NULL,
                secret TEXT,
                created_by TEXT NOT NULL,
                created_at BIGINT NOT NULL
            )",
            "CREATE INDEX IF NOT EXISTS balance_alerts_account ON balance_alerts (account_id)",
            // A customer's delivery: signed with the alert's own secret, and posted only to a
            // public host (never one of the operator's trusted ones).
            "ALTER TABLE alert_deliveries ADD COLUMN secret TEXT",
            "ALTER TABLE alert_deliveries ADD COLUMN owner_account TEXT",
        ],
    },
];

/// Brings the schema up to date.
pub(crate) async fn migrate(store: &Store) -> Result<(), StoreError> {
    let mut conn = store.writer().acquire().await?;
    if store.backend() == Backend::Postgres {
        // Any constant works; it only has to be the same in every replica.
        sqlx::query("SELECT pg_advisory_lock(7373110001)")
            .execute(&mut *conn)
            .await?;
    }
    let mut result = apply(&mut conn).await;
    if store.backend() == Backend::Postgres {
        if result.is_ok() {
            result = create_routines(&mut conn).await;
        }
        sqlx::query("SELECT pg_advisory_unlock(7373110001)")
            .execute(&mut *conn)
            .await?;
    }
    result
}

async fn apply(conn: &mut sqlx::AnyConnection) -> Result<(), StoreError> {
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS tollgate_migrations (
            version BIGINT PRIMARY KEY,
            name TEXT NOT NULL,
            applied_at BIGINT NOT NULL
        )",
    )
    .execute(&mut *conn)
    .await?;
    for migration in MIGRATIONS {
        let done: Option<(i64,)> =
            sqlx::query_as("SELECT version FROM tollgate_migrations WHERE version = $1")
                .bind(migration.version)
                .fetch_optional(&mut *conn)
                .await?;
        if done.is_some() {
            continue;
        }
        let mut tx = sqlx::Connection::begin(&mut *conn).await?;
        for statement in migration.statements {
            sqlx::query(*statement).execute(&mut *tx).await?;
        }
        sqlx::query(
            "INSERT INTO tollgate_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
        )
        .bind(migration.version)
        .bind(migration.name)
        .bind(now_millis())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        tracing::info!(
            version = migration.version,
            name = migration.name,
            "applied migration"
        );
    }
    Ok(())
}

/// Stored routines on PostgreSQL, created or replaced at every start.
const ROUTINES: &[&str] = &[
    LEDGER_HASH,
    CHAIN_FIELD,
    CHARGE_BATCH,
    CHARGE_BATCH_WITH_USAGE,
    CHARGE_BATCH_PRICED,
    CHARGE_BATCH_FENCED,
    CHARGE_BATCH_PLANNED,
];

async fn create_routines(conn: &mut sqlx::AnyConnection) -> Result<(), StoreError> {
    for routine in ROUTINES {
        sqlx::query(*routine).execute(&mut *conn).await?;
    }
    Ok(())
}

/// `tollgate_ledger_hash_v1(prev, fields)`: a ledger row's link in its account's chain, the
/// canonical encoding of `crate::chain` (`LedgerLine::hash`) in SQL: `fields` are the row's
/// columns as text in `chain::LINE_COLUMNS` order, NULL for NULL.
const LEDGER_HASH: &str = r#"
CREATE OR REPLACE FUNCTION tollgate_ledger_hash_v1(prev text, fields text[])
RETURNS text LANGUAGE sql IMMUTABLE AS $fn$
SELECT encode(sha256(convert_to(
    'tollgate-ledger-v1' || chr(10) || prev || chr(10) || COALESCE((
        SELECT string_agg(CASE WHEN f IS NULL THEN '~,'
                               ELSE octet_length(f)::text || ':' || f || ',' END, '' ORDER BY n)
        FROM unnest(fields) WITH ORDINALITY AS u(f, n)), ''),
    'UTF8')), 'hex')
$fn$"#;

/// `tollgate_chain_field_v1(field)`: one field of a ledger row in the chain's encoding
/// (`crate::chain`): `~,` for NULL, else its length in bytes, `:`, itself and `,`. A plain
/// expression, so PostgreSQL inlines it where it is called.
const CHAIN_FIELD: &str = r#"
CREATE OR REPLACE FUNCTION tollgate_chain_field_v1(f text)
RETURNS text LANGUAGE sql IMMUTABLE AS $fn$
SELECT CASE WHEN f IS NULL THEN '~,' ELSE octet_length(f)::text || ':' || f || ',' END
$fn$"#;

/// `tollgate_charge_batch_v1(shares, totals, charges, now_ms)`: a run of charges in one call
/// (`crate::journal`), so that a batch costs PostgreSQL one round trip instead of one per
/// statement — the commit wait every client of the batch waits for. It does what the portable
/// statements do on SQLite, in the same lock order (leases, then accounts, each in id order):
///
/// 1. Each lease gives its share if it is open, or what it has left if that is less; an expired
///    lease gives nothing (the sweep already returned what was left of it).
/// 2. Each account pays its total off `balance_nanos`, and what its leases gave off
///    `leased_nanos`. A charged account that does not exist fails the whole batch.
/// 3. One ledger row per charge; `balance_after_nanos` is the account's final balance plus
///    `later`, the charges that follow the row in the batch (computed by the caller).
///
/// `shares` is `[{id, share}]`, `totals` is `[{id, total}]`, `charges` is
/// `[{id, account_id, charge, later, …the row's memo}]`. Returns the rows written.
const CHARGE_BATCH: &str = r#"
CREATE OR REPLACE FUNCTION tollgate_charge_batch_v1(
    shares jsonb, totals jsonb, charges jsonb, now_ms bigint)
RETURNS bigint LANGUAGE plpgsql AS $fn$
DECLARE
    offs jsonb;
    charged bigint;
BEGIN
    PERFORM 1 FROM leases
    WHERE id IN (SELECT s.id FROM jsonb_to_recordset(shares) AS s(id text))
    ORDER BY id FOR UPDATE;
    WITH taken AS (
        UPDATE leases SET amount_nanos = leases.amount_nanos - t.taken
        FROM (SELECT s.id, LEAST(s.share, GREATEST(l.amount_nanos, 0)) AS taken
              FROM jsonb_to_recordset(shares) AS s(id text, share bigint)
              JOIN leases l ON l.id = s.id) AS t
        WHERE leases.id = t.id AND leases.state = 'open'
        RETURNING leases.account_id, t.taken
    )
    SELECT COALESCE(jsonb_object_agg(o.account_id, o.off), '{}'::jsonb) INTO offs
    FROM (SELECT account_id, SUM(taken)::bigint AS off FROM taken GROUP BY account_id) AS o;

    PERFORM 1 FROM accounts
    WHERE id IN (SELECT d.id FROM jsonb_to_recordset(totals) AS d(id text))
    ORDER BY id FOR UPDATE;
    UPDATE accounts SET balance_nanos = accounts.balance_nanos - d.total,
        leased_nanos = accounts.leased_nanos - COALESCE((offs ->> accounts.id)::bigint, 0)
    FROM jsonb_to_recordset(totals) AS d(id text, total bigint)
    WHERE accounts.id = d.id;
    GET DIAGNOSTICS charged = ROW_COUNT;
    IF charged <> jsonb_array_length(totals) THEN
        RAISE EXCEPTION 'a charged account does not exist' USING ERRCODE = 'foreign_key_violation';
    END IF;

    INSERT INTO ledger (id, account_id, kind, amount_nanos, balance_after_nanos, model, quantity,
        hold_id, lease_id, key_id, request_id, estimated, note, anomaly, price_group,
        price_multiplier, created_at)
    SELECT c.id, c.account_id, 'charge', -c.charge, a.balance_nanos + c.later,
        c.model, c.quantity, c.hold_id, c.lease_id, c.key_id, c.request_id, c.estimated,
        c.note, c.anomaly, c.price_group, c.price_multiplier, now_ms
    FROM jsonb_to_recordset(charges) AS c(id text, account_id text, charge bigint, later bigint,
        model text, quantity text, hold_id text, lease_id text, key_id text, request_id text,
        estimated bigint, note text, anomaly text, price_group text, price_multiplier text)
    JOIN accounts a ON a.id = c.account_id;
    GET DIAGNOSTICS charged = ROW_COUNT;
    RETURN charged;
END
$fn$"#;

/// `tollgate_charge_batch_v2(shares, totals, charges, usage, now_ms)`: the same batch of charges
/// as [`CHARGE_BATCH`] (it calls it), plus the batch's usage-log records (`crate::usage`), so
/// that the log costs no round trip of its own. `usage` is `[{…one usage_log row}]`. Returns the
/// ledger rows written. v1 stays for replicas of the previous release during a rolling upgrade.
const CHARGE_BATCH_WITH_USAGE: &str = r#"
CREATE OR REPLACE FUNCTION tollgate_charge_batch_v2(
    shares jsonb, totals jsonb, charges jsonb, usage jsonb, now_ms bigint)
RETURNS bigint LANGUAGE plpgsql AS $fn$
DECLARE
    charged bigint;
BEGIN
    charged := tollgate_charge_batch_v1(shares, totals, charges, now_ms);
    INSERT INTO usage_log (id, created_at, kind, account_id, key_id, price_group, endpoint, model,
        channel, status, meter, quantity, units, charge_nanos, hold_nanos, latency_ms, upstream_ms,
        request_id, task_id, estimated, note)
    SELECT u.id, u.created_at, u.kind, u.account_id, u.key_id, u.price_group, u.endpoint, u.model,
        u.channel, u.status, u.meter, u.quantity, u.units, u.charge_nanos, u.hold_nanos,
        u.latency_ms, u.upstream_ms, u.request_id, u.task_id, u.estimated, u.note
    FROM jsonb_to_recordset(usage) AS u(id text, created_at bigint, kind text, account_id text,
        key_id text, price_group text, endpoint text, model text, channel text, status bigint,
        meter text, quantity text, units bigint, charge_nanos bigint, hold_nanos bigint,
        latency_ms bigint, upstream_ms bigint, request_id text, task_id text, estimated bigint,
        note text);
    RETURN charged;
END
$fn$"#;

/// `tollgate_charge_batch_v3(writer, charges, usage, now_ms)`: what replicas of the release
/// before price versions call; now [`CHARGE_BATCH_PRICED`] (their rows carry no version).
const CHARGE_BATCH_FENCED: &str = r#"
CREATE OR REPLACE FUNCTION tollgate_charge_batch_v3(
    writer text, charges jsonb, usage jsonb, now_ms bigint)
RETURNS jsonb LANGUAGE plpgsql AS $fn$
BEGIN
    RETURN tollgate_charge_batch_v4(writer, charges, usage, now_ms);
END
$fn$"#;

/// `tollgate_charge_batch_v4(writer, charges, usage, now_ms)`: a run of charges and the batch's
/// usage records in one call, fenced (`docs/decisions.md`, "Fenced leases"). What
/// `crate::journal::write_charges` does on SQLite, in SQL and in the same lock order (leases,
/// then accounts, each in id order):
///
/// 1. `pay`: in batch order, each charge takes its `share` of its lease while that lease is
///    open, belongs to `writer` and has it left (a lease another replica swept, or that is not
///    the writer's, gives nothing: the fencing token is the lease's id and its owner); the rest
///    comes from what its account has available, `balance − held − leased`, never below zero.
///    A running sum per lease and per account shares each pool out in batch order, exactly as
///    the loop does. What neither covers is not charged: it is the operator's loss.
/// 2. The leases give what was taken; each account pays what its charges came to, its leases'
///    part off `leased_nanos`, and moves its `ledger_seq` on by its rows.
/// 3. One ledger row per charge, with its `seq`, its `balance_after_nanos` (the account's final
///    balance plus what the rows after it in the batch charged), `loss_nanos`, and the loss
///    said in `anomaly`.
/// 4. The usage records, a short charge's record carrying what its charge came to.
///
/// `charges` is `[{ord, id, account_id, charge, share, lease_id, …the row's memo}]`, the memo
/// with its price version and bound. Returns
/// `{"written": rows, "losses": [{hold_id, account_id, charged, loss, fenced}]}`.
const CHARGE_BATCH_PRICED: &str = r#"
CREATE OR REPLACE FUNCTION tollgate_charge_batch_v4(
    writer text, charges jsonb, usage jsonb, now_ms bigint)
RETURNS jsonb LANGUAGE plpgsql AS $fn$
DECLARE
    paid jsonb;
    charged_accounts bigint;
    written bigint;
    lines jsonb;
    line jsonb;
    links text[] := '{}';
    account text;
    link text;
BEGIN
    PERFORM 1 FROM leases
    WHERE id IN (SELECT c.lease_id FROM jsonb_to_recordset(charges) AS c(lease_id text))
    ORDER BY id FOR UPDATE;
    PERFORM 1 FROM accounts
    WHERE id IN (SELECT c.account_id FROM jsonb_to_recordset(charges) AS c(account_id text))
    ORDER BY id FOR UPDATE;

    WITH c AS (
        SELECT * FROM jsonb_to_recordset(charges)
            AS c(ord bigint, account_id text, charge bigint, share bigint, lease_id text,
                 hold_id text)
    ), pools AS (
        SELECT l.id, (l.state = 'open' AND l.owner = writer) AS held,
            CASE WHEN l.state = 'open' AND l.owner = writer THEN GREATEST(l.amount_nanos, 0)
                 ELSE 0 END AS pool
        FROM leases l WHERE l.id IN (SELECT lease_id FROM c)
    ), asked AS (
        SELECT c.*, COALESCE(p.held, false) AS held, COALESCE(p.pool, 0) AS pool,
            CASE WHEN c.lease_id IS NULL THEN 0 ELSE LEAST(GREATEST(c.share, 0), c.charge) END
                AS want
        FROM c LEFT JOIN pools p ON p.id = c.lease_id
    ), from_lease AS (
        SELECT asked.*,
            LEAST(SUM(want) OVER w, pool) - LEAST(SUM(want) OVER w - want, pool) AS taken
        FROM asked WINDOW w AS (PARTITION BY lease_id ORDER BY ord)
    ), rest AS (
        SELECT from_lease.*, charge - taken AS left_over,
            GREATEST(a.balance_nanos - a.held_nanos - a.leased_nanos, 0) AS free
        FROM from_lease JOIN accounts a ON a.id = from_lease.account_id
    ), settled AS (
        SELECT rest.*,
            LEAST(SUM(left_over) OVER w, free) - LEAST(SUM(left_over) OVER w - left_over, free)
                AS given
        FROM rest WINDOW w AS (PARTITION BY account_id ORDER BY ord)
    )
    SELECT COALESCE(jsonb_agg(jsonb_build_object(
        'ord', ord, 'account_id', account_id, 'lease_id', lease_id, 'hold_id', hold_id,
        'taken', taken, 'charged', taken + given, 'loss', charge - taken - given,
        'fenced', lease_id IS NOT NULL AND NOT held) ORDER BY ord), '[]'::jsonb)
    INTO paid FROM settled;

    UPDATE leases SET amount_nanos = leases.amount_nanos - t.taken,
        charged_nanos = leases.charged_nanos + t.taken
    FROM (SELECT p.lease_id, SUM(p.taken)::bigint AS taken
          FROM jsonb_to_recordset(paid) AS p(lease_id text, taken bigint)
          WHERE p.lease_id IS NOT NULL GROUP BY p.lease_id) AS t
    WHERE leases.id = t.lease_id AND t.taken > 0;

    UPDATE accounts SET balance_nanos = accounts.balance_nanos - t.charged,
        leased_nanos = accounts.leased_nanos - t.taken,
        ledger_seq = accounts.ledger_seq + t.n
    FROM (SELECT p.account_id, SUM(p.charged)::bigint AS charged, SUM(p.taken)::bigint AS taken,
                 COUNT(*)::bigint AS n
          FROM jsonb_to_recordset(paid) AS p(account_id text, charged bigint, taken bigint)
          GROUP BY p.account_id) AS t
    WHERE accounts.id = t.account_id;
    GET DIAGNOSTICS charged_accounts = ROW_COUNT;
    IF charged_accounts <> (SELECT COUNT(DISTINCT c.account_id)
                            FROM jsonb_to_recordset(charges) AS c(account_id text)) THEN
        RAISE EXCEPTION 'a charged account does not exist' USING ERRCODE = 'foreign_key_violation';
    END IF;

    -- The rows in seq order within each account, each linked into its account's chain
    -- (`crate::chain`): the links computed in one loop of plain expressions, the rows then
    -- written by one statement.
    SELECT COALESCE(jsonb_agg(to_jsonb(l) ORDER BY l.account_id, l.seq), '[]'::jsonb) INTO lines
    FROM (
        SELECT c.id, c.account_id, -p.charged AS amount,
            a.balance_nanos + COALESCE(SUM(p.charged) OVER (PARTITION BY p.account_id
                ORDER BY p.ord ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING), 0)
                AS balance_after,
            c.model, c.quantity, c.hold_id, c.lease_id, c.key_id, c.request_id, c.estimated,
            c.note,
            CASE WHEN p.loss > 0 THEN concat_ws('; ', c.anomaly, format(
                '%s; charged %s, the operator''s loss %s',
                CASE WHEN p.fenced THEN format('late charge: lease %s was no longer this replica''s (expired, returned or another''s)', p.lease_id)
                     ELSE 'the account had too little available' END,
                trim_scale(p.charged::numeric / 1000000000)::text,
                trim_scale(p.loss::numeric / 1000000000)::text))
            ELSE c.anomaly END AS anomaly,
            c.price_group, c.price_multiplier,
            a.ledger_seq - COUNT(*) OVER (PARTITION BY p.account_id)
                + ROW_NUMBER() OVER (PARTITION BY p.account_id ORDER BY p.ord) AS seq,
            p.loss, c.price_version, c.bound_nanos, a.ledger_head AS head
        FROM jsonb_to_recordset(charges) AS c(ord bigint, id text, account_id text, model text,
            quantity text, hold_id text, lease_id text, key_id text, request_id text,
            estimated bigint, note text, anomaly text, price_group text, price_multiplier text,
            price_version bigint, bound_nanos bigint)
        JOIN jsonb_to_recordset(paid) AS p(ord bigint, account_id text, lease_id text,
            charged bigint, loss bigint, fenced boolean) ON p.ord = c.ord
        JOIN accounts a ON a.id = c.account_id
    ) AS l;

    FOR line IN SELECT value FROM jsonb_array_elements(lines) LOOP
        IF line ->> 'account_id' IS DISTINCT FROM account THEN
            IF account IS NOT NULL THEN
                UPDATE accounts SET ledger_head = link WHERE id = account;
            END IF;
            account := line ->> 'account_id';
            link := COALESCE(line ->> 'head', '');
        END IF;
        -- `tollgate_ledger_hash_v1` written out, so that PL/pgSQL evaluates it as a plain
        -- expression: a call of that function plans its query again on every row.
        link := encode(sha256(convert_to(concat('tollgate-ledger-v1', chr(10), link, chr(10),
            tollgate_chain_field_v1(line ->> 'id'),
            tollgate_chain_field_v1(line ->> 'account_id'),
            tollgate_chain_field_v1(line ->> 'seq'),
            tollgate_chain_field_v1('charge'),
            tollgate_chain_field_v1(line ->> 'amount'),
            tollgate_chain_field_v1(line ->> 'balance_after'),
            tollgate_chain_field_v1(line ->> 'model'),
            tollgate_chain_field_v1(line ->> 'quantity'),
            tollgate_chain_field_v1(line ->> 'hold_id'),
            tollgate_chain_field_v1(NULL),
            tollgate_chain_field_v1(line ->> 'key_id'),
            tollgate_chain_field_v1(line ->> 'request_id'),
            tollgate_chain_field_v1(line ->> 'lease_id'),
            tollgate_chain_field_v1(line ->> 'estimated'),
            tollgate_chain_field_v1(line ->> 'note'),
            tollgate_chain_field_v1(line ->> 'anomaly'),
            tollgate_chain_field_v1(line ->> 'price_group'),
            tollgate_chain_field_v1(line ->> 'price_multiplier'),
            tollgate_chain_field_v1(line ->> 'price_version'),
            tollgate_chain_field_v1(line ->> 'bound_nanos'),
            tollgate_chain_field_v1(line ->> 'loss'),
            tollgate_chain_field_v1('0'),
            tollgate_chain_field_v1(now_ms::text)), 'UTF8')), 'hex');
        links := links || link;
    END LOOP;
    IF account IS NOT NULL THEN
        UPDATE accounts SET ledger_head = link WHERE id = account;
    END IF;

    INSERT INTO ledger (id, account_id, kind, amount_nanos, balance_after_nanos, model,
        quantity, hold_id, lease_id, key_id, request_id, estimated, note, anomaly,
        price_group, price_multiplier, created_at, seq, loss_nanos, price_version,
        bound_nanos, hash)
    SELECT r.id, r.account_id, 'charge', r.amount, r.balance_after, r.model, r.quantity,
        r.hold_id, r.lease_id, r.key_id, r.request_id, r.estimated, r.note, r.anomaly,
        r.price_group, r.price_multiplier, now_ms, r.seq, r.loss, r.price_version,
        r.bound_nanos, links[r.n]
    FROM ROWS FROM (jsonb_to_recordset(lines) AS (id text, account_id text, amount bigint,
        balance_after bigint, model text, quantity text, hold_id text, lease_id text,
        key_id text, request_id text, estimated bigint, note text, anomaly text,
        price_group text, price_multiplier text, seq bigint, loss bigint,
        price_version bigint, bound_nanos bigint)) WITH ORDINALITY AS r(id, account_id, amount,
        balance_after, model, quantity, hold_id, lease_id, key_id, request_id, estimated, note,
        anomaly, price_group, price_multiplier, seq, loss, price_version, bound_nanos, n);
    GET DIAGNOSTICS written = ROW_COUNT;

    INSERT INTO usage_log (id, created_at, kind, account_id, key_id, price_group, endpoint, model,
        channel, status, meter, quantity, units, charge_nanos, hold_nanos, latency_ms, upstream_ms,
        request_id, task_id, estimated, note, hold_id, price_version, measured, bound_basis)
    SELECT u.id, u.created_at, u.kind, u.account_id, u.key_id, u.price_group, u.endpoint, u.model,
        u.channel, u.status, u.meter, u.quantity, u.units, COALESCE(p.charged, u.charge_nanos),
        u.hold_nanos, u.latency_ms, u.upstream_ms, u.request_id, u.task_id, u.estimated, u.note,
        u.hold_id, u.price_version, u.measured, u.bound_basis
    FROM jsonb_to_recordset(usage) AS u(id text, created_at bigint, kind text, account_id text,
        key_id text, price_group text, endpoint text, model text, channel text, status bigint,
        meter text, quantity text, units bigint, charge_nanos bigint, hold_nanos bigint,
        latency_ms bigint, upstream_ms bigint, request_id text, task_id text, estimated bigint,
        note text, hold_id text, price_version bigint, measured text, bound_basis text)
    LEFT JOIN jsonb_to_recordset(paid) AS p(hold_id text, charged bigint, loss bigint)
        ON p.hold_id = u.hold_id AND p.loss > 0;

    RETURN jsonb_build_object('written', written, 'losses', COALESCE((
        SELECT jsonb_agg(jsonb_build_object('hold_id', p.hold_id, 'account_id', p.account_id,
            'charged', p.charged, 'loss', p.loss, 'fenced', p.fenced) ORDER BY p.ord)
        FROM jsonb_to_recordset(paid) AS p(ord bigint, hold_id text, account_id text,
            charged bigint, loss bigint, fenced boolean)
        WHERE p.loss > 0), '[]'::jsonb));
END
$fn$"#;

/// `tollgate_charge_batch_v5(writer, expected, lines, charges, usage, now_ms)`: a run of
/// charges the writer priced itself (`crate::journal::charge_batch_call`), checked and written
/// in one call. Under the locks [`CHARGE_BATCH_PRICED`] takes (leases, then accounts, each in
/// id order), every lease in `expected` must still be open, the writer's and hold `amount`,
/// and every account hold `balance`, `held`, `leased`, `seq` and `head` — everything the plan
/// was made from — or nothing of the plan is written and the run is priced here by
/// `tollgate_charge_batch_v4` from `charges` instead. A plan that passes is applied as given:
/// each lease gives `taken`, each account pays `charged` (`taken` of it off `leased_nanos`)
/// and moves its chain to `seq + rows` and `new_head`; `lines` are the rows, each an array in
/// `chain::LINE_COLUMNS` order and its hash; the usage records of `expected.losses` carry
/// what their charge came to.
///
/// Returns `{"priced": true}` (the plan written: the writer knows what the rows hold now), or
/// v4's answer with `"priced": false`, `accounts` (`[id, balance, held, leased, seq, head]`
/// after the run) and `leases` (`[id, amount]` of the named leases still open and the
/// writer's), for the writer's next plan. Three statements when the plan holds: a lock and
/// check for the leases, the same for the accounts, and one that writes everything.
const CHARGE_BATCH_PLANNED: &str = r#"
CREATE OR REPLACE FUNCTION tollgate_charge_batch_v5(
    writer text, expected jsonb, lines jsonb, charges text, usage jsonb, now_ms bigint)
RETURNS jsonb LANGUAGE plpgsql AS $fn$
DECLARE
    leases_hold boolean;
    accounts_hold boolean;
    answer jsonb;
BEGIN
    -- Lock and check in one statement each, leases first; the rows are locked in id order
    -- (the sort is under the lock).
    SELECT COALESCE(bool_and(l.id IS NOT NULL AND l.state = 'open' AND l.owner = writer
                             AND l.amount_nanos IS NOT DISTINCT FROM e.amount), true)
    INTO leases_hold
    FROM jsonb_to_recordset(expected -> 'leases') AS e(id text, amount bigint)
    LEFT JOIN (SELECT id, state, owner, amount_nanos FROM leases
               WHERE id IN (SELECT n.id FROM jsonb_to_recordset(expected -> 'leases')
                                AS n(id text))
               ORDER BY id FOR UPDATE) AS l ON l.id = e.id;
    SELECT COALESCE(bool_and(a.id IS NOT NULL
                             AND a.balance_nanos IS NOT DISTINCT FROM e.balance
                             AND a.held_nanos IS NOT DISTINCT FROM e.held
                             AND a.leased_nanos IS NOT DISTINCT FROM e.leased
                             AND a.ledger_seq IS NOT DISTINCT FROM e.seq
                             AND COALESCE(a.ledger_head, '') IS NOT DISTINCT FROM e.head), true)
    INTO accounts_hold
    FROM jsonb_to_recordset(expected -> 'accounts')
        AS e(id text, balance bigint, held bigint, leased bigint, seq bigint, head text)
    LEFT JOIN (SELECT id, balance_nanos, held_nanos, leased_nanos, ledger_seq, ledger_head
               FROM accounts
               WHERE id IN (SELECT n.id FROM jsonb_to_recordset(expected -> 'accounts')
                                AS n(id text))
               ORDER BY id FOR UPDATE) AS a ON a.id = e.id;

    IF lines IS NULL OR NOT leases_hold OR NOT accounts_hold THEN
        -- Priced here; then what the rows hold after it, read by a statement of its own (one
        -- statement does not see what a function it calls wrote).
        answer := tollgate_charge_batch_v4(writer, charges::jsonb, usage, now_ms);
        RETURN answer || jsonb_build_object('priced', false,
            'accounts', (SELECT COALESCE(jsonb_agg(jsonb_build_array(a.id, a.balance_nanos,
                    a.held_nanos, a.leased_nanos, a.ledger_seq, a.ledger_head)), '[]'::jsonb)
                FROM accounts a
                WHERE a.id IN (SELECT e.id
                               FROM jsonb_to_recordset(expected -> 'accounts') AS e(id text))),
            'leases', (SELECT COALESCE(jsonb_agg(jsonb_build_array(l.id, l.amount_nanos)),
                    '[]'::jsonb)
                FROM leases l
                WHERE l.state = 'open' AND l.owner = writer
                    AND l.id IN (SELECT e.id
                                 FROM jsonb_to_recordset(expected -> 'leases') AS e(id text))));
    END IF;

    -- The plan holds: written as given, in one statement.
    WITH taken AS (
        UPDATE leases SET amount_nanos = leases.amount_nanos - e.taken,
            charged_nanos = leases.charged_nanos + e.taken
        FROM jsonb_to_recordset(expected -> 'leases') AS e(id text, taken bigint)
        WHERE leases.id = e.id AND e.taken > 0
    ), paid AS (
        UPDATE accounts SET balance_nanos = accounts.balance_nanos - e.charged,
            leased_nanos = accounts.leased_nanos - e.taken,
            ledger_seq = accounts.ledger_seq + e.rows, ledger_head = e.new_head
        FROM jsonb_to_recordset(expected -> 'accounts')
            AS e(id text, charged bigint, taken bigint, rows bigint, new_head text)
        WHERE accounts.id = e.id
    ), rows AS (
        INSERT INTO ledger (id, account_id, seq, kind, amount_nanos, balance_after_nanos,
            model, quantity, hold_id, task_id, key_id, request_id, lease_id, estimated, note,
            anomaly, price_group, price_multiplier, price_version, bound_nanos, loss_nanos,
            overdraw_nanos, created_at, hash)
        SELECT r ->> 0, r ->> 1, (r ->> 2)::bigint, r ->> 3, (r ->> 4)::bigint,
            (r ->> 5)::bigint, r ->> 6, r ->> 7, r ->> 8, r ->> 9, r ->> 10, r ->> 11, r ->> 12,
            (r ->> 13)::bigint, r ->> 14, r ->> 15, r ->> 16, r ->> 17, (r ->> 18)::bigint,
            (r ->> 19)::bigint, (r ->> 20)::bigint, (r ->> 21)::bigint, (r ->> 22)::bigint,
            r ->> 23
        FROM jsonb_array_elements(lines) AS r
    )
    INSERT INTO usage_log (id, created_at, kind, account_id, key_id, price_group, endpoint,
        model, channel, status, meter, quantity, units, charge_nanos, hold_nanos,
        latency_ms, upstream_ms, request_id, task_id, estimated, note, hold_id,
        price_version, measured, bound_basis)
    SELECT u.id, u.created_at, u.kind, u.account_id, u.key_id, u.price_group, u.endpoint,
        u.model, u.channel, u.status, u.meter, u.quantity, u.units,
        COALESCE(p.charged, u.charge_nanos), u.hold_nanos, u.latency_ms, u.upstream_ms,
        u.request_id, u.task_id, u.estimated, u.note, u.hold_id, u.price_version,
        u.measured, u.bound_basis
    FROM jsonb_to_recordset(usage) AS u(id text, created_at bigint, kind text,
        account_id text, key_id text, price_group text, endpoint text, model text,
        channel text, status bigint, meter text, quantity text, units bigint,
        charge_nanos bigint, hold_nanos bigint, latency_ms bigint, upstream_ms bigint,
        request_id text, task_id text, estimated bigint, note text, hold_id text,
        price_version bigint, measured text, bound_basis text)
    LEFT JOIN jsonb_to_recordset(expected -> 'losses') AS p(hold_id text, charged bigint)
        ON p.hold_id = u.hold_id;
    RETURN '{"priced": true}'::jsonb;
END
$fn$"#;
