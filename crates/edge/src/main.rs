//! `tcpvideo-edge`: the ETHLE edge proxy binary (thin: options, logging, signals; the work is
//! in the `tcpvideo_edge` library). `tcpvideo edge serve` execs it.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use tcpvideo_edge::upstream::UpstreamBase;
use tcpvideo_edge::{serve, Edge, EdgeConfig};
use tcpvideo_model::units::Bandwidth;
use tracing::info;

/// ETHLE edge: holds back the newest x live HLS segments per receiver group, prefetches them
/// over parallel upstream connections, and fetches each segment once for all receivers.
#[derive(Parser, Debug)]
#[command(name = "tcpvideo-edge", version)]
struct Options {
    /// The live source, e.g. http://10.0.0.2:8000/live
    #[arg(long)]
    upstream: String,
    /// Address receivers connect to.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// Bound on cached segment bytes (MiB).
    #[arg(long, default_value_t = 512)]
    cache_mib: u64,
    /// Operator cap on x (parallel upstream connections per catch-up); 0 = no cap.
    #[arg(long, default_value_t = 8)]
    max_x: u32,
    /// th_ran (kbit/s) assumed for receivers that carry none; unset = unknown (unlimited).
    #[arg(long)]
    default_ran_kbps: Option<u64>,
    /// Reuse an upstream media playlist for this long (ms).
    #[arg(long, default_value_t = 500)]
    playlist_ttl_ms: u64,
    /// Largest upstream playlist accepted (KiB).
    #[arg(long, default_value_t = 1024)]
    max_playlist_kib: u64,
    /// Largest segment relayed (MiB).
    #[arg(long, default_value_t = 64)]
    max_object_mib: u64,
    /// Deadline for connect + response headers of an upstream request (ms).
    #[arg(long, default_value_t = 10_000)]
    header_timeout_ms: u64,
    /// Longest pause between upstream body chunks (ms).
    #[arg(long, default_value_t = 10_000)]
    body_idle_timeout_ms: u64,
    /// Extra attempts of an upstream fetch that failed before its response head.
    #[arg(long, default_value_t = 1)]
    retries: u32,
    /// Use this backhaul RTT (ms) instead of the TCP_INFO measurement.
    #[arg(long)]
    backhaul_rtt_ms: Option<f64>,
    /// Use this source MSS (bytes) instead of the TCP_INFO measurement.
    #[arg(long)]
    backhaul_mss_bytes: Option<u64>,
    /// Do not keep an idle connection to the source open ahead of new streams' first playlists.
    #[arg(long)]
    no_standby_connection: bool,
    /// Log format: text or json.
    #[arg(long, default_value = "text")]
    log_format: String,
}

fn main() -> ExitCode {
    let o = Options::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    match o.log_format.as_str() {
        "json" => tracing_subscriber::fmt().json().with_env_filter(filter).init(),
        "text" => tracing_subscriber::fmt().with_env_filter(filter).init(),
        other => {
            eprintln!("--log-format: expected text or json, got {other:?}");
            return ExitCode::from(2);
        }
    }
    let upstream = match UpstreamBase::parse(&o.upstream) {
        Ok(u) => u,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    if let Some(rtt) = o.backhaul_rtt_ms {
        if !(rtt.is_finite() && rtt > 0.0) {
            eprintln!("--backhaul-rtt-ms: expected a positive number, got {rtt}");
            return ExitCode::from(2);
        }
    }
    if o.backhaul_mss_bytes.is_some_and(|m| !(88..=65535).contains(&m)) {
        eprintln!("--backhaul-mss-bytes: expected 88..65535 (Linux TCP_MIN_MSS .. 16-bit MSS option)");
        return ExitCode::from(2);
    }
    let mut config = EdgeConfig::new(upstream, o.listen);
    config.cache_bytes = o.cache_mib << 20;
    config.max_x = (o.max_x > 0).then_some(o.max_x);
    config.default_ran = o.default_ran_kbps.map(|k| Bandwidth::from_bps(k.saturating_mul(1000)));
    config.playlist_ttl = Duration::from_millis(o.playlist_ttl_ms);
    config.max_playlist_bytes = o.max_playlist_kib << 10;
    config.max_object_bytes = o.max_object_mib << 20;
    config.header_timeout = Duration::from_millis(o.header_timeout_ms);
    config.body_idle_timeout = Duration::from_millis(o.body_idle_timeout_ms);
    config.retries = o.retries;
    config.backhaul_rtt_override = o.backhaul_rtt_ms.map(|ms| Duration::from_secs_f64(ms / 1000.0));
    config.backhaul_mss_override = o.backhaul_mss_bytes;
    config.standby_connection = !o.no_standby_connection;

    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::bind(config.listen).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("--listen {}: {e}", config.listen);
                return ExitCode::from(2);
            }
        };
        let bound = listener.local_addr().map(|a| a.to_string()).unwrap_or_default();
        info!(listen = %bound, upstream = %o.upstream, "edge listening");
        serve(Edge::new(config), listener, shutdown_signal()).await;
        info!("edge stopped");
        ExitCode::SUCCESS
    })
}

async fn shutdown_signal() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}
