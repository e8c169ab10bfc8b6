//! The command line: `memvault [serve] [--config PATH] [--bind ADDR] [--data-dir DIR]
//! [--log-format text|json]`. With no subcommand, `serve` is assumed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, Parser, Subcommand};
use memvault_core::service::BootstrapOutcome;
use tracing_subscriber::EnvFilter;

use memvault_server::config::{Config, LogFormat};
use memvault_server::server;

/// The binary's allocator, here rather than in the binary's crate, which is compiled
/// without optimisation. mimalloc keeps freed tensor buffers for reuse; with the system
/// allocator every large tensor of a forward pass is a fresh mmap and a round of page
/// faults.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(
    name = "memvault",
    version,
    about = "Self-hosted long-term memory service for AI agents"
)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the HTTP API (the default).
    Serve(ServeArgs),
    /// Measure a server process over HTTP: start-up, latency, throughput, memory, disk.
    Bench(memvault_tools::bench::BenchArgs),
    /// Retrieval quality of every search mode on the public evaluation sets (nDCG@10,
    /// Recall@10; evidence Recall@10 on LoCoMo).
    Eval(memvault_tools::eval::EvalArgs),
    /// Follow a running server's re-embedding (after the embedding model changed) with a
    /// progress bar, until every collection is on the configured model.
    Reembed(memvault_tools::reembed::ReembedArgs),
    /// Outgoing mail: `memvault mail outbox` lists what was written to the outbox (the
    /// server sends there when no `mail.smtp_url` is set).
    #[command(subcommand)]
    Mail(MailCommand),
    /// Extract one file in this process under OS limits (the server starts it per file):
    /// a JSON header line and the file's bytes on stdin, one JSON answer on stdout.
    #[command(hide = true)]
    IngestWorker,
}

#[derive(Debug, Subcommand)]
enum MailCommand {
    /// Every message in `{data_dir}/outbox/`, oldest first: when, to whom, the subject
    /// and the plain-text body.
    Outbox {
        /// Config file; without it ./config.toml is read when present.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Where data lives (overrides server.data_dir).
        #[arg(long)]
        data_dir: Option<PathBuf>,
    },
}

#[derive(Debug, Clone, Default, Args)]
pub struct ServeArgs {
    /// Config file; without it ./config.toml is read when present.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Address to listen on, e.g. 127.0.0.1:8420 (overrides server.bind).
    #[arg(long)]
    bind: Option<String>,
    /// Where data lives (overrides server.data_dir).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Log format (overrides log.format).
    #[arg(long, value_enum)]
    log_format: Option<LogFormat>,
}

pub fn run() -> ExitCode {
    let cli = Cli::parse();
    let args = match cli.command {
        // First, before any runtime, thread or logger: stdout is the answer channel.
        Some(Command::IngestWorker) => {
            return memvault_ingest::worker::serve_worker(
                std::io::stdin().lock(),
                std::io::stdout().lock(),
            );
        }
        Some(Command::Serve(args)) => args,
        Some(Command::Mail(MailCommand::Outbox { config, data_dir })) => {
            return print_outbox(ServeArgs {
                config,
                data_dir,
                ..ServeArgs::default()
            });
        }
        Some(Command::Bench(args)) => {
            return match memvault_tools::bench::run(args) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("memvault bench: {error}");
                    ExitCode::FAILURE
                }
            };
        }
        Some(Command::Eval(args)) => {
            return match memvault_tools::eval::run(args) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("memvault eval: {error}");
                    ExitCode::FAILURE
                }
            };
        }
        Some(Command::Reembed(args)) => {
            return match memvault_tools::reembed::run(args) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("memvault reembed: {error}");
                    ExitCode::FAILURE
                }
            };
        }
        None => cli.serve,
    };
    let config = match load_config(&args) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("memvault: {error}");
            return ExitCode::from(2);
        }
    };
    init_logging(&config);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("memvault: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!(%error, "memvault stopped");
            eprintln!("memvault: {error}");
            ExitCode::FAILURE
        }
    }
}

fn print_outbox(args: ServeArgs) -> ExitCode {
    let config = match load_config(&args) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("memvault: {error}");
            return ExitCode::from(2);
        }
    };
    let directory = config.server.data_dir.join("outbox");
    if let Some(url) = &config.mail.smtp_url {
        eprintln!(
            "memvault: mail.smtp_url is set ({}), so new mail goes there, not to the outbox",
            url.split('@').next_back().unwrap_or_default()
        );
    }
    let entries = match memvault_mail::outbox::read(&directory) {
        Ok(entries) => entries,
        Err(error) => {
            eprintln!("memvault: cannot read {}: {error}", directory.display());
            return ExitCode::FAILURE;
        }
    };
    if entries.is_empty() {
        println!("the outbox {} is empty", directory.display());
    }
    for entry in entries {
        println!(
            "== {}  to {}\nSubject: {}\nFile: {}\n\n{}\n",
            entry.written_at.format("%Y-%m-%d %H:%M:%S UTC"),
            entry.to,
            entry.subject,
            entry.file.display(),
            entry.text.trim_end()
        );
    }
    ExitCode::SUCCESS
}

fn load_config(args: &ServeArgs) -> Result<Config, memvault_server::config::ConfigError> {
    let mut config = Config::load(
        args.config.as_deref(),
        Path::new("config.toml"),
        std::env::vars(),
    )?;
    if let Some(bind) = &args.bind {
        config.server.bind = bind.clone();
    }
    if let Some(data_dir) = &args.data_dir {
        config.server.data_dir = data_dir.clone();
    }
    if let Some(format) = args.log_format {
        config.log.format = format;
    }
    config.validate()?;
    Ok(config)
}

fn init_logging(config: &Config) {
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(&config.log.filter))
        .unwrap_or_else(|_| EnvFilter::new(memvault_server::config::DEFAULT_LOG_FILTER));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match config.log.format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

async fn serve(config: Config) -> Result<(), server::StartupError> {
    let started = Instant::now();
    let bootstrap_key = std::env::var("MEMVAULT_BOOTSTRAP_KEY")
        .ok()
        .filter(|key| !key.is_empty());
    let embedder = server::start_embedder(&config).await?;
    let started_service = server::start_service(&config, embedder, bootstrap_key).await?;
    match started_service.bootstrap {
        BootstrapOutcome::CreatedWithGeneratedKey(key) => {
            println!("memvault: created the admin tenant; its API key (shown once, keep it):");
            println!("{key}");
        }
        BootstrapOutcome::CreatedWithSuppliedKey => {
            tracing::info!("created the admin tenant with MEMVAULT_BOOTSTRAP_KEY");
        }
        BootstrapOutcome::AlreadyBootstrapped => {}
    }
    let listener = server::bind(&config.server.bind).await?;
    let address = listener.local_addr().map_err(server::StartupError::Serve)?;
    tracing::info!(
        %address,
        data_dir = %config.server.data_dir.display(),
        startup_ms = started.elapsed().as_millis() as u64,
        "memvault listening"
    );
    println!("memvault listening on http://{address}");
    server::serve(
        listener,
        started_service.service,
        started_service.state,
        Box::pin(server::shutdown_signal()),
    )
    .await?;
    tracing::info!("memvault stopped cleanly");
    Ok(())
}
