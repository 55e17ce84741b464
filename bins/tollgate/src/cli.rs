//! Commands and flags.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// A metered gateway for generative-media APIs.
#[derive(Debug, Parser)]
#[command(name = "tollgate", version, about, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub common: Common,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Options every command takes.
#[derive(Debug, Args, Clone)]
pub struct Common {
    /// Configuration file (TOML); the embedded default when absent.
    #[arg(long, global = true, env = "TOLLGATE_CONFIG")]
    pub config: Option<PathBuf>,
    /// Database URL: sqlite://PATH or postgres://…; overrides the configuration.
    #[arg(long, global = true, env = "TOLLGATE_DATABASE_URL")]
    pub database_url: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the gateway (the default command).
    Serve(ServeArgs),
    /// Manage API keys and balances.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// What an account or a key may call, from where, until when, in which price group.
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// Price groups (tiers): a multiplier on every list price.
    #[command(subcommand)]
    Groups(GroupsCommand),
    /// The people of an account who sign in to the customer portal (docs/operations.md, "The
    /// customer portal").
    #[command(subcommand)]
    Accounts(AccountsCommand),
    /// Redemption codes: issue a batch to a file, list, report, revoke (docs/operations.md,
    /// "Redemption codes").
    #[command(subcommand)]
    Codes(CodesCommand),
    /// Configuration helpers.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Run the simulated vendors on their own.
    Sim(SimArgs),
    /// Check every money invariant; exits 1 naming each violation.
    Audit(AuditArgs),
    /// The usage log: requests and tasks, listed or totalled.
    Usage(UsageArgs),
    /// Why a request was charged what it was: the quantity and how it was measured, the price
    /// version, the multiplier, the rounding, the hold and the bound.
    Explain {
        /// The request's id (its `x-request-id`).
        request_id: String,
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
    /// The admin API's tokens and the admin audit log.
    #[command(subcommand)]
    Admin(AdminCommand),
    /// Video tasks of every account: list, inspect with history, cancel and refund.
    #[command(subcommand)]
    Tasks(TasksCommand),
    /// Upstream channels: switch one off or on for every replica.
    #[command(subcommand)]
    Channels(ChannelsCommand),
    /// Alert events and their webhook deliveries (docs/operations.md, "Alerts").
    #[command(subcommand)]
    Alerts(AlertsCommand),
    /// The price book: every model's price versions (docs/architecture.md, "Prices").
    #[command(subcommand)]
    Prices(PricesCommand),
    /// The chained ledger's signing key and checkpoints (docs/architecture.md, "The chained
    /// ledger").
    #[command(subcommand)]
    Ledger(LedgerCommand),
    /// An account's statement: its ledger rows over a period, chained to a signed checkpoint,
    /// as one JSON document anyone can check with `tollgate verify`.
    Statement {
        /// The account (id or name).
        account: String,
        /// The period's start (RFC 3339); the account's first row when left out.
        #[arg(long)]
        from: Option<String>,
        /// The period's end, exclusive (RFC 3339); now when left out.
        #[arg(long)]
        until: Option<String>,
        /// Write it here instead of to stdout.
        #[arg(long)]
        out: Option<std::path::PathBuf>,
    },
    /// Check a statement offline: its chain, its balances, its checkpoint's signature.
    Verify {
        /// The statement (JSON).
        file: std::path::PathBuf,
        /// A public key (hex) the checkpoint must be signed by, e.g. from the gateway's
        /// `/.well-known/tollgate-ledger-keys`; repeat for several. Without one, any valid
        /// signature is reported with its key id.
        #[arg(long = "key")]
        keys: Vec<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum TasksCommand {
    /// Tasks, newest first.
    List {
        /// Only this account's (id or name).
        #[arg(long)]
        account: Option<String>,
        /// Only in this state: submitting, queued, running, succeeded, failed.
        #[arg(long)]
        state: Option<String>,
        /// The most tasks listed.
        #[arg(long, default_value_t = 50)]
        limit: u32,
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
    /// One task with its history (always JSON).
    Show {
        /// The task's id.
        id: String,
    },
    /// Cancel a live task and refund it.
    Cancel {
        /// The task's id.
        id: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum ChannelsCommand {
    /// The configured channels and whether each is switched off.
    List,
    /// Switch a channel off: requests fail over to the model's next channel.
    Disable {
        /// The channel's configured name.
        name: String,
    },
    /// Switch a channel back on.
    Enable {
        /// The channel's configured name.
        name: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum AlertsCommand {
    /// Alert events, newest first.
    Events {
        /// Only this rule's.
        #[arg(long)]
        rule: Option<String>,
        /// The most events listed.
        #[arg(long, default_value_t = 50)]
        limit: u32,
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
    /// Webhook deliveries, newest first.
    Deliveries {
        /// Only this rule's.
        #[arg(long)]
        rule: Option<String>,
        /// Only in this state: pending, delivered, failed.
        #[arg(long)]
        state: Option<String>,
        /// The most deliveries listed.
        #[arg(long, default_value_t = 50)]
        limit: u32,
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
    /// One delivery with its payload and every attempt (always JSON).
    Show {
        /// The delivery's id (its webhook-id, msg_…).
        id: String,
    },
    /// Post a delivery again now, under the same webhook-id (a running gateway sends it).
    Redeliver {
        /// The delivery's id (msg_…).
        id: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum AccountsCommand {
    /// Invite a person to the account's portal: prints a one-time link that sets their
    /// password (inviting again gives a new link and ends their sessions once used).
    Invite {
        /// The account (id or name).
        account: String,
        /// How they sign in.
        #[arg(long)]
        email: String,
        /// Their name (default: the email's part before @).
        #[arg(long)]
        name: Option<String>,
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
    /// The account's people: invited or active, TOTP on or off.
    People {
        /// The account (id or name).
        account: String,
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
    /// Remove a person: their sessions end and they can no longer sign in.
    RemovePerson {
        /// The person's id (per_…).
        person: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum CodesCommand {
    /// Issue a batch of codes, each worth --amount, written one a line to --out.
    Create {
        /// What each code adds to the balance that redeems it.
        #[arg(long)]
        amount: String,
        /// How many codes (1 to 100,000).
        #[arg(long)]
        count: u64,
        /// When they stop redeeming: an RFC 3339 time, a date, or a span (30d, 12h); never
        /// when absent.
        #[arg(long)]
        expires: Option<String>,
        /// A name for the batch.
        #[arg(long)]
        name: Option<String>,
        /// Where to write the codes (created with mode 0600; never overwritten).
        #[arg(long)]
        out: PathBuf,
        /// Print the batch as one JSON document.
        #[arg(long)]
        json: bool,
    },
    /// Every batch: issued, redeemed, expiry, state.
    List {
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
    /// One batch: who redeemed which code, when, from where.
    Show {
        /// The batch's id (cbt_…).
        batch: String,
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a batch: its codes not yet redeemed redeem nothing.
    Revoke {
        /// The batch's id (cbt_…).
        batch: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum LedgerCommand {
    /// Make an Ed25519 signing key for checkpoints; prints its public key.
    Keygen {
        /// Where to write the key (created with mode 0600; never overwritten).
        #[arg(long)]
        out: std::path::PathBuf,
    },
    /// Sign every chain head now with the configured key (`[ledger] signing_key_file`).
    Checkpoint,
}

#[derive(Debug, Subcommand)]
pub enum PricesCommand {
    /// Every model's price in effect now, with its version.
    List {
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
    /// A model's price in effect now.
    Show {
        /// The public model.
        model: String,
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
    /// Add a version of a model's price: `tollgate prices set tts-1 per_million_characters=16`.
    /// The meter stays the model's; versions are never edited.
    Set {
        /// The public model.
        model: String,
        /// The prices, NAME=DECIMAL each (the tariff's fields, docs/configuration.md).
        #[arg(required = true)]
        prices: Vec<String>,
        /// When it takes effect (RFC 3339, not in the past); now when left out.
        #[arg(long)]
        from: Option<String>,
    },
    /// Compare a public price list with the prices in effect and, with `--apply`, add a version
    /// for each model whose listed price differs (docs/operations.md, "Importing a price list").
    Import(ImportArgs),
    /// Every version of a model's price, oldest first.
    History {
        /// The public model.
        model: String,
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Admin API tokens.
    #[command(subcommand)]
    Token(TokenCommand),
    /// The admin audit log: every change made through the API or this command line.
    Changes {
        /// Only changes of this target (an account, key, group, task or channel id or name).
        #[arg(long)]
        target: Option<String>,
        /// The most changes listed, newest first.
        #[arg(long, default_value_t = 50)]
        limit: u32,
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create an admin token and print it (alone, on stdout; only its hash is kept).
    Create {
        /// A unique name; the audit log records changes as `token:NAME`.
        #[arg(long)]
        name: String,
        /// May only read (GET); changes are refused.
        #[arg(long)]
        read_only: bool,
    },
    /// List admin tokens (never their secrets).
    List {
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
    /// Revoke an admin token for good.
    Revoke {
        /// Its id (adm_…) or name.
        token: String,
    },
}

#[derive(Debug, Args, Default)]
pub struct UsageArgs {
    /// Only this account (its id, name, or one of its keys' ids).
    #[arg(long)]
    pub account: Option<String>,
    /// Only this key (its id).
    #[arg(long)]
    pub key: Option<String>,
    /// Only this public model.
    #[arg(long)]
    pub model: Option<String>,
    /// Only this endpoint (embeddings, speech, t2a, transcriptions, speech_to_text, clip_tasks,
    /// video_generations, videos, native, chat, responses, realtime).
    #[arg(long)]
    pub endpoint: Option<String>,
    /// From this time on: RFC 3339 (2026-11-24T08:00:00Z) or a UTC date (2026-11-24).
    #[arg(long)]
    pub since: Option<String>,
    /// Before this time: RFC 3339 or a UTC date.
    #[arg(long)]
    pub until: Option<String>,
    /// Totals per day, hour, model, key, endpoint, account or status (each split by meter) instead of
    /// the records.
    #[arg(long, value_name = "day|hour|model|key|endpoint|account|status")]
    pub group_by: Option<String>,
    /// The most records listed, newest first (not used with --group-by).
    #[arg(long, default_value_t = 100)]
    pub limit: u32,
    /// Print one JSON document (amounts as decimal strings).
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print CSV with a header row.
    #[arg(long)]
    pub csv: bool,
}

#[derive(Debug, Args, Default)]
pub struct AuditArgs {
    /// Print one JSON document (amounts as decimal strings).
    #[arg(long)]
    pub json: bool,
    /// Re-derive every charge from its recorded quantity, price version, multiplier and bound,
    /// and name each that differs: the default (issue 42: an edited price version's tariff is
    /// seen only so); kept as a flag for scripts that pass it.
    #[arg(long)]
    pub recompute: bool,
    /// Leave the re-derivation out: only the invariants of the rows (a quick check).
    #[arg(long, conflicts_with = "recompute")]
    pub quick: bool,
}

#[derive(Debug, Args, Default)]
pub struct ServeArgs {
    /// Address to listen on; overrides the configuration.
    #[arg(long, env = "TOLLGATE_LISTEN")]
    pub listen: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Create an account with a balance and print its new secret key (alone, on stdout).
    Create {
        /// The account's name (unique).
        #[arg(long)]
        name: String,
        /// Opening balance, a decimal amount such as 1 or 0.25.
        #[arg(long, default_value = "0")]
        balance: String,
    },
    /// List accounts and their balances.
    List {
        /// Print one JSON document (amounts as decimal strings).
        #[arg(long)]
        json: bool,
    },
    /// Add (or, negative, remove) credit.
    Credit {
        /// Account id, key id or name.
        account: String,
        /// A decimal amount.
        #[arg(allow_hyphen_values = true)]
        amount: String,
        /// Let a correction take more than the account has available: money its tasks hold or
        /// the gateways lease, or the balance below zero.
        #[arg(long)]
        allow_negative: bool,
        /// Why, for the ledger row and the admin audit log.
        #[arg(long, default_value = "credited from the command line")]
        reason: String,
        /// A key that makes the credit happen once, however often the command is repeated
        /// (a payment's id, say).
        #[arg(long)]
        idempotency_key: Option<String>,
    },
    /// Balance, open holds and usage by model.
    Show {
        /// Account id, key id or name.
        account: String,
        /// Print one JSON document (amounts as decimal strings).
        #[arg(long)]
        json: bool,
    },
    /// Disable an account and all its keys.
    Disable {
        /// Account id, key id or name.
        account: String,
    },
    /// Enable a disabled account (by its id or name), or one disabled key (by its id).
    Enable {
        /// Account id or name, or a key id.
        target: String,
    },
    /// Add another key to an account and print its secret (alone, on stdout).
    Add {
        /// Account id, key id or name.
        account: String,
        /// A label for the key.
        #[arg(long, default_value = "default")]
        name: String,
    },
    /// Revoke one key for good (its account and other keys keep working).
    Revoke {
        /// The key's id (`key_…`, as `keys show` lists it).
        key: String,
    },
    /// An account's ledger rows, newest first.
    Ledger {
        /// Account id, key id or name.
        account: String,
        /// The most rows listed.
        #[arg(long, default_value_t = 50)]
        limit: u32,
        /// Print one JSON document (amounts as decimal strings).
        #[arg(long)]
        json: bool,
    },
    /// Replace a key by a new one of the same label and policy, revoke the old one, and print
    /// the new secret (alone, on stdout).
    Rotate {
        /// The key's id (`key_…`).
        key: String,
    },
}

// Parsed once per process: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Print the policy of an account or a key.
    Show {
        /// Account id or name, or a key id.
        target: String,
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
    /// Set fields of the policy of an account or a key (the others stay as they are). A key's
    /// policy narrows its account's: a request must pass both.
    Set {
        /// Account id or name, or a key id.
        target: String,
        /// Models (public names or aliases' targets; globs with * and ?), comma-separated.
        #[arg(long)]
        models: Option<String>,
        /// Endpoints, comma-separated: embeddings, speech, t2a, transcriptions,
        /// speech_to_text, clip_tasks, video_generations, videos, native, chat, responses, realtime.
        #[arg(long)]
        endpoints: Option<String>,
        /// Expiry, RFC 3339 (2027-01-31T00:00:00Z, or with an offset such as +08:00).
        #[arg(long)]
        expires: Option<String>,
        /// Client networks (CIDRs or addresses, IPv4 or IPv6), comma-separated.
        #[arg(long)]
        ips: Option<String>,
        /// The price group (made with `groups set`); a key's overrides its account's.
        #[arg(long)]
        group: Option<String>,
        /// Billable requests per minute.
        #[arg(long)]
        rpm: Option<u64>,
        /// Units of a meter per minute, METER=N (tokens, text_tokens, characters,
        /// audio_seconds, video_tokens, video_seconds, token_classes), or images=N (the images
        /// image calls ask for); repeat for several.
        #[arg(long, value_name = "METER=N")]
        per_minute: Vec<String>,
        /// Billable requests in flight at once (a stream counts until its end).
        #[arg(long)]
        concurrency: Option<u32>,
        /// Streamed answers open at once.
        #[arg(long)]
        streams: Option<u32>,
        /// Money per UTC day, a decimal amount, on top of the balance.
        #[arg(long, allow_hyphen_values = true)]
        daily_budget: Option<String>,
        /// Money per UTC calendar month, a decimal amount, on top of the balance.
        #[arg(long, allow_hyphen_values = true)]
        monthly_budget: Option<String>,
        /// Video tasks in flight at once.
        #[arg(long)]
        tasks_in_flight: Option<u32>,
    },
    /// Remove the whole policy of an account or a key.
    Clear {
        /// Account id or name, or a key id.
        target: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum GroupsCommand {
    /// List the price groups and their multipliers.
    List {
        /// Print one JSON document (multipliers as decimal strings).
        #[arg(long)]
        json: bool,
    },
    /// Create a price group, or change its multiplier or its multipliers for single models.
    Set {
        /// The group's name.
        name: String,
        /// What every list price is multiplied by: 0.8 is 20 % off, 1.5 is 50 % more. Needed to
        /// create a group.
        #[arg(long, allow_hyphen_values = true)]
        multiplier: Option<String>,
        /// A model priced with a multiplier of its own in this group, MODEL=X (a public name);
        /// repeat for several models.
        #[arg(long = "model", value_name = "MODEL=X")]
        models: Vec<String>,
        /// A model that goes back to the group's multiplier; repeat for several.
        #[arg(long = "drop-model", value_name = "MODEL")]
        drop_models: Vec<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the embedded default configuration as a commented TOML file.
    Default,
    /// Check the configuration (--config, or the embedded default) as `serve` and a reload
    /// would, without serving: exits 1 naming what is wrong. Channel keys are looked up in this
    /// command's environment.
    Check,
}

#[derive(Debug, Args)]
pub struct SimArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:9090")]
    pub listen: String,
    /// Latency added to every answer, in milliseconds.
    #[arg(long, default_value_t = 0)]
    pub latency_ms: u64,
}

/// `tollgate prices import`'s arguments.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// LiteLLM's `model_prices_and_context_window.json` or models.dev's `api.json`.
    pub file: std::path::PathBuf,
    /// A public model and the list's id for it: `--map text-embedding-3-small=text-embedding-3-small`
    /// (models.dev ids are `provider/model`). Repeat for each model.
    #[arg(long = "map", value_name = "MODEL=ID", required = true)]
    pub map: Vec<String>,
    /// `litellm` or `models.dev`; told by the file's shape when left out.
    #[arg(long)]
    pub format: Option<String>,
    /// Add the versions (without it: only show the differences).
    #[arg(long)]
    pub apply: bool,
    /// The largest rise, in percent, applied without `--force`; a price rising from zero
    /// always needs it.
    #[arg(long, default_value = "25")]
    pub max_increase: rust_decimal::Decimal,
    /// The largest fall, in percent, applied without `--force`; a price falling to zero
    /// always needs it.
    #[arg(long, default_value = "50")]
    pub max_decrease: rust_decimal::Decimal,
    /// Apply rises above `--max-increase` and falls below `--max-decrease` too.
    #[arg(long)]
    pub force: bool,
    /// When the versions take effect (RFC 3339, not in the past); now when left out.
    #[arg(long)]
    pub from: Option<String>,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}
