//! Per-flow TCP state, reconstructed from the packets seen at the server (seed 000's vantage
//! point: "packet-level traces collected at streaming servers").
//!
//! Vantage point. Users bring captures from anywhere, so each flow's handshake says where it was
//! taken: the SYN→SYN+ACK time at the capture point is the round trip to the server, the
//! SYN+ACK→ACK time the round trip to the client. Near zero on one side means the capture sat
//! there (`Vantage::Server`/`Client`), both positive means mid-path. The path RTT is the whole
//! SYN→ACK time (tshark's `tcp.analysis.initial_rtt`: from the most recent SYN), except at the
//! server where the seed's 3WHS RTT (SYN+ACK→ACK) is kept. Away from the server, a data→ACK
//! sample covers only the client side of the path, so the server-side half measured in the
//! handshake is added to every sample: the estimator, thresholds and Fig. 5 ratios then describe
//! the path as the server's TCP saw it. Deviation: that half is taken as constant for the
//! flow's life (queueing between the capture point and the server after the handshake is not
//! seen). Flows caught without a handshake have `Vantage::Unknown` and are treated as
//! server-side (a warning says how many).
//!
//! A flow is a 5-tuple. Its server side comes from `--server-port/--server-ip`, else from the
//! handshake (the side that sent SYN+ACK), else — for flows caught mid-stream — from a list of
//! well-known video ports, else the lower port. Direction 0 is client→server (upload data),
//! direction 1 server→client (download data). Whether the flow *is* an upload or a download
//! flow is decided at its end by which side sent more payload bytes.
//!
//! For the server as a sender the flow keeps what the server's TCP keeps: SND.UNA, SND.MAX, the
//! outstanding segments (a ring that grows to the largest window once and is then reused),
//! SACK/lost/retransmitted marks for in_flight (seed Eq. 1, Linux `tcp_packets_in_flight`:
//! packets_out + retrans_out − (sacked_out + lost_out), here in bytes), duplicate ACKs, fast
//! recovery and RTO loss episodes, and the RFC 6298 estimator (`rtt`). For the server as a
//! receiver it keeps RCV.NXT, the highest sequence received and up to eight out-of-order ranges
//! (the holes that make reordering stalls and the reordering rate of seed §2.1).
//!
//! Sequence numbers are unwrapped to 64-bit stream offsets (offset 0 = first byte after the
//! SYN, or the first byte seen for flows without a handshake) relative to the current send
//! point, so flows longer than 4 GiB work.
//!
//! Every packet first goes through the stall detector (`stall`): the gap since the flow's
//! previous packet is compared with the upload threshold (3WHS RTT as SRTT) and the download
//! threshold (emulated SRTT/RTO); the gap is classified after the packet is processed, with
//! the state captured before it.

use std::collections::VecDeque;
use std::time::Duration;

use crate::app::{AppState, HttpTx, Proto};
use crate::burst::{Burst, BurstTracker};
use crate::decode::{flags, TcpPacket};
use crate::flv::{FrameAgg, FrameType};
use crate::rack_inference::{self, RackEvidence, RackOnlyResend};
use crate::rack_timer::{DeliveryHistory, ResendMoment, RACK_SLACK_NS};
use crate::retrans::{self, RetransKind, TimeoutEvidence, TimeoutType};
use crate::rto_window::RtoWindowCheck;
use crate::rtt::{RttEstimator, TsvalClock};
use crate::stall::{self, GapContext, StallKind};
use crate::tlp::{ProbeTracker, ResendContext};
use crate::tlp_inference::{self, AmbiguousResend, TlpEvidence};
use crate::AnalyzeOptions;

/// Ports assumed to be servers for flows without a handshake (HTTP, HTTPS, RTMP, HTTP-alt,
/// RTSP, iperf3).
const WELL_KNOWN: [u16; 8] = [80, 443, 1935, 8080, 8000, 8443, 554, 5201];

/// Buckets of in_flight (bytes) for RTT/RTT_3WHS (seed Fig. 5): upper edges in KiB.
/// Slack on top of a tenth of the persist interval when asking whether a persist timer armed at a gap's
/// start could have ended it (`Flow::small_window_may_have_held_data`): timer granularity and
/// the capture's distance from the server (Linux timers run on jiffies, up to 4 ms at HZ=250).
const PERSIST_SLACK_NS: u64 = 10_000_000;

pub const INFLIGHT_EDGES_KB: [u64; 7] = [4, 8, 16, 32, 64, 128, u64::MAX];

/// Canonical flow key: the lower (address, port) first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey {
    pub a: u128,
    pub pa: u16,
    pub b: u128,
    pub pb: u16,
}

impl FlowKey {
    #[inline]
    pub fn of(p: &TcpPacket<'_>) -> FlowKey {
        if (p.src, p.sport) <= (p.dst, p.dport) {
            FlowKey { a: p.src, pa: p.sport, b: p.dst, pb: p.dport }
        } else {
            FlowKey { a: p.dst, pa: p.dport, b: p.src, pb: p.sport }
        }
    }
}

/// [`stall::threshold`] for the flow state, which keeps times as integer nanoseconds.
#[inline]
fn stall_threshold_ns(tau: f64, srtt_ns: Option<u64>, rto_ns: u64) -> u64 {
    stall::threshold(tau, srtt_ns.map(Duration::from_nanos), Duration::from_nanos(rto_ns)).as_nanos() as u64
}

/// 32-bit sequence number → 64-bit stream offset, nearest to a reference offset (the model's
/// `unwrap_seq`, shared with the simulator's endpoint).
#[inline]
fn unwrap(seq: u32, base: u32, reference: u64) -> i64 {
    tcpvideo_model::seq::unwrap_seq(seq, base, reference)
}

#[derive(Clone, Copy, Debug)]
struct Seg {
    start: u64,
    end: u64,
    first_tx: u64,
    /// When these bytes were last sent (first transmission or latest retransmission).
    last_tx: u64,
    ordinal: u64,
    retrans: u16,
    last_kind: Option<RetransKind>,
    sacked: bool,
    lost: bool,
    rtx_out: bool,
}

/// A timeout retransmission waiting for the ACK that tells what really happened.
#[derive(Clone, Copy, Debug)]
struct PendingTimeout {
    rec: usize,
    start: u64,
    end: u64,
    ordinal: u64,
    t_rtx: u64,
    rtx_tsval: Option<u32>,
    ev: TimeoutEvidence,
    done: bool,
    /// The same bytes were re-sent again after this timeout retransmission.
    resent_again: bool,
}

/// One retransmission (output row before flow ids are assigned).
#[derive(Clone, Debug)]
pub struct RetransOut {
    pub ts_ns: u64,
    pub seq: u64,
    pub len: u32,
    pub kind: RetransKind,
    pub prior: u16,
    pub frame: FrameType,
    pub timeout_type: Option<TimeoutType>,
    pub evidence: Option<TimeoutEvidence>,
}

/// One stall candidate.
#[derive(Clone, Debug)]
pub struct StallOut {
    pub start_ns: u64,
    pub end_ns: u64,
    pub thr_up_ns: u64,
    pub thr_down_ns: u64,
    pub kind_up: StallKind,
    pub kind_down: StallKind,
    /// Index into the retransmission rows when the gap ended with a timeout retransmission.
    pub retrans: Option<usize>,
    pub frame: FrameType,
    pub in_flight: u64,
    pub end_from_server: bool,
}

/// Per frame type counters of data packets (seed Table 4 loss rate, Table 5).
#[derive(Clone, Copy, Debug, Default)]
pub struct FramePkts {
    pub packets: u64,
    pub retrans: u64,
    pub timeouts: u64,
}

/// Everything a finished flow leaves behind.
#[derive(Clone, Debug)]
pub struct FlowOut {
    pub key: FlowKey,
    pub client: (u128, u16),
    pub server: (u128, u16),
    pub v6: bool,
    pub server_by: &'static str,
    pub handshake: bool,
    pub start_ns: u64,
    pub end_ns: u64,
    pub fct_start_ns: u64,
    pub download: bool,
    pub fct_end_ns: u64,
    pub bytes_up: u64,
    pub bytes_down: u64,
    /// Client bytes delivered in order to the server (RCV.NXT).
    pub delivered_up: u64,
    pub wire_bytes_up: u64,
    pub wire_bytes_down: u64,
    pub pkts_up: u64,
    pub pkts_down: u64,
    pub data_pkts_up: u64,
    pub data_pkts_down: u64,
    pub first_data_ns: Option<u64>,
    pub last_data_ns: Option<u64>,
    pub acked_bytes: u64,
    pub last_ack_ns: Option<u64>,
    pub rtt_3whs_ns: Option<u64>,
    /// tshark's initial RTT: the most recent SYN to the ACK completing the handshake.
    pub rtt_initial_ns: Option<u64>,
    /// SYN → SYN+ACK at the capture point: the round trip between the capture point and the server.
    pub rtt_server_half_ns: Option<u64>,
    /// SYN+ACK → ACK at the capture point: the round trip between the capture point and the client.
    pub rtt_client_half_ns: Option<u64>,
    pub vantage: Vantage,
    pub rtt_samples: u64,
    pub rtt_min_ns: Option<u64>,
    pub rtt_mean_ns: Option<u64>,
    pub srtt_end_ns: Option<u64>,
    pub rto_end_ns: u64,
    pub mss: u32,
    pub retrans_pkts: u64,
    pub retrans_bytes: u64,
    pub fast_retrans: u64,
    pub timeout_retrans: u64,
    pub recovery_retrans: u64,
    pub other_retrans: u64,
    pub tlp_retrans: u64,
    pub dup_pkts_up: u64,
    pub reordered_up: u64,
    pub timeout_reorderings: u64,
    pub zero_windows: u64,
    pub keepalives: u64,
    pub max_in_flight: u64,
    pub syn_retrans: u32,
    pub closed_by: &'static str,
    pub stalls: Vec<StallOut>,
    pub retrans: Vec<RetransOut>,
    pub bursts: Vec<(Burst, bool)>,
    pub bursts_up: Vec<(Burst, bool)>,
    pub http: Vec<HttpTx>,
    pub proto: Proto,
    pub channel: Option<String>,
    pub name: Option<String>,
    pub role: Option<String>,
    /// Download-direction packets per frame type.
    pub frame_pkts: [FramePkts; 5],
    pub frame_agg: [FrameAgg; 5],
    pub timeout_types_by_frame: [[u64; 6]; 5],
    /// (count, sum of RTT/RTT_3WHS, sum of RTT ns) per in_flight bucket.
    pub rtt_buckets: [(u64, f64, u64); 7],
    /// Re-sends that say whether the server probes (tlp_inference.rs).
    pub tlp_evidence: TlpEvidence,
    /// Single-segment re-sends decided at the end of the analysis (tlp_inference.rs).
    pub ambiguous: Vec<AmbiguousResend>,
    /// Re-sends that say whether the server runs RACK (rack_inference.rs).
    pub rack_evidence: RackEvidence,
    /// Timer-sent `fast` re-sends with < 3 SACKs, decided at the end (rack_inference.rs).
    pub rack_only: Vec<RackOnlyResend>,
}

/// State of the server as a sender (direction 1).
#[derive(Debug, Default)]
struct Sender {
    base: Option<u32>,
    snd_una: u64,
    snd_max: u64,
    segs: VecDeque<Seg>,
    sacked_out: u64,
    lost_out: u64,
    retrans_out: u64,
    dupacks: u32,
    last_win: u64,
    recovery_point: Option<u64>,
    loss_point: Option<u64>,
    ordinals: u64,
    last_advance_ns: u64,
    full_ack_ns: Option<u64>,
    fin_sent: bool,
}

impl Sender {
    fn in_flight(&self) -> u64 {
        ((self.snd_max - self.snd_una) + self.retrans_out).saturating_sub(self.sacked_out + self.lost_out)
    }
    fn remove_front(&mut self) -> Option<Seg> {
        let s = self.segs.pop_front()?;
        let len = s.end - s.start;
        if s.sacked {
            self.sacked_out -= len.min(self.sacked_out);
        }
        if s.lost {
            self.lost_out -= len.min(self.lost_out);
        }
        if s.rtx_out {
            self.retrans_out -= len.min(self.retrans_out);
        }
        Some(s)
    }
    /// Index of the first segment with end > off.
    fn seg_index(&self, off: u64) -> usize {
        self.segs.partition_point(|s| s.end <= off)
    }
    /// Make `off` a segment boundary (splitting the segment that spans it, history copied to
    /// both parts), so that retransmission history is kept per byte range even when the sender
    /// re-segments (issue 12: a 1448-byte retransmission of 1000-byte originals must not make
    /// the next one look like a second retransmission of the same bytes).
    fn split_at(&mut self, off: u64) {
        let i = self.seg_index(off);
        if let Some(s) = self.segs.get(i).copied() {
            if s.start < off && off < s.end {
                self.segs[i].end = off;
                self.segs.insert(i + 1, Seg { start: off, ..s });
            }
        }
    }
}

/// State of the server as a receiver (direction 0).
#[derive(Debug, Default)]
struct Receiver {
    base: Option<u32>,
    rcv_nxt: u64,
    max_end: u64,
    max_end_ns: u64,
    ooo: [(u64, u64); 8],
    n_ooo: usize,
    hole_since: Option<u64>,
    fin_sent: bool,
}

impl Receiver {
    fn has_hole(&self) -> bool {
        self.n_ooo > 0
    }
    /// Record [s, e) as received; returns (disordered, duplicate).
    fn receive(&mut self, s: u64, e: u64, now: u64) -> (bool, bool) {
        let disordered = s < self.max_end;
        let duplicate = e <= self.rcv_nxt;
        if e > self.max_end {
            self.max_end = e;
            self.max_end_ns = now;
        }
        if s <= self.rcv_nxt {
            if e > self.rcv_nxt {
                self.rcv_nxt = e;
            }
        } else {
            // Out-of-order range above RCV.NXT: remember it (merging; drop the highest when full).
            if self.n_ooo == 0 {
                self.hole_since = Some(now);
            }
            let mut merged = false;
            for r in &mut self.ooo[..self.n_ooo] {
                if s <= r.1 && e >= r.0 {
                    r.0 = r.0.min(s);
                    r.1 = r.1.max(e);
                    merged = true;
                    break;
                }
            }
            if !merged {
                if self.n_ooo < self.ooo.len() {
                    self.ooo[self.n_ooo] = (s, e);
                    self.n_ooo += 1;
                } else {
                    self.ooo[self.n_ooo - 1].1 = self.ooo[self.n_ooo - 1].1.max(e);
                }
            }
        }
        // Advance RCV.NXT through buffered ranges.
        loop {
            let mut progressed = false;
            let mut i = 0;
            while i < self.n_ooo {
                let r = self.ooo[i];
                if r.0 <= self.rcv_nxt {
                    self.rcv_nxt = self.rcv_nxt.max(r.1);
                    self.ooo[i] = self.ooo[self.n_ooo - 1];
                    self.n_ooo -= 1;
                    progressed = true;
                } else {
                    i += 1;
                }
            }
            if !progressed {
                break;
            }
        }
        if self.n_ooo == 0 {
            self.hole_since = None;
        }
        (disordered, duplicate)
    }
}

/// Where on the path the capture was taken, from the handshake's timing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vantage {
    Server,
    Client,
    MidPath,
    /// No complete handshake to tell.
    Unknown,
}

impl Vantage {
    pub fn as_str(self) -> &'static str {
        match self {
            Vantage::Server => "server",
            Vantage::Client => "client",
            Vantage::MidPath => "mid_path",
            Vantage::Unknown => "unknown",
        }
    }

    /// From the two halves of the handshake at the capture point: a side whose half is under
    /// `NEAR_SHARE` of the whole is where the capture sat (its half is just that host's SYN or
    /// SYN+ACK processing time).
    pub fn from_halves(server_half_ns: u64, client_half_ns: u64) -> Vantage {
        /// A half below this share of the SYN→ACK time is processing, not path.
        const NEAR_SHARE: f64 = 0.15;
        let total = (server_half_ns + client_half_ns) as f64;
        if total <= 0.0 {
            return Vantage::Unknown;
        }
        let share = server_half_ns as f64 / total;
        if share < NEAR_SHARE {
            Vantage::Server
        } else if share > 1.0 - NEAR_SHARE {
            Vantage::Client
        } else {
            Vantage::MidPath
        }
    }
}

/// Which side of the flow is the server, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerBy {
    Option,
    Syn,
    Port,
}

/// Live state of one flow.
pub struct Flow {
    pub key: FlowKey,
    client: (u128, u16),
    server: (u128, u16),
    v6: bool,
    server_by: ServerBy,
    start_ns: u64,
    pub last_ns: u64,
    syn_ns: Option<u64>,
    /// The most recent SYN (tshark's `ts_mru_syn`), and the most recent one before the first SYN+ACK.
    last_syn_ns: Option<u64>,
    syn_before_synack_ns: Option<u64>,
    last_synack_ns: Option<u64>,
    handshake_done: bool,
    rtt_initial: Option<u64>,
    server_half: Option<u64>,
    client_half: Option<u64>,
    vantage: Vantage,
    /// Added to every data→ACK sample: the capture point → server → capture point time that a
    /// sample taken away from the server does not see (0 at the server).
    sample_offset_ns: u64,
    client_isn: Option<u32>,
    synack_ns: Option<u64>,
    synack_count: u32,
    syn_count: u32,
    rtt_3whs: Option<u64>,
    client_ws: Option<u8>,
    server_ws: Option<u8>,
    mss: u32,
    snd: Sender,
    rcv: Receiver,
    est: RttEstimator,
    est3: RttEstimator,
    tsclock: TsvalClock,
    last_client_ns: u64,
    last_client_loss_signal: bool,
    client_ack_since: u64,
    rwnd_zero: bool,
    /// The client's last window was below one MSS (but maybe not zero).
    rwnd_small: bool,
    /// The client's last advertised window (scaled, bytes).
    rwnd_bytes: u64,
    bursts: [BurstTracker; 2],
    pending: Vec<PendingTimeout>,
    /// RACK.xmit_ts advances (rack_timer.rs) and the tail-loss-probe episode (tlp.rs).
    rack: DeliveryHistory,
    tlp: ProbeTracker,
    /// The flight after the last single-segment timer re-send, against an RTO's window
    /// (rto_window.rs).
    rto_window: Option<RtoWindowCheck>,
    /// Last server data transmission (new or re-sent).
    last_data_tx_ns: u64,
    app: Option<Box<AppState>>,
    pub closed: bool,
    closed_by: &'static str,
    /// Stall thresholds (download, upload), recomputed only when the estimators change.
    thr: (u64, u64),
    tau: f64,
    /// AnalyzeOptions::stall_floor in ns.
    floor_ns: u64,
    out: FlowOut,
}

impl Flow {
    /// A new flow whose first packet is `p`.
    pub fn new(p: &TcpPacket<'_>, now: u64, opts: &AnalyzeOptions, server_ips: &[u128]) -> Flow {
        let key = FlowKey::of(p);
        let src = (p.src, p.sport);
        let dst = (p.dst, p.dport);
        let syn_only = p.flags & (flags::SYN | flags::ACK) == flags::SYN;
        let synack = p.flags & (flags::SYN | flags::ACK) == (flags::SYN | flags::ACK);
        let is_server = |e: (u128, u16)| opts.server_ports.contains(&e.1) || server_ips.contains(&e.0);
        let (server, by) = if is_server(src) && !is_server(dst) {
            (src, ServerBy::Option)
        } else if is_server(dst) && !is_server(src) {
            (dst, ServerBy::Option)
        } else if syn_only {
            (dst, ServerBy::Syn)
        } else if synack {
            (src, ServerBy::Syn)
        } else if WELL_KNOWN.contains(&p.sport) && !WELL_KNOWN.contains(&p.dport) {
            (src, ServerBy::Port)
        } else if WELL_KNOWN.contains(&p.dport) && !WELL_KNOWN.contains(&p.sport) {
            (dst, ServerBy::Port)
        } else if p.sport < p.dport {
            (src, ServerBy::Port)
        } else {
            (dst, ServerBy::Port)
        };
        let client = if server == src { dst } else { src };
        let est = RttEstimator::new(
            opts.rto_style,
            opts.min_rto.as_nanos() as u64,
            opts.initial_rto.as_nanos() as u64,
            opts.max_rto.as_nanos() as u64,
        );
        let mut f = Flow {
            key,
            client,
            server,
            v6: p.v6,
            server_by: by,
            start_ns: now,
            last_ns: now,
            syn_ns: None,
            last_syn_ns: None,
            syn_before_synack_ns: None,
            last_synack_ns: None,
            handshake_done: false,
            rtt_initial: None,
            server_half: None,
            client_half: None,
            vantage: Vantage::Unknown,
            sample_offset_ns: 0,
            client_isn: None,
            synack_ns: None,
            synack_count: 0,
            syn_count: 0,
            rtt_3whs: None,
            client_ws: None,
            server_ws: None,
            mss: 0,
            snd: Sender::default(),
            rcv: Receiver::default(),
            est,
            est3: est,
            tsclock: TsvalClock::default(),
            last_client_ns: 0,
            last_client_loss_signal: false,
            client_ack_since: 0,
            rwnd_zero: false,
            rwnd_small: false,
            rwnd_bytes: 0,
            bursts: [BurstTracker::default(); 2],
            pending: Vec::new(),
            rack: DeliveryHistory::default(),
            tlp: ProbeTracker::default(),
            rto_window: None,
            last_data_tx_ns: 0,
            app: if opts.app_parse { Some(Box::default()) } else { None },
            closed: false,
            closed_by: "",
            thr: (0, 0),
            tau: opts.tau,
            floor_ns: opts.stall_floor.as_nanos() as u64,
            out: FlowOut::empty(key),
        };
        f.refresh_thresholds();
        f
    }

    /// min(τ·SRTT, RTO) for the download view (emulated estimator) and the upload view (3WHS
    /// RTT as SRTT), cached: they change only with RTT samples and timeouts.
    fn refresh_thresholds(&mut self) {
        self.thr = (
            stall_threshold_ns(self.tau, self.est.srtt_ns, self.est.rto_ns()).max(self.floor_ns),
            stall_threshold_ns(self.tau, self.rtt_3whs, self.est3.rto_ns()).max(self.floor_ns),
        );
    }

    /// Is `p` a new connection reusing this 5-tuple (a SYN with a different ISN after data or
    /// close)?
    pub fn is_reuse(&self, p: &TcpPacket<'_>) -> bool {
        p.flags & (flags::SYN | flags::ACK) == flags::SYN
            && self.client_isn != Some(p.seq)
            && (self.closed || self.out.pkts_up + self.out.pkts_down > 4 || self.client_isn.is_some())
    }

    /// Process one packet.
    pub fn on_packet(&mut self, p: &TcpPacket<'_>, now: u64, opts: &AnalyzeOptions) {
        let now = now.max(self.last_ns); // captures can step back slightly across interfaces
        let from_server = (p.src, p.sport) == self.server;
        // --- the gap before this packet, with the state as it was ---
        let gap = now - self.last_ns;
        let first = self.out.pkts_up + self.out.pkts_down == 0;
        let (thr_down, thr_up) = self.thr;
        let is_gap = !first && gap > thr_down.min(thr_up);
        let mut ctx = GapContext {
            in_handshake: (self.syn_count > 0 || self.synack_count > 0) && !self.handshake_done,
            server_outstanding: self.snd.snd_una < self.snd.snd_max,
            client_rwnd_zero: self.rwnd_zero || (self.rwnd_small && self.small_window_may_have_held_data(p, from_server, gap)),
            server_has_hole: self.rcv.has_hole(),
            end_is_fin_or_rst: p.flags & (flags::FIN | flags::RST) != 0,
            ..Default::default()
        };
        let in_flight_before = self.snd.in_flight();
        let retrans_before = self.out.retrans.len();
        let mut frame = FrameType::Unknown;

        if from_server {
            self.out.pkts_down += 1;
            self.out.wire_bytes_down += p.payload_len as u64;
            self.server_packet(p, now, opts, &mut ctx, &mut frame);
        } else {
            self.out.pkts_up += 1;
            self.out.wire_bytes_up += p.payload_len as u64;
            self.client_packet(p, now, opts, &mut ctx, &mut frame);
        }
        if p.flags & flags::RST != 0 {
            self.closed = true;
            self.closed_by = "rst";
        }
        if self.snd.fin_sent && self.rcv.fin_sent && !self.closed {
            self.closed = true;
            self.closed_by = "fin";
        }

        if is_gap {
            if self.out.retrans.len() > retrans_before {
                ctx.end_is_timeout_retrans = self.out.retrans[retrans_before].kind == RetransKind::Timeout;
            }
            let retrans = ctx.end_is_timeout_retrans.then_some(retrans_before);
            self.out.stalls.push(StallOut {
                start_ns: self.last_ns,
                end_ns: now,
                thr_up_ns: thr_up,
                thr_down_ns: thr_down,
                kind_up: stall::classify_upload(&ctx),
                kind_down: stall::classify_download(&ctx),
                retrans,
                frame,
                in_flight: in_flight_before,
                end_from_server: from_server,
            });
            // A single-segment re-send ending the gap: its class either way (tlp_inference.rs).
            if let Some(a) = self.out.ambiguous.last_mut().filter(|a| a.rec == retrans_before) {
                let if_probe = stall::classify_download(&GapContext { end_is_timeout_retrans: false, ..ctx });
                let if_rto = stall::classify_download(&GapContext { end_is_timeout_retrans: true, ..ctx });
                a.stall = Some((self.out.stalls.len() - 1, if_probe, if_rto));
            }
            if let Some(a) = self.out.rack_only.last_mut().filter(|a| a.rec == retrans_before) {
                let if_fast = self.out.stalls.last().map_or(StallKind::PacketDelay, |s| s.kind_down);
                let if_rto = stall::classify_download(&GapContext { end_is_timeout_retrans: true, ..ctx });
                a.stall = Some((self.out.stalls.len() - 1, if_fast, if_rto));
            }
        }
        self.last_ns = now;
    }

    /// Could a non-zero window below one segment, the client's last, have held server data back
    /// for the whole gap ending with `p` (stall.rs, zero rwnd rule, the sub-segment case)?
    /// Linux sends data that fits the window at once (`tcp_snd_wnd_test`), and data that does not
    /// waits for the persist timer, which fills the window (`tcp_write_wakeup`). That timer is
    /// armed when the window-shrinking ACK arrives if data already waits (`tcp_ack_probe`), else
    /// when data comes (`tcp_check_probe_timer`), and fires max(RTO, 200 ms) << backoff later
    /// (`tcp_probe0_when`; `RttEstimator::persist_interval_ns`, the longer of the RFC 6298 and
    /// Linux RTO formulas). So a gap that ends with new server data fitting the window, or that
    /// lasts clearly longer than a persist timer armed at its start (whatever ends it: the late
    /// window-filling segment, the viewer's window update, a keep-alive), began with nothing
    /// waiting: the server lacked data, not window (resource constraint — what the simulator's
    /// truth says of such gaps, issue 16). A shorter gap (a window update or a window-filling
    /// segment within the persist time) keeps TAPO's `rwnd < MSS` rule.
    fn small_window_may_have_held_data(&self, p: &TcpPacket<'_>, from_server: bool, gap_ns: u64) -> bool {
        if self.snd.snd_una < self.snd.snd_max {
            return true;
        }
        if from_server && p.payload_len > 0 && (p.payload_len as u64) < self.rwnd_bytes {
            return false;
        }
        // The analyzer's RTT estimate is the server's seen from the capture: 10 % and 10 ms of
        // slack (on the study's captures, data that waited ends the gap within 5 ms of it);
        // away from the server the ACK's way to it and the reply's back add the server-side half
        // of the RTT (`sample_offset_ns`, 0 at the server).
        let persist_ns = self.est.persist_interval_ns();
        gap_ns <= persist_ns + persist_ns / 10 + PERSIST_SLACK_NS + self.sample_offset_ns
    }

    fn app_feed(&mut self, dir: usize, off: i64, p: &TcpPacket<'_>, now: u64) -> FrameType {
        let Some(app) = self.app.as_deref_mut() else {
            return FrameType::Unknown;
        };
        if off < 0 {
            return FrameType::Unknown;
        }
        if app.idle() {
            return app.frame_index(dir).at(off as u64);
        }
        let off = off as u64;
        let complete = p.payload.len() as u32 >= p.payload_len;
        app.feed(dir, off, p.payload, complete, now);
        app.frame_index(dir).at(off)
    }

    fn server_packet(&mut self, p: &TcpPacket<'_>, now: u64, opts: &AnalyzeOptions, ctx: &mut GapContext, frame: &mut FrameType) {
        let syn = p.flags & flags::SYN != 0;
        if let Some((tsval, _)) = p.opts.ts {
            self.tsclock.on_send(tsval, now);
        }
        if syn {
            self.snd.base = Some(p.seq.wrapping_add(1));
            self.server_ws = p.opts.wscale;
            if p.opts.mss > 0 {
                self.mss = self.mss.max(p.opts.mss as u32);
            }
            if p.flags & flags::ACK != 0 {
                self.synack_count += 1;
                if self.synack_ns.is_none() {
                    self.synack_ns = Some(now);
                    self.syn_before_synack_ns = self.last_syn_ns;
                }
                self.last_synack_ns = Some(now);
            }
            return;
        }
        let base = *self.snd.base.get_or_insert(p.seq);
        let rel = unwrap(p.seq, base, self.snd.snd_max);
        let len = p.payload_len as u64;
        // Keep-alive (RFC 9293 §3.8.4) or zero-window probe: SEG.SEQ = SND.NXT − 1, ≤ 1 byte,
        // nothing outstanding.
        if len <= 1 && rel == self.snd.snd_max as i64 - 1 && self.snd.snd_una == self.snd.snd_max && p.flags & flags::FIN == 0 {
            ctx.end_is_keepalive = true;
            self.out.keepalives += 1;
            return;
        }
        if p.flags & flags::FIN != 0 {
            self.snd.fin_sent = true;
        }
        if len == 0 || rel < 0 {
            return;
        }
        let start = rel as u64;
        let end = start + len;
        self.out.data_pkts_down += 1;
        self.out.first_data_ns.get_or_insert(now);
        self.mss = self.mss.max(len as u32);
        let f = self.app_feed(1, rel, p, now);
        *frame = f;
        self.out.frame_pkts[f.index()].packets += 1;
        if start >= self.snd.snd_max {
            // New data.
            self.snd.snd_max = end;
            let ordinal = self.snd.ordinals;
            self.snd.ordinals += 1;
            let in_flight = self.snd.in_flight();
            self.out.max_in_flight = self.out.max_in_flight.max(in_flight);
            self.last_data_tx_ns = now;
            self.rack.on_new_data(now);
            if let Some(w) = self.rto_window.as_mut() {
                if let Some(cue) = w.on_new_data(start, end) {
                    self.out.ambiguous[w.ambiguous].window = Some(cue);
                    self.rto_window = None;
                }
            }
            self.snd.segs.push_back(Seg {
                start,
                end,
                first_tx: now,
                last_tx: now,
                ordinal,
                retrans: 0,
                last_kind: None,
                sacked: false,
                lost: false,
                rtx_out: false,
            });
        } else {
            self.retransmission(p, start, end.min(self.snd.snd_max), now, ctx, f);
            if end > self.snd.snd_max {
                // Retransmission that also carries new data (repacketisation).
                let ordinal = self.snd.ordinals;
                self.snd.ordinals += 1;
                self.snd.segs.push_back(Seg {
                    start: self.snd.snd_max,
                    end,
                    first_tx: now,
                    last_tx: now,
                    ordinal,
                    retrans: 0,
                    last_kind: None,
                    sacked: false,
                    lost: false,
                    rtx_out: false,
                });
                self.snd.snd_max = end;
            }
        }
        if let Some(b) = self.bursts[1].on_data(now, p.payload_len, start, end, f, opts.burst_gap.as_nanos() as u64, opts.burst_min_packets)
        {
            self.out.bursts.push((b, false));
        }
    }

    fn retransmission(&mut self, p: &TcpPacket<'_>, start: u64, end: u64, now: u64, ctx: &mut GapContext, f: FrameType) {
        // Another re-send starts another episode: the window bound no longer holds (rto_window.rs).
        self.rto_window = None;
        let since_client = now.saturating_sub(self.last_client_ns);
        let ack_clocked = self.out.pkts_up > 0 && since_client <= retrans::ACK_CLOCK_NS + self.sample_offset_ns;
        let loss_evidence = self.last_client_loss_signal || self.snd.recovery_point.is_some();
        // RACK (RFC 8985 §6.2) retransmits on its reordering timer, within the reordering window
        // (≤ SRTT) after the SACK that showed the loss: still loss detection by ACKs, not a
        // timeout (retrans.rs).
        // ... but a retransmission *sent before* (its copy lost again) is found lost by RACK once a
        // SACK for data sent after that copy arrives, about one RTT plus the reordering window
        // after it. Re-sent more than 3·SRTT after its last copy while loss signals kept coming,
        // it waited for the retransmission timer (issue 16: the simulator's double
        // retransmissions behind a stream of SACKs).
        let seg = self.snd.segs.get(self.snd.seg_index(start)).filter(|s| s.start <= start && start < s.end).copied();
        let moment = ResendMoment { now_ns: now, ack_clocked, previous_departure_ns: self.last_data_tx_ns };
        let rack_timer = seg.zip(self.est.srtt_ns).is_some_and(|(s, srtt)| self.rack.rack_could_fire(s.last_tx, srtt, moment));
        // Only RACK finds a lost *retransmission* from ACKs (RFC 8985 §3.3.2; dupacks count for
        // the hole, not for its copy). Outside a post-RTO episode, a re-send of bytes already
        // re-sent that RACK cannot explain was sent by the timer, however close an ACK came
        // before it (issue 16: an RTO 0.7 ms after a SACK, in the study's tlp_off variant).
        let resent_before = seg.is_some_and(|s| s.retrans > 0);
        // ... unless the timer cannot have been due: in fast recovery RACK keeps marking a lost
        // retransmission at every ACK that reports later-sent data, and PRR releases the re-send
        // at a later ACK (issue 16 session 16, per_type_connections port 32803 at 14.19 s: marked
        // at the SACK 57 ms before, sent at the next ACK, 190 ms after its last copy).
        let ack_clocked =
            ack_clocked && !(resent_before && self.snd.loss_point.is_none() && !rack_timer && self.retransmission_timer_could_be_due(now));
        let ack_clocked = ack_clocked
            && !retrans::timer_beside_a_signal_free_ack(retrans::QuietResend {
                loss_evidence,
                in_loss_episode: self.snd.loss_point.is_some(),
                loss_signals_outstanding: self.snd.dupacks > 0 || self.snd.sacked_out > 0,
                age_ns: seg.map_or(0, |s| now.saturating_sub(s.last_tx)),
                rto_ns: self.est.rto_ns(),
            });
        let kind = if loss_evidence && (ack_clocked || rack_timer) {
            RetransKind::Fast
        } else if ack_clocked && self.snd.loss_point.is_some() {
            RetransKind::Recovery
        } else if !ack_clocked && self.held_in_fast_recovery(now) {
            RetransKind::Fast
        } else if !ack_clocked {
            let probe = ResendContext {
                open_state: self.snd.recovery_point.is_none()
                    && self.snd.loss_point.is_none()
                    && self.snd.sacked_out == 0
                    && self.snd.dupacks == 0,
                covers_snd_max: end >= self.snd.snd_max,
                at_snd_una: start <= self.snd.snd_una,
                since_last_event_ns: now.saturating_sub(self.last_data_tx_ns.max(self.last_client_ns)),
                rto_ns: self.est.rto_ns(),
            };
            let silence = probe.since_last_event_ns;
            let kind = if self.tlp.is_probe(&probe) { RetransKind::Tlp } else { RetransKind::Timeout };
            self.tlp_hooks(&probe, kind, start, now, silence);
            kind
        } else {
            RetransKind::Other
        };
        let rack_only = self.rack_hooks(kind, seg, start, now, since_client);
        self.out.retrans_pkts += 1;
        self.out.retrans_bytes += end - start;
        self.out.frame_pkts[f.index()].retrans += 1;
        // The seed's Eq. 1 `packets_out` at this instant (before the re-send's own split): every
        // segment from SND.UNA to SND.NXT, SACKed ones included.
        let packets_out = self.snd.segs.len() as u32;
        self.snd.split_at(start);
        self.snd.split_at(end);
        let i0 = self.snd.seg_index(start);
        // Retransmission history of these very bytes (not of whatever segment they started in).
        let prior = self.snd.segs.range(i0..).take_while(|s| s.start < end).map(|s| s.retrans).max().unwrap_or(0);
        match kind {
            RetransKind::Fast => {
                self.out.fast_retrans += 1;
                if self.snd.recovery_point.is_none() {
                    self.snd.recovery_point = Some(self.snd.snd_max);
                }
            }
            RetransKind::Timeout => {
                self.out.timeout_retrans += 1;
                self.out.frame_pkts[f.index()].timeouts += 1;
                ctx.end_is_timeout_retrans = true;
            }
            RetransKind::Recovery => self.out.recovery_retrans += 1,
            RetransKind::Other => self.out.other_retrans += 1,
            RetransKind::Tlp => {
                self.out.tlp_retrans += 1;
                self.tlp.on_probe(self.snd.snd_max);
            }
        }
        for pt in self.pending.iter_mut().filter(|pt| !pt.done && start < pt.end && end > pt.start) {
            pt.resent_again = true;
        }
        let mut rec =
            RetransOut { ts_ns: now, seq: start, len: (end - start) as u32, kind, prior, frame: f, timeout_type: None, evidence: None };
        let ambiguous = self.out.ambiguous.last().is_some_and(|a| a.rec == self.out.retrans.len() && a.ts_ns == now);
        if kind == RetransKind::Timeout || ambiguous || rack_only {
            // Evidence known at the time of the timeout.
            let mut ev = TimeoutEvidence { prior_retrans: prior > 0, ..Default::default() };
            if let Some(seg) = self.snd.segs.get(i0).copied() {
                ev.packets_out = packets_out.max(1);
                ev.segs_after = (self.snd.segs.len() - i0 - 1) as u32;
                ev.ack_after_send = self.client_ack_since > seg.first_tx;
                ev.dupacks = if self.snd.snd_una == seg.start { self.snd.dupacks } else { 0 };
                ev.sacked_after = self.snd.segs.range(i0 + 1..).any(|s| s.sacked);
                self.pending.push(PendingTimeout {
                    rec: self.out.retrans.len(),
                    start: seg.start,
                    end: seg.end,
                    ordinal: seg.ordinal,
                    t_rtx: now,
                    rtx_tsval: p.opts.ts.map(|t| t.0),
                    ev,
                    done: false,
                    resent_again: false,
                });
            }
            if kind == RetransKind::Timeout {
                rec.evidence = Some(ev);
            }
        }
        if kind == RetransKind::Timeout {
            // RFC 6298 §5.5 backoff; Linux tcp_enter_loss marks everything not SACKed lost.
            self.est.on_timeout();
            self.tlp.on_timeout();
            self.refresh_thresholds();
            self.snd.loss_point = Some(self.snd.snd_max);
            self.snd.recovery_point = None;
            let mut lost_add = 0;
            for s in self.snd.segs.iter_mut() {
                if !s.sacked && !s.lost {
                    s.lost = true;
                    lost_add += s.end - s.start;
                }
            }
            self.snd.lost_out += lost_add;
        }
        // Mark the retransmitted segments.
        let mut i = i0;
        while let Some(s) = self.snd.segs.get_mut(i) {
            if s.start >= end {
                break;
            }
            s.retrans = s.retrans.saturating_add(1);
            s.last_kind = Some(kind);
            s.last_tx = now;
            // A probe is no loss mark (Linux keeps the segment un-LOST, `tcp_send_loss_probe`).
            if !s.lost && kind != RetransKind::Tlp {
                s.lost = true;
                self.snd.lost_out += s.end - s.start;
            }
            if !s.rtx_out {
                s.rtx_out = true;
                self.snd.retrans_out += s.end - s.start;
            }
            i += 1;
        }
        self.out.retrans.push(rec);
        self.last_data_tx_ns = now;
    }

    /// In a fast-recovery episode, could the retransmission timer not have fired yet at `now`?
    /// The RTO is never shorter than SRTT (RFC 6298 §2) after its arming
    /// ([`Self::earliest_rto_arming_ns`]). So a re-send sooner than SRTT after it, with no ACK
    /// just before it, was held back by pacing or the window and released by the recovery, not
    /// sent by the timer (issue 16: the crowdlive `fq_pacing` variant's paced RACK re-sends were
    /// typed as RTOs).
    fn held_in_fast_recovery(&self, now: u64) -> bool {
        if self.snd.recovery_point.is_none() || self.snd.loss_point.is_some() {
            return false;
        }
        let rearmed = self.earliest_rto_arming_ns();
        self.est.srtt_ns.is_some_and(|srtt| now < rearmed + srtt)
    }

    /// The earliest time the pending retransmission timer can count from: the head segment's
    /// last transmission. Linux arms it at an ACK that advances SND.UNA from that ACK
    /// (`tcp_rearm_rto`), or, while a RACK reordering or probe timer is pending, from the
    /// head's last transmission (`tcp_rto_delta_us`) — which precedes the ACK. A re-send of the
    /// head re-arms it from the re-send (`tcp_xmit_retransmit_queue`; from a RACK reordering
    /// timeout, `tcp_rack_reo_timeout`'s `tcp_rearm_rto` with the head's new send time), so
    /// a head re-sent after the last advance dates the timer, not that advance (issue 16
    /// session 20: the `fq_pacing` variant's paced re-sends 3–4 ms after the head's RACK
    /// re-send, 160 ms after the last advance, were read as possible RTOs).
    fn earliest_rto_arming_ns(&self) -> u64 {
        self.snd.segs.get(self.snd.seg_index(self.snd.snd_una)).map_or(0, |s| s.last_tx)
    }

    /// Could the retransmission timer have fired at `now`? Linux arms it at least an RTO, never
    /// less than TCP_RTO_MIN (the sender's minimum RTO), after its arming, so not sooner than
    /// that minimum after [`Self::earliest_rto_arming_ns`]. SRTT is left out of the bound on
    /// purpose: an RTO fires SRTT + 200 ms after its arming at the earliest, so the bound errs
    /// towards "could be due".
    fn retransmission_timer_could_be_due(&self, now: u64) -> bool {
        let rearmed = self.earliest_rto_arming_ns();
        now + RACK_SLACK_NS + self.sample_offset_ns >= rearmed + self.est.min_rto_ns()
    }

    /// Record what a re-send says about the server's RACK setting and remember a timer-sent
    /// `fast` one with fewer than 3 SACKs / dupacks for the end (rack_inference.rs). Called
    /// before the re-send is recorded; true when it was remembered.
    fn rack_hooks(&mut self, kind: RetransKind, seg: Option<Seg>, start: u64, now: u64, since_client: u64) -> bool {
        let slack = RACK_SLACK_NS + self.sample_offset_ns;
        // A lost retransmission outside a post-RTO episode: only RACK finds it from ACKs (Linux
        // has no other lost-retransmit detection since 4.4), so with RACK off it is the RTO's
        // even right after an ACK (the timer coinciding with the ACK stream: the study's --full
        // tlp_off, an RTO 0.9 ms after a SACK).
        let resent_before = seg.is_some_and(|s| s.retrans > 0);
        // ... and inside a post-RTO episode, the head's lost retransmission re-sent once the
        // retransmission timer could have fired: at least an RTO after the last ACK that advanced
        // SND.UNA (`tcp_rearm_rto`) and after the head's last copy. Linux's go-back-N re-sends
        // of the episode come ACK-clocked soon after the RTO, not an RTO later; with RACK off
        // nothing but the timer finds this copy lost (issue 16: --full seed 3 tlp_off port 32809
        // at 83.53 s, the truth's RTO 325 ms after the last advance, 699 ms after the last copy).
        let rto = self.est.rto_ns();
        let timer_due_in_loss = self.snd.loss_point.is_some()
            && start <= self.snd.snd_una
            && now >= self.snd.last_advance_ns + rto
            && seg.is_some_and(|s| now >= s.last_tx + rto);
        if kind == RetransKind::Fast && resent_before && (self.snd.loss_point.is_none() || timer_due_in_loss) {
            self.out.rack_only.push(RackOnlyResend { rec: self.out.retrans.len(), ts_ns: now, evidence: None, stall: None });
            return true;
        }
        let open = self.snd.recovery_point.is_none() && self.snd.loss_point.is_none();
        if !open || start > self.snd.snd_una {
            return false;
        }
        // Only RACK can find this loss from ACKs: fewer SACKed segments and duplicate ACKs than
        // the classic threshold (with more, a RACK-off server recovers too, so nothing is said).
        let sacked = self.snd.segs.iter().filter(|s| s.sacked).take(rack_inference::DUPTHRESH as usize).count() as u32;
        // ... one overdue at the deadline that starts the recovery this late: RACK on would have
        // re-sent it at an earlier ACK (as for the RTOs below, more than SRTT past RACK's
        // latest deadline); DupThresh waited for the third SACK or duplicate ACK. Only at that
        // third one: a re-send long after it (golden cc/reno at a router, 95 duplicate ACKs)
        // is one whose first copy was lost before the capture point, or one PRR held back.
        let overdue = |srtt: u64| {
            seg.filter(|s| s.retrans == 0).is_some_and(|s| self.rack.rack_deadline(s.last_tx, srtt).is_some_and(|d| now > d + srtt + slack))
        };
        if sacked >= rack_inference::DUPTHRESH || self.snd.dupacks >= rack_inference::DUPTHRESH {
            if kind == RetransKind::Fast && self.snd.dupacks <= rack_inference::DUPTHRESH && self.est.srtt_ns.is_some_and(overdue) {
                self.out.rack_evidence.dupthresh_resends_rack_would_have_sent_sooner += 1;
            }
            return false;
        }
        match kind {
            // RACK's signature, and a vote for RACK on at this server; remembered all the same:
            // if the server's other re-sends say RACK off, nothing ACK-driven sends this segment
            // (no early retransmit since Linux 4.11), so the timer did and the ACK came by chance
            // (issue 16: the study's tlp_off RTO 0.7 ms after a SACK).
            RetransKind::Fast if since_client <= slack => {
                self.out.rack_evidence.rack_resends += 1;
                self.out.rack_only.push(RackOnlyResend { rec: self.out.retrans.len(), ts_ns: now, evidence: None, stall: None });
                true
            }
            RetransKind::Fast => {
                self.out.rack_only.push(RackOnlyResend { rec: self.out.retrans.len(), ts_ns: now, evidence: None, stall: None });
                true
            }
            RetransKind::Timeout => {
                if self.est.srtt_ns.is_some_and(overdue) {
                    self.out.rack_evidence.rtos_rack_would_have_prevented += 1;
                }
                false
            }
            _ => false,
        }
    }

    /// Record what a timer-driven re-send says about the server's TLP setting, remember a
    /// single-segment re-send for the end of the analysis, and note when one is re-sent again
    /// by the timer (tlp_inference.rs). Called before the re-send is recorded.
    fn tlp_hooks(&mut self, c: &ResendContext, kind: RetransKind, start: u64, now: u64, silence: u64) {
        let rec = self.out.retrans.len();
        if kind == RetransKind::Tlp && !c.at_snd_una {
            self.out.tlp_evidence.probes += 1;
        }
        let first_after_ack = self.last_client_ns >= self.last_data_tx_ns;
        if kind == RetransKind::Timeout
            && c.open_state
            && c.at_snd_una
            && !c.covers_snd_max
            && first_after_ack
            && tlp_inference::rto_says_no_probe(silence, self.est.srtt_ns)
        {
            self.out.tlp_evidence.rtos_without_probe += 1;
        }
        if let Some(a) = self.out.ambiguous.last_mut() {
            if a.next_resend_gap_ns.is_none() && a.seq == start && self.last_client_ns < a.ts_ns && kind == RetransKind::Timeout {
                a.next_resend_gap_ns = Some(now - a.ts_ns);
            }
        }
        if self.tlp.is_single_segment_case(c) {
            self.rto_window = Some(RtoWindowCheck::new(self.out.ambiguous.len(), self.snd.snd_max, self.mss));
            self.out.ambiguous.push(AmbiguousResend {
                rec,
                ts_ns: now,
                seq: start,
                silence_ns: silence,
                next_resend_gap_ns: None,
                window: None,
                evidence: None,
                stall: None,
            });
        }
    }

    /// An ACK reached the window check (rto_window.rs). One that advances nothing or carries SACK
    /// blocks ends it: from then on SACKed and lost-marked packets leave Linux's in-flight count,
    /// which the check does not model, so a larger flight would no longer rule an RTO out.
    fn rto_window_on_ack(&mut self, una_before: u64, sack: bool) {
        if self.snd.snd_una <= una_before || sack {
            self.rto_window = None;
        } else if let Some(w) = self.rto_window.as_mut() {
            w.on_cumulative_ack(self.snd.snd_una);
        }
    }

    fn client_packet(&mut self, p: &TcpPacket<'_>, now: u64, opts: &AnalyzeOptions, ctx: &mut GapContext, frame: &mut FrameType) {
        let syn = p.flags & flags::SYN != 0;
        if syn {
            self.syn_count += 1;
            self.syn_ns.get_or_insert(now);
            self.last_syn_ns = Some(now);
            self.client_isn = Some(p.seq);
            self.rcv.base = Some(p.seq.wrapping_add(1));
            self.client_ws = p.opts.wscale;
            if p.opts.mss > 0 {
                self.mss = self.mss.max(p.opts.mss as u32);
            }
            self.last_client_ns = now;
            return;
        }
        if !self.handshake_done && self.synack_ns.is_some() && p.flags & flags::ACK != 0 && self.snd.base == Some(p.ack) {
            self.handshake_complete(now);
        } else if !self.handshake_done && self.syn_count > 0 && self.synack_ns.is_none() && p.flags & flags::ACK != 0 {
            // Half-duplex capture (only the client's direction recorded): the client's first ACK
            // after its SYN is still the end of the handshake, as tshark's initial RTT takes it;
            // nothing tells the vantage, so no estimator sample is taken from it.
            self.handshake_done = true;
            self.rtt_initial = self.last_syn_ns.map(|t| now.saturating_sub(t));
        }
        let mut loss_signal = false;
        if p.flags & flags::ACK != 0 {
            if let Some(base) = self.snd.base {
                let una_before = self.snd.snd_una;
                loss_signal = self.client_ack(p, base, now);
                self.rto_window_on_ack(una_before, p.opts.n_sack > 0);
            }
        }
        self.last_client_loss_signal = loss_signal;
        self.last_client_ns = now;
        if p.flags & flags::ACK != 0 {
            self.client_ack_since = now;
        }
        // Client data (upload direction).
        let base = *self.rcv.base.get_or_insert(p.seq);
        let rel = unwrap(p.seq, base, self.rcv.max_end);
        let len = p.payload_len as u64;
        if len <= 1 && rel == self.rcv.rcv_nxt as i64 - 1 && self.rcv.n_ooo == 0 && p.flags & flags::FIN == 0 {
            ctx.end_is_keepalive = true;
            self.out.keepalives += 1;
            return;
        }
        if p.flags & flags::FIN != 0 {
            self.rcv.fin_sent = true;
        }
        if len == 0 || rel < 0 {
            return;
        }
        let start = rel as u64;
        let end = start + len;
        self.out.data_pkts_up += 1;
        self.out.first_data_ns.get_or_insert(now);
        self.out.last_data_ns = Some(now);
        let hole_since = self.rcv.hole_since;
        let max_end_ns = self.rcv.max_end_ns;
        let (disordered, duplicate) = self.rcv.receive(start, end, now);
        if disordered {
            ctx.end_is_disordered = true;
            self.out.reordered_up += 1;
            // "timeout reordering": the disordered packet came more than 0.2 s after the
            // packet that overtook it (the hole opened, or the highest sequence arrived).
            let since = hole_since.unwrap_or(max_end_ns);
            if now.saturating_sub(since) > opts.timeout_reordering.as_nanos() as u64 {
                self.out.timeout_reorderings += 1;
            }
        }
        if duplicate {
            self.out.dup_pkts_up += 1;
        }
        let f = self.app_feed(0, rel, p, now);
        *frame = f;
        if let Some(b) = self.bursts[0].on_data(now, p.payload_len, start, end, f, opts.burst_gap.as_nanos() as u64, opts.burst_min_packets)
        {
            self.out.bursts_up.push((b, disordered));
        }
    }

    /// The client's ACK of the SYN+ACK: the handshake's RTTs and the vantage point (module
    /// comment). The seed's 3WHS RTT (SYN+ACK → ACK at the server, §2.1) is taken like Linux's
    /// `tcp_synack_rtt_meas`: no sample if the SYN+ACK was resent. Away from the server it is
    /// the whole SYN → ACK time from the most recent SYN, as tshark's initial RTT.
    fn handshake_complete(&mut self, now: u64) {
        self.handshake_done = true;
        self.rtt_initial = self.last_syn_ns.map(|t| now.saturating_sub(t));
        self.client_half = self.last_synack_ns.map(|t| now.saturating_sub(t));
        self.server_half = match (self.syn_before_synack_ns, self.synack_ns) {
            (Some(syn), Some(sa)) => Some(sa.saturating_sub(syn)),
            _ => None,
        };
        self.vantage = match (self.server_half, self.client_half) {
            (Some(s), Some(c)) if self.synack_count == 1 => Vantage::from_halves(s, c),
            // A resent SYN+ACK inflates the client half by the SYN+ACK timer: only the server
            // half can still say "client side".
            (Some(s), Some(_)) => match self.rtt_initial {
                Some(r) if r > 0 && s as f64 / r as f64 > 0.85 => Vantage::Client,
                _ => Vantage::Unknown,
            },
            _ => Vantage::Unknown,
        };
        let r = match self.vantage {
            Vantage::Server | Vantage::Unknown => (self.synack_count == 1).then_some(self.client_half).flatten(),
            Vantage::Client | Vantage::MidPath => {
                self.sample_offset_ns = self.server_half.unwrap_or(0);
                self.rtt_initial
            }
        };
        if let Some(r) = r {
            self.rtt_3whs = Some(r);
            self.est.sample(r);
            self.est3.sample(r);
            self.refresh_thresholds();
        }
    }

    /// An ACK from the client for server data. Returns whether it signalled loss (a duplicate
    /// ACK or new SACK information).
    fn client_ack(&mut self, p: &TcpPacket<'_>, base: u32, now: u64) -> bool {
        let snd = &mut self.snd;
        // in_flight (Eq. 1) when this ACK arrives: what the RTT sample it yields was measured
        // under (seed Fig. 5 relates RTT to in_flight).
        let inflight_at_ack = snd.in_flight();
        let ack = unwrap(p.ack, base, snd.snd_max);
        let fin_extra = snd.fin_sent as u64;
        let ack = ack.clamp(0, (snd.snd_max + fin_extra) as i64) as u64;
        let ack_data = ack.min(snd.snd_max);
        // Window scaling applies only when both SYNs carried the option (RFC 7323 §2.2).
        let shift = match (self.client_ws, self.server_ws) {
            (Some(c), Some(_)) => c,
            _ => 0,
        };
        let win = (p.window as u64) << shift;
        // An RST's window field means nothing (RFC 9293 §3.10.7: the connection is gone); many
        // stacks send 0 there, which is not a receiver running out of buffer.
        if p.flags & flags::RST == 0 {
            let was_zero = self.rwnd_zero;
            self.rwnd_zero = win == 0;
            if self.rwnd_zero && !was_zero {
                self.out.zero_windows += 1;
            }
            // Below one segment the sender cannot send a full one (stall.rs, zero rwnd rule).
            self.rwnd_small = self.mss > 0 && win < self.mss as u64;
            self.rwnd_bytes = win;
        }
        let mut loss_signal = false;
        // SACK blocks: D-SACK (RFC 2883: first block below the cumulative ACK, or inside the
        // second block) marks a spurious retransmission; others mark segments SACKed.
        let blocks = p.opts.sack_blocks();
        for (k, &(s, e)) in blocks.iter().enumerate() {
            let s = unwrap(s, base, snd.snd_max).max(0) as u64;
            let e = unwrap(e, base, snd.snd_max).max(0) as u64;
            if e <= s {
                continue;
            }
            let dsack = k == 0
                && (e <= ack
                    || blocks.get(1).is_some_and(|&(s2, e2)| {
                        let s2 = unwrap(s2, base, snd.snd_max).max(0) as u64;
                        let e2 = unwrap(e2, base, snd.snd_max).max(0) as u64;
                        s >= s2 && e <= e2
                    }));
            if dsack {
                // Only an unambiguous D-SACK: the timeout's copy was the last one sent and its
                // covering ACK has not come yet (issue 16: a D-SACK for a later second re-send
                // called a needed RTO spurious).
                for pt in self.pending.iter_mut().filter(|pt| !pt.done && !pt.resent_again) {
                    if s < pt.end && e > pt.start {
                        pt.ev.spurious = true;
                    }
                }
                continue;
            }
            let mut i = snd.seg_index(s);
            while let Some(seg) = snd.segs.get_mut(i) {
                if seg.start >= e {
                    break;
                }
                if seg.end <= e && !seg.sacked {
                    // An original sent before a pending timeout retransmission, above it, arrived.
                    for pt in self.pending.iter_mut().filter(|pt| !pt.done && seg.start >= pt.end && seg.last_tx < pt.t_rtx) {
                        pt.ev.later_arrived = true;
                    }
                    if seg.retrans == 0 || now.saturating_sub(seg.last_tx) >= self.est.min_rtt_ns {
                        self.rack.on_delivered(seg.last_tx, now);
                    }
                    seg.sacked = true;
                    snd.sacked_out += seg.end - seg.start;
                    loss_signal = true;
                    if seg.lost {
                        seg.lost = false;
                        snd.lost_out -= (seg.end - seg.start).min(snd.lost_out);
                    }
                }
                i += 1;
            }
        }
        if ack_data > snd.snd_una {
            // Cumulative ACK advances: RTT sample from the oldest newly acked segment unless any
            // of them was retransmitted (Karn; Linux FLAG_RETRANS_DATA_ACKED), else from the
            // timestamp echo (RFC 7323).
            let mut oldest: Option<Seg> = None;
            let mut karn = false;
            while let Some(s) = snd.segs.front() {
                if s.end > ack_data {
                    break;
                }
                let s = snd.remove_front().unwrap();
                karn |= s.retrans > 0;
                if !s.sacked && (s.retrans == 0 || now.saturating_sub(s.last_tx) >= self.est.min_rtt_ns) {
                    self.rack.on_delivered(s.last_tx, now);
                }
                if oldest.is_none() {
                    oldest = Some(s);
                }
            }
            if let Some(front) = snd.segs.front_mut() {
                if front.start < ack_data {
                    // Partially acknowledged segment.
                    let cut = ack_data - front.start;
                    if front.rtx_out {
                        snd.retrans_out -= cut.min(snd.retrans_out);
                    }
                    if front.lost {
                        snd.lost_out -= cut.min(snd.lost_out);
                    }
                    front.start = ack_data;
                }
            }
            let mut sample = None;
            if let Some(o) = oldest {
                let offset = self.sample_offset_ns;
                if !karn {
                    sample = Some((now.saturating_sub(o.first_tx) + offset, inflight_at_ack));
                } else if let Some((_, tsecr)) = p.opts.ts {
                    if let Some(t) = self.tsclock.sent_at(tsecr) {
                        sample = Some((now.saturating_sub(t) + offset, inflight_at_ack));
                    }
                }
            }
            snd.snd_una = ack_data;
            snd.dupacks = 0;
            self.tlp.on_ack(ack_data);
            snd.last_advance_ns = now;
            if snd.snd_una >= snd.snd_max {
                snd.full_ack_ns = Some(now);
            }
            self.out.last_ack_ns = Some(now);
            if snd.recovery_point.is_some_and(|rp| snd.snd_una >= rp) {
                snd.recovery_point = None;
            }
            if snd.loss_point.is_some_and(|lp| snd.snd_una >= lp) {
                snd.loss_point = None;
            }
            // Resolve pending timeout retransmissions now covered.
            let min_rtt = self.est.min_rtt_ns;
            let offset = self.sample_offset_ns;
            for pt in self.pending.iter_mut().filter(|pt| !pt.done && pt.end <= ack_data) {
                pt.done = true;
                pt.ev.resolved = true;
                pt.ev.ack_beyond = ack_data > pt.end;
                match (pt.rtx_tsval, p.opts.ts) {
                    (Some(rtx), Some((_, tsecr))) => {
                        // Eifel (RFC 3522): the ACK echoes a TSval older than the retransmission's.
                        if (rtx.wrapping_sub(tsecr) as i32) > 0 {
                            pt.ev.spurious = true;
                        }
                    }
                    _ => {
                        // (plus the server-side half the capture point does not see)
                        if min_rtt != u64::MAX && now.saturating_sub(pt.t_rtx) + offset < min_rtt / 2 {
                            pt.ev.spurious = true;
                        }
                    }
                }
            }
            if let Some((r, inflight)) = sample {
                self.est.sample(r);
                // (inline refresh_thresholds: `snd` still borrows self.snd)
                self.thr.0 = stall_threshold_ns(self.tau, self.est.srtt_ns, self.est.rto_ns()).max(self.floor_ns);
                self.out.rtt_samples += 1;
                if let Some(r3) = self.rtt_3whs.filter(|&r3| r3 > 0) {
                    let kb = inflight / 1024;
                    let b = INFLIGHT_EDGES_KB.iter().position(|&e| kb < e).unwrap_or(6);
                    let slot = &mut self.out.rtt_buckets[b];
                    slot.0 += 1;
                    slot.1 += r as f64 / r3 as f64;
                    slot.2 += r;
                }
            }
        } else if ack_data == snd.snd_una
            && snd.snd_una < snd.snd_max
            && p.payload_len == 0
            && p.flags & (flags::SYN | flags::FIN) == 0
            && win == snd.last_win
        {
            // RFC 5681 §2 duplicate ACK.
            snd.dupacks += 1;
            loss_signal = true;
        }
        snd.last_win = win;
        loss_signal
    }

    /// Finish the flow: decide its direction, resolve what is pending, and return its rows.
    pub fn finish(mut self, opts: &AnalyzeOptions) -> FlowOut {
        let gap = opts.burst_gap.as_nanos() as u64;
        let _ = gap;
        if let Some(b) = self.bursts[1].finish(opts.burst_min_packets) {
            self.out.bursts.push((b, false));
        }
        if let Some(b) = self.bursts[0].finish(opts.burst_min_packets) {
            self.out.bursts_up.push((b, false));
        }
        if let Some(app) = self.app.as_deref_mut() {
            app.finish(self.last_ns);
        }
        let o = &mut self.out;
        o.client = self.client;
        o.server = self.server;
        o.v6 = self.v6;
        o.server_by = match self.server_by {
            ServerBy::Option => "option",
            ServerBy::Syn => "syn",
            ServerBy::Port => "port",
        };
        o.handshake = self.syn_ns.is_some() && self.synack_ns.is_some();
        o.start_ns = self.start_ns;
        o.end_ns = self.last_ns;
        o.fct_start_ns = self.syn_ns.unwrap_or(self.start_ns);
        o.bytes_down = self.snd.snd_max;
        o.bytes_up = self.rcv.max_end;
        o.delivered_up = self.rcv.rcv_nxt;
        o.acked_bytes = self.snd.snd_una;
        o.download = o.bytes_down >= o.bytes_up && o.bytes_down > 0;
        // FCT (seed §1.2): upload — first SYN to the last byte of data from the client;
        // download — first SYN to the acknowledgment of the last byte sent by the server.
        o.fct_end_ns = if o.download {
            match self.snd.full_ack_ns {
                Some(t) if self.snd.snd_una >= self.snd.snd_max => t,
                _ => self.last_ns,
            }
        } else {
            o.last_data_ns.unwrap_or(self.last_ns)
        };
        o.rtt_3whs_ns = self.rtt_3whs;
        o.rtt_initial_ns = self.rtt_initial;
        o.rtt_server_half_ns = self.server_half;
        o.rtt_client_half_ns = self.client_half;
        o.vantage = self.vantage;
        o.rtt_min_ns = (self.est.min_rtt_ns != u64::MAX).then_some(self.est.min_rtt_ns);
        o.rtt_mean_ns = self.est.mean_ns();
        o.srtt_end_ns = self.est.srtt_ns;
        o.rto_end_ns = self.est.base_rto_ns();
        o.mss = self.mss;
        o.syn_retrans = self.syn_count.saturating_sub(1) + self.synack_count.saturating_sub(1);
        o.closed_by = if self.closed { self.closed_by } else { "idle" };
        // Resolve timeout retransmissions: end-of-flow evidence, then the type.
        let total_segs = self.snd.ordinals;
        for pt in &self.pending {
            let mut ev = pt.ev;
            ev.flow_tail = total_segs.saturating_sub(pt.ordinal + 1) < 3;
            if let Some(a) = o.ambiguous.iter_mut().find(|a| a.rec == pt.rec) {
                a.evidence = Some(ev);
            }
            if let Some(a) = o.rack_only.iter_mut().find(|a| a.rec == pt.rec) {
                a.evidence = Some(ev);
            }
            if o.retrans[pt.rec].kind != RetransKind::Timeout {
                // A provisional probe: typed only if tlp_inference.rs makes it an RTO.
                continue;
            }
            let ty = retrans::classify_timeout(&ev);
            let r = &mut o.retrans[pt.rec];
            r.timeout_type = Some(ty);
            r.evidence = Some(ev);
            let ti = TimeoutType::ALL.iter().position(|&t| t == ty).unwrap();
            o.timeout_types_by_frame[r.frame.index()][ti] += 1;
        }
        // Bursts that later saw a retransmission inside them (Trickle Fig. 7).
        if !o.retrans.is_empty() {
            let mut ranges: Vec<(u64, u64)> = o.retrans.iter().map(|r| (r.seq, r.seq + r.len as u64)).collect();
            ranges.sort_unstable();
            for (b, hit) in o.bursts.iter_mut() {
                let i = ranges.partition_point(|r| r.1 <= b.seq_lo);
                *hit = ranges.get(i).is_some_and(|r| r.0 < b.seq_hi);
            }
        }
        if let Some(app) = self.app.as_deref() {
            o.proto = app.proto;
            o.http = app.http.clone();
            o.channel = app.channel();
            o.name = app.name();
            o.role = app.role();
            let dir = if o.download { 1 } else { 0 };
            for ft in FrameType::ALL {
                o.frame_agg[ft.index()] = app.frame_index(dir).agg[ft.index()];
            }
        }
        // User channel mapping wins over the parsed key.
        if !opts.channel_map.is_empty() {
            let ep = format!("{}:{}", crate::decode::addr_to_string(o.client.0, o.v6), o.client.1);
            for (pat, ch) in &opts.channel_map {
                if o.name.as_deref().is_some_and(|n| n.contains(pat.as_str())) || ep.contains(pat.as_str()) {
                    o.channel = Some(ch.clone());
                    break;
                }
            }
        }
        self.out
    }
}

impl FlowOut {
    fn empty(key: FlowKey) -> FlowOut {
        FlowOut {
            key,
            client: (0, 0),
            server: (0, 0),
            v6: false,
            server_by: "",
            handshake: false,
            start_ns: 0,
            end_ns: 0,
            fct_start_ns: 0,
            download: false,
            fct_end_ns: 0,
            bytes_up: 0,
            bytes_down: 0,
            delivered_up: 0,
            wire_bytes_up: 0,
            wire_bytes_down: 0,
            pkts_up: 0,
            pkts_down: 0,
            data_pkts_up: 0,
            data_pkts_down: 0,
            first_data_ns: None,
            last_data_ns: None,
            acked_bytes: 0,
            last_ack_ns: None,
            rtt_3whs_ns: None,
            rtt_initial_ns: None,
            rtt_server_half_ns: None,
            rtt_client_half_ns: None,
            vantage: Vantage::Unknown,
            rtt_samples: 0,
            rtt_min_ns: None,
            rtt_mean_ns: None,
            srtt_end_ns: None,
            rto_end_ns: 0,
            mss: 0,
            retrans_pkts: 0,
            retrans_bytes: 0,
            fast_retrans: 0,
            timeout_retrans: 0,
            recovery_retrans: 0,
            other_retrans: 0,
            tlp_retrans: 0,
            dup_pkts_up: 0,
            reordered_up: 0,
            timeout_reorderings: 0,
            zero_windows: 0,
            keepalives: 0,
            max_in_flight: 0,
            syn_retrans: 0,
            closed_by: "",
            stalls: Vec::new(),
            retrans: Vec::new(),
            bursts: Vec::new(),
            bursts_up: Vec::new(),
            http: Vec::new(),
            proto: Proto::Unknown,
            channel: None,
            name: None,
            role: None,
            frame_pkts: [FramePkts::default(); 5],
            frame_agg: [FrameAgg::default(); 5],
            timeout_types_by_frame: [[0; 6]; 5],
            rtt_buckets: [(0, 0.0, 0); 7],
            tlp_evidence: TlpEvidence::default(),
            ambiguous: Vec::new(),
            rack_evidence: RackEvidence::default(),
            rack_only: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwrap_crosses_the_32_bit_boundary() {
        let base = 0xFFFF_FF00u32;
        assert_eq!(unwrap(0xFFFF_FF10, base, 0), 0x10);
        assert_eq!(unwrap(0x0000_0010, base, 0x100), 0x110);
        let far = (1u64 << 32) + 5;
        assert_eq!(unwrap(base.wrapping_add(far as u32), base, far - 3), far as i64);
        assert_eq!(unwrap(base.wrapping_sub(1), base, 0), -1);
    }

    #[test]
    fn receiver_tracks_holes_and_disorder() {
        let mut r = Receiver::default();
        assert_eq!(r.receive(0, 100, 1), (false, false));
        assert_eq!(r.receive(200, 300, 2), (false, false));
        assert!(r.has_hole());
        assert_eq!(r.hole_since, Some(2));
        assert_eq!(r.receive(100, 200, 3), (true, false));
        assert!(!r.has_hole());
        assert_eq!(r.rcv_nxt, 300);
        assert_eq!(r.receive(0, 100, 4), (true, true));
    }
}
