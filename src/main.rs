//! `hydro`: serve, import and generate Hydro API datasets.
//!
//! Modules from the bottom up; each uses only those above it in this list:
//!
//! - [`cli`]: the command line: every command, argument and its help.
//! - [`log`]: the log, as text or JSON lines.
//! - [`progress`]: the progress bar of long commands on a terminal.
//! - [`cmd`]: the commands, one file each.

/// `println!` that stops quietly at a closed pipe: `hydro import … | head` ends `head`'s input,
/// and a report line written after that is no reason to panic (`println!` does).
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// `eprintln!`, likewise.
macro_rules! tell {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

mod cli;
mod cmd;
mod log;
mod progress;

use clap::Parser;
use cli::{Cli, Command};
use hydro_server::config::LogFormat;

/// mimalloc instead of glibc malloc: decoding and encoding a download allocate per page and per
/// batch on several threads at once, and glibc's arena locks and trimming showed up in `perf`
/// as a sixth of the CPU time of a bulk download (futex waits, `malloc_consolidate`).
///
/// Built without transparent huge pages (`no_thp`): by default mimalloc asks for them for its
/// segments, and the kernel then zeroes 2 MiB at the first touch of any byte of one, while most of
/// what this program allocates is a batch, a page or a row group used once. Without them, measured
/// side by side with release builds (the history of `benches/RESULTS.md`): a one-value append to
/// 720 000 files spent 0.13-0.17 s in the kernel rather than 0.60-0.66 s (half of its samples had
/// been `clear_page_erms`), took half the time and peaked at 204-210 MiB rather than 230-242; a
/// `generate` of 36 000 files peaked at 112-116 MiB rather than 188-246; `serve` started at 111-114
/// MiB rather than 129-135, with downloads and first requests as fast. (A host whose kernel puts
/// huge pages everywhere, `transparent_hugepage=always`, still gets them.)
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Threads for blocking work at once: above all the local store's file operations, a thread each
/// while it runs. Tokio's default, 512, let a compaction at 200 000 station-years run 121 of them
/// at its end, each with its own allocator heap (memory a thread freed is reused by that thread).
/// Capped at 16, release builds side by side (the history of `benches/RESULTS.md`), in the same
/// time: peak RSS of that compaction 425-442 → 359-399 MiB (19 threads), of one at 18 000
/// station-years 199-205 → 154-163 MiB, of a day append at 200 000 station-years 311-314 → 285-300
/// MiB; 78 series in one download as fast. The blocking tasks that run long hold a thread each: an
/// import's writing (which waits on file operations run on other threads of the pool) and a follow
/// switch, one at a time, and a generate's stations, one a core (so a generate uses at most 16
/// cores).
const BLOCKING_THREADS: usize = 16;

fn main() -> std::process::ExitCode {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(BLOCKING_THREADS)
        .build();
    let outcome = match runtime {
        Ok(runtime) => runtime.block_on(run()),
        Err(e) => Err(anyhow::Error::new(e).context("starting the async runtime")),
    };
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tell!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run() -> anyhow::Result<()> {
    let command = Cli::parse().command;
    // `serve` starts its log once its settings say how.
    if !matches!(command, Command::Serve(_)) {
        log::start_log(LogFormat::Text, None)?;
    }
    match command {
        Command::Serve(args) => cmd::serve::run(args).await,
        Command::Import(args) => cmd::import::run(args).await,
        Command::Rollback(args) => cmd::rollback::run(args).await,
        Command::Vacuum(args) => cmd::vacuum::run(args).await,
        Command::Compact(args) => cmd::compact::run(args).await,
        Command::HashKey => cmd::keys::hash_key(),
        Command::HashPassword => cmd::keys::hash_password(),
        Command::Generate(args) => cmd::generate::run(args).await,
    }
}
