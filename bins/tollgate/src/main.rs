//! `tollgate`: the command line (DESIGN §3). It only wires things together: configuration →
//! store → channels (or the in-process simulator) → gateway → hyper. Everything else lives in
//! the crates.

mod admin;
mod audit;
mod cli;
mod keys;
mod policy;
mod serve;
mod simulator;
mod usage;

use clap::Parser;
use std::process::ExitCode;

/// mimalloc rather than glibc's malloc: a relayed request allocates and frees many short-lived
/// buffers across two threads, where glibc spent a tenth of the gateway's CPU consolidating and
/// unlinking chunks (`docs/benchmarks.md`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
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
    match runtime.block_on(cli::run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("tollgate: {message}");
            ExitCode::FAILURE
        }
    }
}
