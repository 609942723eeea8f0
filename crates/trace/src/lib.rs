//! tcpvideo-trace: one streaming pass over packet captures to per-flow TCP state, stalls and
//! their causes, timeout-retransmission types and micro-bursts.
//!
//! This is the analyzer of seed 000 (Zhou et al., "A study on TCP performance of crowdsourced
//! live streaming"): a *stall* is a gap between two consecutive packets of a flow, as seen at the
//! server, longer than min(τ·SRTT, RTO) with τ = 2; download stalls are classified as timeout
//! retransmission, resource constraint, packet delay, zero rwnd, keep-alive or other (Table 2),
//! upload stalls as normal, reordering or keep-alive (§2.1); timeout retransmissions are typed
//! tail, less-packet, double, ACK delay/loss, continuous loss or other (Table 5), following the
//! seed's wording and, where it is silent, TAPO (Zhou et al., CoNEXT 2015, the seed's ref [18]).
//! It also computes the metrics of seed 003 (Trickle): retransmission rate, micro-bursts (≥ 4
//! data packets ≤ 1 ms apart, Blanton et al.), srtt at the end of the connection, goodput.
//!
//! Pipeline: [`reader`] (pcap/pcapng, gzip/zstd; zero-copy records) → `segments` (the loop head
//! every driver shares) → [`dedup`] (span-port
//! copies dropped) → [`decode`] (link, IP,
//! TCP + options) → [`shard`] (flows hashed to worker threads) → [`flow`] (per-flow state:
//! [`rtt`] RFC 6298 emulation, [`stall`] classification, [`retrans`] timeout-retransmission
//! typing, [`burst`] micro-bursts, [`http`]/[`flv`]/[`rtmp`] video awareness) → [`output`]
//! (tables, summary, channel pairing of upload and download stalls, Table 3).
//!
//! Public entry point: [`analyze_paths`] (files) or [`analyze_bytes`] (a capture in memory).
//! Everything is deterministic: outputs are sorted by flow start time and 5-tuple, never by
//! hash-map order, and no wall clock is read.

pub mod app;
pub mod burst;
pub mod decode;
pub mod dedup;
pub mod fixture;
pub mod flow;
pub mod flv;
pub mod http;
pub mod output;
pub mod rack_inference;
pub mod rack_timer;
pub mod reader;
pub mod retrans;
pub mod rtmp;
pub mod rto_window;
pub mod rtt;
mod segments;
pub mod server_settings;
pub mod shard;
pub mod stall;
pub mod tlp;
pub mod tlp_inference;

use std::path::PathBuf;
use std::time::Duration;

pub use output::{
    Analysis, BurstRecord, DecodeStats, FlowRecord, FrameTypeStats, HttpRecord, PairingStats, RetransRecord, RttBucket, StallRecord,
    Summary,
};
pub use retrans::{RetransKind, TimeoutType};
pub use stall::StallKind;

/// Errors that stop an analysis (damaged records do not: they are counted and skipped).
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("{0}: {1}")]
    Io(String, #[source] std::io::Error),
    #[error("{0}: {1}")]
    Format(String, String),
    #[error("invalid option: {0}")]
    Option(String),
}

/// How the retransmission timeout is emulated from RTT samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum RtoStyle {
    /// RFC 6298 §2: RTO = SRTT + max(G, 4·RTTVAR), then clamped to at least `min_rto`
    /// (the brief: "RFC 6298 with Linux's 200 ms minimum").
    Rfc6298,
    /// Linux `tcp_rtt_estimator`/`__tcp_set_rto`: RTO = SRTT + max(4·mdev, min_rto), i.e. the
    /// 200 ms floor applies to the variance term, not to the total (RTO ≥ SRTT + 200 ms).
    Linux,
}

/// Options of one analysis. `Default` gives the seed's settings.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct AnalyzeOptions {
    /// τ in the stall threshold min(τ·SRTT, RTO). Seed 000 §2.1: 2.
    pub tau: f64,
    /// Lower bound of the stall threshold: a gap is a stall only if longer than
    /// max(floor, min(τ·SRTT, RTO)). Zero (the default) is the seed's definition. On
    /// sub-millisecond paths (veth, loopback, a data centre) min(2·SRTT, RTO) is a few hundred
    /// µs, so every pause between application writes counts as a stall; TAPO compares gaps with
    /// its own RTO-based timer and reports far fewer there (issue 16). A floor such as 200 ms
    /// (Linux's minimum RTO) keeps only gaps a viewer could notice.
    pub stall_floor: Duration,
    /// Ports that identify the server side (any match wins over the SYN direction).
    pub server_ports: Vec<u16>,
    /// Addresses that identify the server side (IPv4 or IPv6 text).
    pub server_ips: Vec<String>,
    /// Worker threads for flow analysis; 0 = available cores.
    pub threads: usize,
    pub rto_style: RtoStyle,
    /// RTO floor (Linux TCP_RTO_MIN, 200 ms).
    pub min_rto: Duration,
    /// RTO before any RTT sample (RFC 6298 §2.1: 1 s).
    pub initial_rto: Duration,
    /// RTO ceiling (Linux TCP_RTO_MAX, 120 s).
    pub max_rto: Duration,
    /// Micro-burst: at most this gap between consecutive data packets (Trickle §5.2: 1 ms).
    pub burst_gap: Duration,
    /// Micro-burst: at least this many data packets (Trickle §5.2: 4).
    pub burst_min_packets: u32,
    /// A reordered packet arriving more than this after its hole opened is a "timeout
    /// reordering" (Zhou et al. §2.1: 0.2 s, Linux's minimum RTO).
    pub timeout_reordering: Duration,
    /// Window for "upload stall causes download stall" (Zhou et al. §2.3: ±1 s).
    pub pairing_window: Duration,
    /// A flow silent for this long is finished and leaves memory (a later packet on the same
    /// 5-tuple starts a new flow).
    pub idle_timeout: Duration,
    /// User-supplied channel mapping: (substring of the flow's URL path, RTMP stream name or
    /// "client_ip:client_port", channel name). First match wins.
    pub channel_map: Vec<(String, String)>,
    /// Parse HTTP, FLV and RTMP on the reassembled byte streams (video awareness).
    pub app_parse: bool,
    /// Keep per-burst and per-retransmission rows (they can be large on big captures).
    pub keep_bursts: bool,
}

impl Default for AnalyzeOptions {
    fn default() -> Self {
        AnalyzeOptions {
            tau: 2.0,
            stall_floor: Duration::ZERO,
            server_ports: Vec::new(),
            server_ips: Vec::new(),
            threads: 0,
            rto_style: RtoStyle::Rfc6298,
            min_rto: Duration::from_millis(200),
            initial_rto: Duration::from_secs(1),
            max_rto: Duration::from_secs(120),
            burst_gap: Duration::from_millis(1),
            burst_min_packets: 4,
            timeout_reordering: Duration::from_millis(200),
            pairing_window: Duration::from_secs(1),
            idle_timeout: Duration::from_secs(300),
            channel_map: Vec::new(),
            app_parse: true,
            keep_bursts: true,
        }
    }
}

impl AnalyzeOptions {
    pub fn validate(&self) -> Result<(), TraceError> {
        if !(self.tau > 0.0 && self.tau.is_finite()) {
            return Err(TraceError::Option(format!("tau must be > 0, got {}", self.tau)));
        }
        if self.burst_min_packets < 2 {
            return Err(TraceError::Option("burst_min_packets must be >= 2".into()));
        }
        for ip in &self.server_ips {
            if decode::parse_addr(ip).is_none() {
                return Err(TraceError::Option(format!("not an IP address: {ip}")));
            }
        }
        Ok(())
    }
}

/// Progress of a running analysis, reported about every 64 MiB of input.
#[derive(Clone, Copy, Debug, Default)]
pub struct Progress {
    pub file_index: usize,
    pub files: usize,
    pub bytes_done: u64,
    /// Total bytes of the current file when known (uncompressed files).
    pub bytes_total: Option<u64>,
    pub packets: u64,
}

/// Analyze capture files (read one after the other, as one capture: flows may span files).
pub fn analyze_paths(paths: &[PathBuf], opts: &AnalyzeOptions) -> Result<Analysis, TraceError> {
    analyze_paths_with_progress(paths, opts, &|_| {})
}

/// [`analyze_paths`] with a progress callback (called from the reading thread).
pub fn analyze_paths_with_progress(
    paths: &[PathBuf],
    opts: &AnalyzeOptions,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Analysis, TraceError> {
    opts.validate()?;
    let mut readers = Vec::with_capacity(paths.len());
    for p in paths {
        readers.push(reader::open_path(p)?);
    }
    shard::run(readers, opts, progress)
}

/// Analyze a capture held in memory (pcap or pcapng, possibly gzip/zstd-compressed).
pub fn analyze_bytes(data: &[u8], opts: &AnalyzeOptions) -> Result<Analysis, TraceError> {
    opts.validate()?;
    let r = reader::Reader::from_slice(data)?;
    shard::run(vec![r], opts, &|_| {})
}
