//! `tcpvideo-origin`: the video origin binary (thin: options, logging, BPF set-up, signals; the
//! work is in the `tcpvideo_origin` library). `tcpvideo origin serve DIR` execs it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use tcpvideo_model::units::Bandwidth;
use tcpvideo_origin::{serve, ClampControl, ClampProgram, DeliveryRules, Origin, OriginMode, ServedRoot};
use tracing::{info, warn};

/// Video origin: serves DIR (progressive files, HLS, DASH) with per-path or per-request
/// delivery modes: bulk, baseline / shrunk-block (ustreamer pacing), trickle, pacing-cap, bbr,
/// cwnd-limit. Query keys: mode, rate_kbps, startup_s, block, cwnd.
#[derive(Parser, Debug)]
#[command(name = "tcpvideo-origin", version)]
struct Options {
    /// Directory to serve; nothing outside it is ever read.
    dir: PathBuf,
    #[arg(long, default_value = "127.0.0.1:8000")]
    listen: SocketAddr,
    /// Delivery mode for requests no rule or query names.
    #[arg(long, default_value = "bulk")]
    mode: String,
    /// PREFIX=MODE: mode for paths starting with PREFIX (repeatable; longest prefix wins).
    #[arg(long = "path-mode")]
    path_mode: Vec<String>,
    /// Encoding rate R (kbit/s) for requests that do not give rate_kbps.
    #[arg(long)]
    rate_kbps: Option<u64>,
    /// Media seconds sent in ustreamer's startup burst (paper: 30).
    #[arg(long, default_value_t = 30.0)]
    startup_s: f64,
    /// Packets for the cwnd-limit mode when the request gives no cwnd.
    #[arg(long, default_value_t = 10)]
    cwnd: u32,
    /// Connections served at once; beyond it new connections are closed.
    #[arg(long, default_value_t = 4096)]
    max_connections: u64,
    /// Seconds a client may take to send a request head.
    #[arg(long, default_value_t = 30)]
    header_timeout_s: u64,
    /// Congestion control for every accepted socket (default: the system's).
    #[arg(long)]
    congestion_control: Option<String>,
    /// Fixed send buffer per socket (KiB); default: kernel autotuning.
    #[arg(long)]
    sndbuf_kib: Option<usize>,
    /// Do not load the BPF cwnd clamp (trickle and cwnd-limit use SO_MAX_PACING_RATE).
    #[arg(long)]
    no_bpf: bool,
    /// Worker threads, each with its own single-threaded runtime and its own SO_REUSEPORT
    /// listener on the same address, as nginx's worker processes (default: one per core).
    #[arg(long)]
    workers: Option<usize>,
    /// Log format: text or json.
    #[arg(long, default_value = "text")]
    log_format: String,
}

fn rules_from(o: &Options) -> Result<DeliveryRules, String> {
    let mode = |name: &str, key: &str| OriginMode::from_name(name, Some(o.cwnd)).map_err(|e| format!("{key}: {e}"));
    let mut rules = DeliveryRules::bulk();
    rules.default_mode = mode(&o.mode, "--mode")?;
    for rule in &o.path_mode {
        let (prefix, name) = rule.split_once('=').ok_or_else(|| format!("--path-mode: expected PREFIX=MODE, got {rule:?}"))?;
        if !prefix.starts_with('/') {
            return Err(format!("--path-mode: prefix must start with '/', got {prefix:?}"));
        }
        rules.path_modes.push((prefix.to_string(), mode(name, "--path-mode")?));
    }
    if o.cwnd == 0 {
        return Err("--cwnd: expected packets >= 1, got 0".into());
    }
    rules.default_rate = match o.rate_kbps {
        Some(0) => return Err("--rate-kbps: expected kbit/s >= 1, got 0".into()),
        Some(k) => Some(Bandwidth::from_bps(k.saturating_mul(1000))),
        None => None,
    };
    if !(o.startup_s.is_finite() && (0.0..=86_400.0).contains(&o.startup_s)) {
        return Err(format!("--startup-s: expected seconds in 0..=86400, got {}", o.startup_s));
    }
    rules.default_startup = Duration::from_secs_f64(o.startup_s);
    let needs_rate = std::iter::once(&rules.default_mode).chain(rules.path_modes.iter().map(|(_, m)| m)).find(|m| m.needs_rate());
    if let (Some(m), None) = (needs_rate, rules.default_rate) {
        return Err(format!("--rate-kbps: mode {} needs the encoding rate", m.label()));
    }
    Ok(rules)
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
    let rules = match rules_from(&o) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let root = match ServedRoot::new(&o.dir) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("DIR {}: {e}", o.dir.display());
            return ExitCode::from(2);
        }
    };
    // Before the listener exists: accepted sockets inherit the listener's cgroup.
    let clamp = if o.no_bpf {
        warn!("--no-bpf: trickle and cwnd-limit approximate the cwnd clamp with SO_MAX_PACING_RATE");
        ClampControl::PacingFallback
    } else {
        match ClampProgram::load() {
            Ok(p) => {
                info!(cgroup = %p.cgroup().display(), "BPF cwnd clamp loaded");
                ClampControl::Bpf(p)
            }
            Err(e) => {
                warn!(reason = %e, "trickle and cwnd-limit approximate the cwnd clamp with SO_MAX_PACING_RATE");
                ClampControl::PacingFallback
            }
        }
    };
    let mut origin = Origin::new(root, rules, clamp);
    origin.max_connections = o.max_connections;
    origin.header_timeout = Duration::from_secs(o.header_timeout_s.max(1));
    origin.congestion_control = o.congestion_control.clone();
    origin.send_buffer_bytes = o.sndbuf_kib.map(|k| k * 1024);
    let origin = Arc::new(origin);

    let workers = o.workers.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).max(1);
    // The first listener resolves the address (port 0 → a free port) the others share.
    let first = match bind_listener(o.listen, o.congestion_control.as_deref()) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let bound = first.local_addr().unwrap_or(o.listen);
    let mut listeners = vec![first];
    for _ in 1..workers {
        match bind_listener(bound, o.congestion_control.as_deref()) {
            Ok(l) => listeners.push(l),
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(2);
            }
        }
    }
    info!(listen = %bound, workers, root = %origin.root.path().display(), mode = %o.mode, "origin listening");
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut threads = Vec::new();
    for (i, listener) in listeners.into_iter().enumerate() {
        let (origin, mut stop_rx) = (origin.clone(), stop_rx.clone());
        let spawned = std::thread::Builder::new().name(format!("origin-worker-{i}")).spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("cannot start worker {i}'s runtime: {e}");
                    return;
                }
            };
            runtime.block_on(async move {
                let listener = match tokio::net::TcpListener::from_std(listener) {
                    Ok(l) => l,
                    Err(e) => {
                        eprintln!("worker {i}: {e}");
                        return;
                    }
                };
                serve(origin, listener, async move {
                    let _ = stop_rx.wait_for(|s| *s).await;
                })
                .await;
            });
            runtime.shutdown_timeout(Duration::from_secs(1));
        });
        match spawned {
            Ok(t) => threads.push(t),
            Err(e) => {
                eprintln!("cannot start worker {i}: {e}");
                let _ = stop_tx.send(true);
                return ExitCode::FAILURE;
            }
        }
    }
    let signals = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("cannot start the signal runtime: {e}");
            let _ = stop_tx.send(true);
            return ExitCode::FAILURE;
        }
    };
    signals.block_on(shutdown_signal());
    let _ = stop_tx.send(true);
    for t in threads {
        let _ = t.join();
    }
    // Last reference: removes the BPF program, its cgroup and pins.
    drop(origin);
    info!("origin stopped");
    ExitCode::SUCCESS
}

/// A non-blocking listener on `addr` with SO_REUSEPORT (several workers share the address; the
/// kernel spreads connections over them by hash) and, if given, the congestion control.
fn bind_listener(addr: SocketAddr, congestion_control: Option<&str>) -> Result<std::net::TcpListener, String> {
    let socket = if addr.is_ipv4() { tokio::net::TcpSocket::new_v4() } else { tokio::net::TcpSocket::new_v6() }
        .map_err(|e| format!("--listen {addr}: {e}"))?;
    socket.set_reuseaddr(true).and_then(|_| socket.set_reuseport(true)).map_err(|e| format!("--listen {addr}: {e}"))?;
    // On the listener: an accepted socket starts with its listener's congestion control, and a
    // socket that started as BBR keeps TCP's internal pacing on after a switch to another
    // (bbr_init sets sk_pacing_status), which would pace every mode.
    if let Some(cc) = congestion_control {
        use std::os::fd::AsRawFd;
        (tcpvideo_origin::socket_control::SocketHandle { fd: socket.as_raw_fd() })
            .set_congestion_control(cc)
            .map_err(|e| format!("--congestion-control {cc}: {e}"))?;
    }
    socket.bind(addr).map_err(|e| format!("--listen {addr}: {e}"))?;
    // TcpSocket::listen needs a runtime; std's listen(2) here, the worker wraps it.
    use std::os::fd::{FromRawFd, IntoRawFd};
    let fd = socket.into_raw_fd();
    // SAFETY: `fd` is the bound socket we own; std takes it over.
    let listener = unsafe { std::net::TcpListener::from_raw_fd(fd) };
    // SAFETY: listen(2) on our own bound socket.
    if unsafe { libc::listen(fd, 4096) } != 0 {
        return Err(format!("--listen {addr}: {}", std::io::Error::last_os_error()));
    }
    listener.set_nonblocking(true).map_err(|e| format!("--listen {addr}: {e}"))?;
    Ok(listener)
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
