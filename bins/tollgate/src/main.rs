//! `tollgate`: the command line (DESIGN §3). It only wires things together: configuration →
//! store → channels (or the in-process simulator) → gateway → hyper. Everything else lives in
//! the crates. This file dispatches the commands (`cli` holds their arguments, `common` what
//! they share); each command lives in a module of its own.

mod accounts;
mod admin;
mod audit;
mod cli;
mod codes;
mod common;
mod keys;
mod ledger;
mod policy;
mod prices;
mod serve;
mod simulator;
mod telemetry;
mod usage;

use clap::Parser;
use cli::{Cli, Command, ConfigCommand, ServeArgs};
use std::process::ExitCode;

/// mimalloc rather than glibc's malloc: a relayed request allocates and frees many short-lived
/// buffers across two threads, where glibc spent a tenth of the gateway's CPU consolidating and
/// unlinking chunks (`docs/benchmarks.md`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("tollgate: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("tollgate: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Runs a command; the error is the message to print.
async fn run(cli: Cli) -> Result<(), String> {
    match cli.command.unwrap_or(Command::Serve(ServeArgs::default())) {
        Command::Serve(args) => crate::serve::serve(&cli.common, args).await,
        Command::Keys(command) => crate::keys::run(&cli.common, command).await,
        Command::Accounts(command) => crate::accounts::run(&cli.common, command).await,
        Command::Codes(command) => crate::codes::run(&cli.common, command).await,
        Command::Policy(command) => crate::policy::run(&cli.common, command).await,
        Command::Groups(command) => crate::policy::groups(&cli.common, command).await,
        Command::Config(ConfigCommand::Default) => {
            print!("{}", tollgate_settings::config::DEFAULT_CONFIG);
            Ok(())
        }
        Command::Config(ConfigCommand::Check) => crate::common::check_config(&cli.common),
        Command::Sim(args) => {
            crate::serve::init_logging(
                &tollgate_settings::Config::embedded_default().map_err(|e| e.to_string())?,
            );
            crate::simulator::run(args).await
        }
        Command::Audit(args) => crate::audit::run(&cli.common, args).await,
        Command::Usage(args) => crate::usage::run(&cli.common, args).await,
        Command::Admin(command) => crate::admin::run(&cli.common, command).await,
        Command::Tasks(command) => crate::admin::tasks(&cli.common, command).await,
        Command::Channels(command) => crate::admin::channels(&cli.common, command).await,
        Command::Alerts(command) => crate::admin::alerts(&cli.common, command).await,
        Command::Prices(command) => crate::prices::run(&cli.common, command).await,
        Command::Ledger(command) => crate::ledger::run(&cli.common, command).await,
        Command::Statement {
            account,
            from,
            until,
            out,
        } => {
            crate::ledger::statement(
                &cli.common,
                &account,
                from.as_deref(),
                until.as_deref(),
                out,
            )
            .await
        }
        Command::Verify { file, keys } => crate::ledger::verify(&file, &keys),
        Command::Explain { request_id, json } => {
            crate::prices::explain(&cli.common, &request_id, json).await
        }
    }
}
