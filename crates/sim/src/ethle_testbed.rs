//! Seed 002's testbed in the simulator: a live HLS source far away, a mobile receiver behind a
//! fluctuating radio link, and either nothing in between (E2E) or the ETHLE edge at the packet
//! gateway ([`crate::app::ethle_edge`]). One run = one receiver watching one stream for a session
//! (the paper cuts every session five minutes after the first request).
//!
//! Topology (node: kind):
//! ```text
//!   source(host) ──backhaul── pgw(router; the edge's sockets live here) ──RAN── receiver(host)
//! ```
//! The edge (a VNF at the P-GW, §V-A) terminates its TCP connections on the P-GW node itself: a
//! separate edge host behind a 10 Gbit/s, 50-µs link (the first version) added two packet hops
//! per packet for ~0.1 ms of RTT and ~40 % of the run's events, and changed no result visibly.
//! - backhaul: `backhaul_rtt` / 2 each way (§V-A: 137, 224, 302, 334 ms from US West, Japan,
//!   Australia, India to the UK), 1 Gbit/s, a queue of 2 BDP — public Internet with no loss; the
//!   source runs BBR (§V-A), every other socket the Linux default CUBIC;
//! - RAN: 112 Mbit/s down (§V-A: the lampsite's maximum), 50 Mbit/s up, 10 ms each way plus the
//!   load-driven extra latency of [`crate::ran_latency`] on the downlink (RTT 20–180 ms, Fig. 6);
//! - TCP: the simulator's Linux-like endpoint with Linux defaults (IW10, slow start after idle,
//!   delayed ACKs, SACK, pacing for BBR), MSS 1448.
//!
//! Applications (HTTP/1.1-sized messages on persistent connections; bytes are counted, not written):
//! - receiver: hls.js 0.8-like, on the model's [`Player`]: GET the playlist, join three segments
//!   behind the newest one it lists (hls.js `liveSyncDurationCount` = 3; RFC 8216 §6.3.3), fetch
//!   one segment at a time while less than 30 s is buffered (`maxBufferLength`), start playing
//!   when one segment is buffered, never skip (hls.js 0.8's `liveMaxLatencyDurationCount` is
//!   infinite); it reloads the playlist every target duration from its join time, so it learns a
//!   new segment at its own phase after publication ([`RequestTiming::Distributed`]); the reloads'
//!   few hundred bytes are not sent;
//! - source: answers a playlist at once and a segment with its size (Table I's sizes, CBR);
//! - edge: [`EdgeNode`] decides; its downstream side answers requests in order, each once the
//!   segment is cached; its upstream side fetches a requested segment it lacks at once and the
//!   held ones over at most x connections (Figs. 3–4; `edge_fetches = "at_most_x"`: max(x, 1) in
//!   all), each on a fresh TCP connection (the paper's "transient" connections; `upstream =
//!   "persistent"` keeps that many open instead — BBR then keeps its bandwidth estimate across
//!   segments).
//!
//! Metrics (§V-B): initial delay = first playlist request → playback start; buffering = stall
//! time; the paper's total live latency = initial delay + buffering + x·l_seg (Fig. 9's stacks);
//! receiver throughput per segment = size / (request sent → last byte read); backhaul throughput
//! per upstream fetch = size / (request sent → last byte at the edge). We also report the
//! player's own latency behind the source at the end (it adds the three-segment start offset).

use std::collections::VecDeque;
use std::time::Duration;

use rand::Rng;
use serde::{Deserialize, Serialize};
use tcpvideo_model::video::{abr, Availability, CatchUp, Content, Ladder, LiveSource, Player, PlayerAction, PlayerConfig, RequestTiming};
use tcpvideo_model::{Bandwidth, Time};

use crate::app::ethle_edge::{DecisionContext, EdgeNode, FetchRule, HoldMode, StreamInfo};
use crate::engine::{streams, sub_rng, Event, EventQueue, PacketPool};
use crate::loss::{LossModel, LossSpec};
use crate::network::{Channel, Link, Network, Node, NodeKind, QueueLimit};
use crate::packet::Packet;
use crate::ran_latency::RanLatency;
use crate::tcp::{Addr, SocketEvent, TcpConfig, TcpEndpoint, TcpLogEvent};

/// Linux 4.10's `tcp_rmem[2]` on the paper's 4-GB VMs (6 MiB), the default of `rcv_buf_max_bytes`.
const ETHLE_RCV_BUF_MAX_BYTES: u64 = 6 * 1024 * 1024;

/// One run's parameters (JSON keys as named; units in the names).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestbedConfig {
    pub seed: u64,
    /// Session length from the first request (paper: 300 s).
    pub session_s: f64,
    /// When the receiver arrives, after the stream started (the source has a live window by then).
    pub join_s: f64,
    pub backhaul_rtt_ms: f64,
    pub bitrate_mbps: f64,
    pub segment_s: f64,
    /// Segment size in bytes (Table I).
    pub segment_bytes: u64,
    /// "e2e", "hold" (forced x) or "model" (the edge's own x).
    pub scheme: String,
    /// x for scheme "hold".
    #[serde(default)]
    pub hold: u32,
    /// th_ran the operator's RNIS reports for the receiver (scheme "model").
    #[serde(default = "default_th_ran")]
    pub ran_throughput_mbps: f64,
    /// Operator cap on x (scheme "model").
    #[serde(default = "default_cap")]
    pub max_hold: u32,
    #[serde(default = "default_ran_rate")]
    pub ran_rate_mbps: f64,
    /// Largest extra downlink latency of the RAN (RTT = 20 ms + this at most).
    #[serde(default = "default_ran_extra")]
    pub ran_extra_ms: f64,
    #[serde(default = "default_ran_epoch")]
    pub ran_epoch_ms: f64,
    #[serde(default = "default_source_cc")]
    pub source_cc: String,
    /// Edge → source connections: "transient" (a new one per segment fetch, the paper's) or
    /// "persistent" (x + 1 kept open and reused).
    #[serde(default = "default_upstream")]
    pub upstream: String,
    /// How the edge answers a request for a segment it is still fetching: "store_and_forward"
    /// (only once the whole segment is in: the paper's edge "retrieves the file from the live
    /// source over the backhaul and serves it afterwards", §III-B, and inequality 1 adds the two
    /// legs) or "cut_through" (each upstream byte goes on to the receiver as it arrives, as
    /// `crates/edge` and any streaming reverse proxy do).
    #[serde(default = "default_forwarding")]
    pub edge_forwarding: String,
    /// Largest receive buffer of the receiving sockets (the receiver's and the edge's upstream
    /// ones; Linux `tcp_rmem[2]`; default 6 MiB, the paper's kernel 4.10's, not the simulator's
    /// Linux ≥ 6.16 default of 32 MiB: a 3-MiB window at Linux < 6.6's space/window ratio of ½).
    /// An experiment knob: the backhaul's throughput ceiling is window / RTT.
    #[serde(default)]
    pub rcv_buf_max_bytes: Option<u64>,
    /// Largest send buffer of the source's sockets (Linux `tcp_wmem[2]`, 4 MiB by default, as on
    /// the paper's Ubuntu 16.04 / 4.10 VMs with 4 GB of memory): it bounds the source's bytes in
    /// flight. An experiment knob, like `rcv_buf_max_bytes`.
    #[serde(default)]
    pub source_snd_buf_max_bytes: Option<u64>,
    /// How many segment fetches the edge runs at once: "requested_plus_held" (the paper's §III-B
    /// and Figs. 3–4: a requested segment missing at the edge at once, held ones over at most x
    /// connections) or "at_most_x" (max(x, 1) in all, Eq. 2 alone).
    #[serde(default = "default_edge_fetches")]
    pub edge_fetches: String,
    /// Random loss probability of each packet on the backhaul, both ways (§V-E's "packet
    /// errors"; the paper gives no rate, so 0 by default).
    #[serde(default)]
    pub backhaul_loss: f64,
    /// The source's BBR restarts cwnd from IW after an idle period longer than the RTO, as
    /// kernels did before `tcp_slow_start_after_idle_check` skipped `cong_control` algorithms
    /// (an experiment knob for why E2E buffers less than in the paper; off = today's Linux).
    #[serde(default)]
    pub source_cwnd_restart: bool,
}

fn default_forwarding() -> String {
    "store_and_forward".into()
}

fn default_edge_fetches() -> String {
    "requested_plus_held".into()
}

fn default_upstream() -> String {
    "transient".into()
}

fn default_th_ran() -> f64 {
    56.0 // 112 Mbit/s cell at 50 % load
}
fn default_cap() -> u32 {
    4
}
fn default_ran_rate() -> f64 {
    112.0
}
fn default_ran_extra() -> f64 {
    160.0
}
fn default_ran_epoch() -> f64 {
    100.0
}
fn default_source_cc() -> String {
    "bbr".into()
}

impl TestbedConfig {
    /// One line naming the key for anything the run cannot use.
    pub fn validate(&self) -> Result<(), String> {
        let pos = |v: f64, k: &str| if v.is_finite() && v > 0.0 { Ok(()) } else { Err(format!("{k}: must be a positive number, got {v}")) };
        pos(self.session_s, "session_s")?;
        pos(self.backhaul_rtt_ms, "backhaul_rtt_ms")?;
        pos(self.bitrate_mbps, "bitrate_mbps")?;
        pos(self.segment_s, "segment_s")?;
        pos(self.ran_rate_mbps, "ran_rate_mbps")?;
        pos(self.ran_epoch_ms, "ran_epoch_ms")?;
        pos(self.ran_throughput_mbps, "ran_throughput_mbps")?;
        if !(self.join_s.is_finite() && self.join_s >= 0.0) {
            return Err(format!("join_s: must be zero or more, got {}", self.join_s));
        }
        if !(self.ran_extra_ms.is_finite() && self.ran_extra_ms >= 0.0) {
            return Err(format!("ran_extra_ms: must be zero or more, got {}", self.ran_extra_ms));
        }
        if !(self.backhaul_loss.is_finite() && (0.0..0.5).contains(&self.backhaul_loss)) {
            return Err(format!("backhaul_loss: must be in [0, 0.5), got {}", self.backhaul_loss));
        }
        if self.rcv_buf_max_bytes.is_some_and(|b| b < 65_536) {
            return Err("rcv_buf_max_bytes: at least 65536".into());
        }
        if self.source_snd_buf_max_bytes.is_some_and(|b| b < 65_536) {
            return Err("source_snd_buf_max_bytes: at least 65536".into());
        }
        if !matches!(self.edge_fetches.as_str(), "requested_plus_held" | "at_most_x") {
            return Err(format!("edge_fetches: must be requested_plus_held or at_most_x, got {:?}", self.edge_fetches));
        }
        if self.segment_bytes == 0 {
            return Err("segment_bytes: must be positive".into());
        }
        if !matches!(self.scheme.as_str(), "e2e" | "hold" | "model") {
            return Err(format!("scheme: must be e2e, hold or model, got {:?}", self.scheme));
        }
        if !matches!(self.edge_forwarding.as_str(), "cut_through" | "store_and_forward") {
            return Err(format!("edge_forwarding: must be cut_through or store_and_forward, got {:?}", self.edge_forwarding));
        }
        if !matches!(self.upstream.as_str(), "transient" | "persistent") {
            return Err(format!("upstream: must be transient or persistent, got {:?}", self.upstream));
        }
        if self.hold > 16 {
            return Err(format!("hold: at most 16 segments, got {}", self.hold));
        }
        tcpvideo_model::cc::build(&self.source_cc, &tcpvideo_model::cc::CcConfig::default(), &Default::default())
            .map_err(|e| format!("source_cc: {e}"))?;
        Ok(())
    }

    fn segment_length(&self) -> Duration {
        Duration::from_secs_f64(self.segment_s)
    }
}

/// One segment the receiver downloaded.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReceiverSegment {
    pub segment: u64,
    pub requested_s: f64,
    pub done_s: f64,
    pub throughput_mbps: f64,
}

/// One segment the edge fetched over the backhaul.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BackhaulFetch {
    pub segment: u64,
    pub connection: u32,
    pub requested_s: f64,
    pub done_s: f64,
    pub throughput_mbps: f64,
}

/// A run's summary (one row of the study's results).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TestbedSummary {
    pub scheme: String,
    /// Segments held (0 for E2E).
    pub x: u32,
    pub model_x: Option<u32>,
    pub measured_backhaul_rtt_ms: Option<f64>,
    pub predicted_backhaul_mbps: Option<f64>,
    pub initial_delay_s: Option<f64>,
    pub buffering_s: f64,
    pub stalls: usize,
    pub hold_latency_s: f64,
    /// Initial delay + buffering + x·l_seg (the paper's Fig. 9 stack).
    pub total_latency_s: Option<f64>,
    /// The player's distance behind the source at the session's end (held segments included).
    pub player_latency_s: Option<f64>,
    pub segments: usize,
    pub receiver_throughput_mbps: Option<f64>,
    pub backhaul_throughput_mbps: Option<f64>,
    pub backhaul_fetches: usize,
    pub upstream_connections: u32,
    pub events: u64,
}

/// Everything a run returns.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TestbedResult {
    pub summary: TestbedSummary,
    pub segments: Vec<ReceiverSegment>,
    pub fetches: Vec<BackhaulFetch>,
}

// ---------------------------------------------------------------- messages on a connection

const REQUEST_BYTES: u64 = 180;
const PLAYLIST_BYTES: u64 = 700;
const RESPONSE_HEAD_BYTES: u64 = 250;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Msg {
    /// A playlist; the answer carries the hold the edge applied (0 from the source).
    Playlist {
        hold: u32,
    },
    Segment(u64),
}

/// Both byte streams of one connection as message boundaries.
#[derive(Default)]
struct Wire {
    requests: VecDeque<(u64, Msg)>,
    request_read: u64,
    request_unsent: u64,
    responses: VecDeque<(u64, Msg)>,
    response_read: u64,
    response_unsent: u64,
}

/// Who plays which part on a connection.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Role {
    /// receiver → source (E2E) or receiver → edge.
    Downstream,
    /// edge → source.
    Upstream,
}

struct Conn {
    client_node: u32,
    server_node: u32,
    role: Role,
    client: Option<TcpEndpoint>,
    server: Option<TcpEndpoint>,
    timer_gen: [u32; 2],
    timer_armed: [Option<Time>; 2],
    connected: bool,
    wire: Wire,
    /// Upstream: the segment being fetched and when it was asked for.
    busy: Option<(u64, Time)>,
    /// A transient upstream connection whose one fetch is over (never reused).
    retired: bool,
}

const SOURCE: u32 = 0;
const PGW: u32 = 1;
/// The edge's sockets are on the P-GW node.
const EDGE: u32 = PGW;
const RECEIVER: u32 = 2;

const WAKE_RECEIVER: u32 = 0;
const WAKE_EDGE: u32 = 1;

struct Receiver {
    player: Option<Player>,
    arrived: Time,
    wake_at: Option<Time>,
    hold: u32,
    joined: Option<Time>,
    segments: Vec<ReceiverSegment>,
    /// Segment request sent, waiting for its response.
    current: Option<(u64, Time)>,
}

/// One run.
pub struct Testbed {
    cfg: TestbedConfig,
    net: Network,
    pool: PacketPool,
    q: EventQueue,
    conns: Vec<Conn>,
    tcp_source: TcpConfig,
    tcp_default: TcpConfig,
    isn_rng: rand_pcg::Pcg64,
    out: Vec<Packet>,
    log: Vec<TcpLogEvent>,
    evs: Vec<SocketEvent>,
    source: LiveSource,
    content: Content,
    edge: Option<EdgeNode>,
    edge_pending: VecDeque<Msg>,
    /// Segment → bytes of its upstream response (head + body) that reached the edge so far.
    edge_arrived: std::collections::BTreeMap<u64, u64>,
    /// Cut-through: the segment being relayed to the receiver while it arrives, and the bytes
    /// of its response released to the downstream socket so far.
    edge_relaying: Option<(u64, u64)>,
    edge_playlist_asked: bool,
    edge_wake_at: Option<Time>,
    receiver: Receiver,
    fetches: Vec<BackhaulFetch>,
    end: Time,
}

/// Side 0 is the connection's client, side 1 its server.
fn endpoint_of(conns: &mut [Conn], c: usize, side: usize) -> Option<&mut TcpEndpoint> {
    let conn = &mut conns[c];
    if side == 0 {
        conn.client.as_mut()
    } else {
        conn.server.as_mut()
    }
}

fn channel(link: u32, from: u32, to: u32, rate: Bandwidth, delay: Duration, limit_bytes: u64) -> Channel {
    let loss = LossModel::new(LossSpec::None, sub_rng(0, streams::LOSS_BASE));
    Channel::new(link, from, to, rate, delay, QueueLimit::Bytes(limit_bytes.max(64 * 1500)), loss)
}

impl Testbed {
    pub fn new(cfg: TestbedConfig) -> Result<Testbed, String> {
        cfg.validate()?;
        let l = cfg.segment_length();
        let one_way = Duration::from_secs_f64(cfg.backhaul_rtt_ms / 2000.0);
        let bh_rate = Bandwidth::from_mbps(1000);
        let bh_queue = 2 * bh_rate.bytes_in(one_way * 2);
        let ran_down = Bandwidth::from_bps((cfg.ran_rate_mbps * 1e6) as u64);
        let ran_up = Bandwidth::from_mbps(50);
        let ran_delay = Duration::from_millis(10);
        let nodes = ["source", "pgw", "receiver"]
            .iter()
            .enumerate()
            .map(|(i, n)| Node {
                name: n.to_string(),
                // E2E: the P-GW forwards. With the edge every connection ends at the P-GW (the
                // edge's sockets), and the simulator routes only to hosts.
                kind: if i as u32 == PGW && cfg.scheme == "e2e" { NodeKind::Router } else { NodeKind::Host },
                ip: Network::ip_of(i as u32),
                out: vec![],
            })
            .collect::<Vec<_>>();
        let mut nodes = nodes;
        let specs =
            [("backhaul", SOURCE, PGW, bh_rate, bh_rate, one_way, bh_queue), ("ran", PGW, RECEIVER, ran_down, ran_up, ran_delay, 2 << 20)];
        let mut links = Vec::new();
        let mut chans = Vec::new();
        for (li, (name, a, b, ab_rate, ba_rate, delay, limit)) in specs.into_iter().enumerate() {
            let ab = chans.len() as u32;
            chans.push(channel(li as u32, a, b, ab_rate, delay, limit));
            nodes[a as usize].out.push(ab);
            let ba = chans.len() as u32;
            chans.push(channel(li as u32, b, a, ba_rate, delay, limit));
            nodes[b as usize].out.push(ba);
            links.push(Link { name: name.to_string(), a, b, ab, ba });
        }
        // RAN downlink (pgw → receiver) is channel 2.
        let extra = Duration::from_secs_f64(cfg.ran_extra_ms / 1000.0);
        let epoch = Duration::from_secs_f64(cfg.ran_epoch_ms / 1000.0);
        if cfg.backhaul_loss > 0.0 {
            for (i, ch) in chans.iter_mut().take(2).enumerate() {
                ch.loss = LossModel::new(LossSpec::Bernoulli { p: cfg.backhaul_loss }, sub_rng(cfg.seed, streams::LOSS_BASE + i as u64));
            }
        }
        chans[2].ran_latency = Some(RanLatency::new(epoch, extra, sub_rng(cfg.seed, streams::LOSS_BASE + 4)));
        let net = Network::new(nodes, links, chans);

        let bitrate = Bandwidth::from_bps((cfg.bitrate_mbps * 1e6) as u64);
        let join = Time::ZERO + Duration::from_secs_f64(cfg.join_s);
        let session = Duration::from_secs_f64(cfg.session_s);
        let end = join + session;
        let segment_count = ((cfg.join_s + cfg.session_s) / cfg.segment_s).ceil() as u64 + 4;
        let e = |x: tcpvideo_model::video::VideoError| x.to_string();
        let source = LiveSource::new(Time::ZERO, l, segment_count, 6).map_err(e)?;
        let ladder = Ladder::from_kbps("bitrate_mbps", &[cfg.bitrate_mbps * 1000.0]).map_err(e)?;
        let content = Content::from_table(ladder, l, vec![vec![cfg.segment_bytes]; segment_count as usize]).map_err(e)?;

        let mut tcp_default = TcpConfig { cc: "cubic".into(), ..TcpConfig::default() };
        // The paper's VMs ran Linux 4.10: tcp_rmem[2] = 6 MiB unless the knob says otherwise.
        tcp_default.rcv_buf_bytes = cfg.rcv_buf_max_bytes.unwrap_or(ETHLE_RCV_BUF_MAX_BYTES);
        let mut tcp_source = tcp_default.clone();
        tcp_source.cc = cfg.source_cc.clone();
        tcp_source.cwnd_restart_with_cong_control = cfg.source_cwnd_restart;
        if let Some(b) = cfg.source_snd_buf_max_bytes {
            tcp_source.snd_buf_bytes = b;
        }
        let fetch_rule = if cfg.edge_fetches == "at_most_x" { FetchRule::AtMostX } else { FetchRule::RequestedPlusHeld };
        let edge = match cfg.scheme.as_str() {
            "e2e" => None,
            scheme => {
                let mode = if scheme == "hold" { HoldMode::Forced(cfg.hold) } else { HoldMode::Model };
                let context = DecisionContext {
                    ran_throughput: Bandwidth::from_bps((cfg.ran_throughput_mbps * 1e6) as u64),
                    max_hold: Some(cfg.max_hold),
                };
                let stream = StreamInfo { segment_bytes: cfg.segment_bytes, segment_length: l, bitrate };
                Some(EdgeNode::new(mode, context, stream, source, tcp_default.mss as u64, fetch_rule))
            }
        };
        let mut tb = Testbed {
            net,
            pool: PacketPool::default(),
            q: EventQueue::new(),
            conns: Vec::new(),
            tcp_source,
            tcp_default,
            isn_rng: sub_rng(cfg.seed, streams::ISN),
            out: Vec::with_capacity(64),
            log: Vec::new(),
            evs: Vec::new(),
            source,
            content,
            edge,
            edge_pending: VecDeque::new(),
            edge_arrived: Default::default(),
            edge_relaying: None,
            edge_playlist_asked: false,
            edge_wake_at: None,
            receiver: Receiver { player: None, arrived: join, wake_at: None, hold: 0, joined: None, segments: Vec::new(), current: None },
            fetches: Vec::new(),
            end,
            cfg,
        };
        tb.q.push(join, Event::App { app: WAKE_RECEIVER, kind: 1 });
        Ok(tb)
    }

    /// Run the session and summarise it.
    pub fn run(mut self) -> TestbedResult {
        while let Some((now, ev)) = self.q.pop_until(self.end) {
            match ev {
                Event::Arrive { chan, pkt } => {
                    if let Some((node, p)) = self.net.arrive(now, chan, pkt, &mut self.pool, &mut self.q) {
                        self.deliver(now, node, &p);
                    }
                }
                Event::Timer { ep, gen } => {
                    let (c, side) = ((ep / 2) as usize, (ep % 2) as usize);
                    if self.conns[c].timer_gen[side] == gen {
                        self.conns[c].timer_armed[side] = None;
                        if let Some(e) = endpoint_of(&mut self.conns, c, side) {
                            e.on_timer(now, &mut self.out, &mut self.log);
                            self.settle(now, c, side);
                        }
                    }
                }
                Event::App { app: WAKE_RECEIVER, kind } => {
                    if kind == 1 {
                        self.open(now, RECEIVER, if self.edge.is_some() { EDGE } else { SOURCE }, Role::Downstream);
                    } else {
                        if self.receiver.wake_at.is_some_and(|w| w <= now) {
                            self.receiver.wake_at = None;
                        }
                        self.drive_receiver(now);
                    }
                }
                Event::App { .. } => {
                    if self.edge_wake_at.is_some_and(|w| w <= now) {
                        self.edge_wake_at = None;
                    }
                    self.pump_edge(now);
                }
                Event::Sample => {}
            }
        }
        self.summarise()
    }

    // ------------------------------------------------------------ sockets

    fn endpoint(&mut self, c: usize, side: usize) -> Option<&mut TcpEndpoint> {
        endpoint_of(&mut self.conns, c, side)
    }

    fn open(&mut self, now: Time, client: u32, server: u32, role: Role) -> usize {
        let c = self.conns.len();
        let cfg_server = if server == SOURCE { &self.tcp_source } else { &self.tcp_default };
        let ca = Addr { node: client, ip: Network::ip_of(client), port: 32768 + c as u16 };
        let sa = Addr { node: server, ip: Network::ip_of(server), port: 80 };
        let (ci, si) = (self.isn_rng.gen::<u32>(), self.isn_rng.gen::<u32>());
        let srv = TcpEndpoint::listen(cfg_server, c as u32, sa, ca, si).expect("valid config");
        let cli = TcpEndpoint::connect(&self.tcp_default, c as u32, ca, sa, ci, now, &mut self.out).expect("valid config");
        self.conns.push(Conn {
            client_node: client,
            server_node: server,
            role,
            client: Some(cli),
            server: Some(srv),
            timer_gen: [0; 2],
            timer_armed: [None; 2],
            connected: false,
            wire: Wire::default(),
            busy: None,
            retired: false,
        });
        self.settle(now, c, 0);
        c
    }

    fn deliver(&mut self, now: Time, node: u32, p: &Packet) {
        let c = p.flow as usize;
        let Some(conn) = self.conns.get(c) else { return };
        let side = if node == conn.client_node {
            0
        } else if node == conn.server_node {
            1
        } else {
            return;
        };
        if let Some(e) = endpoint_of(&mut self.conns, c, side) {
            e.on_packet(now, p, &mut self.out, &mut self.log);
            self.settle(now, c, side);
        }
    }

    fn touch(&mut self, now: Time, c: usize, side: usize) {
        if let Some(e) = endpoint_of(&mut self.conns, c, side) {
            e.flush(now, &mut self.out, &mut self.log);
            self.settle(now, c, side);
        }
    }

    /// Send what the endpoint produced, react to its socket events, re-arm its timer (as
    /// `Simulation::settle`).
    fn settle(&mut self, now: Time, c: usize, side: usize) {
        for p in self.out.drain(..) {
            self.net.send(now, p, &mut self.pool, &mut self.q);
        }
        self.log.clear();
        let mut evs = std::mem::take(&mut self.evs);
        if let Some(e) = self.endpoint(c, side) {
            e.take_events(&mut evs);
        }
        for &ev in &evs {
            self.socket_event(now, c, side, ev);
        }
        evs.clear();
        self.evs = evs;
        let conn = &mut self.conns[c];
        let ep = if side == 0 { conn.client.as_ref() } else { conn.server.as_ref() };
        if let Some(t) = ep.and_then(|e| e.next_timer()) {
            if conn.timer_armed[side].is_none_or(|a| t < a) {
                conn.timer_gen[side] = conn.timer_gen[side].wrapping_add(1);
                conn.timer_armed[side] = Some(t);
                self.q.push(t.max(now), Event::Timer { ep: 2 * c as u32 + side as u32, gen: conn.timer_gen[side] });
            }
        }
    }

    fn socket_event(&mut self, now: Time, c: usize, side: usize, ev: SocketEvent) {
        match ev {
            SocketEvent::Connected if side == 0 => {
                self.conns[c].connected = true;
                match self.conns[c].role {
                    Role::Downstream => self.request(now, c, Msg::Playlist { hold: 0 }),
                    Role::Upstream => {
                        self.push(now, c, 0);
                        self.pump_edge(now);
                    }
                }
            }
            SocketEvent::Connected | SocketEvent::Writable => {
                self.push(now, c, side);
            }
            SocketEvent::Readable | SocketEvent::PeerClosed => {
                let n = self.endpoint(c, side).map_or(0, |e| e.recv(u64::MAX));
                if n > 0 {
                    self.touch(now, c, side);
                    if side == 0 {
                        self.client_read(now, c, n);
                    } else {
                        self.server_read(now, c, n);
                    }
                }
            }
            SocketEvent::AllAcked | SocketEvent::Closed | SocketEvent::Reset => {}
        }
    }

    /// Hand unsent bytes of `side`'s stream to its socket.
    fn push(&mut self, now: Time, c: usize, side: usize) {
        let conn = &mut self.conns[c];
        if !conn.connected && side == 0 {
            return;
        }
        let (ep, unsent) = if side == 0 {
            (conn.client.as_mut(), &mut conn.wire.request_unsent)
        } else {
            (conn.server.as_mut(), &mut conn.wire.response_unsent)
        };
        let Some(ep) = ep else { return };
        if *unsent == 0 {
            return;
        }
        let n = ep.send(*unsent);
        *unsent -= n;
        if n > 0 {
            self.touch(now, c, side);
        }
    }

    fn request(&mut self, now: Time, c: usize, msg: Msg) {
        let w = &mut self.conns[c].wire;
        w.requests.push_back((REQUEST_BYTES, msg));
        w.request_unsent += REQUEST_BYTES;
        self.push(now, c, 0);
    }

    fn respond(&mut self, now: Time, c: usize, msg: Msg) {
        let len = match msg {
            Msg::Playlist { .. } => PLAYLIST_BYTES,
            Msg::Segment(k) => RESPONSE_HEAD_BYTES + self.content.segment_bytes(k, 0).unwrap_or(0),
        };
        let w = &mut self.conns[c].wire;
        w.responses.push_back((len, msg));
        w.response_unsent += len;
        self.push(now, c, 1);
    }

    /// The server side of `c` read `n` request bytes.
    fn server_read(&mut self, now: Time, c: usize, n: u64) {
        let w = &mut self.conns[c].wire;
        w.request_read += n;
        let mut complete = Vec::new();
        while let Some(&(len, msg)) = w.requests.front() {
            if w.request_read < len {
                break;
            }
            w.request_read -= len;
            w.requests.pop_front();
            complete.push(msg);
        }
        for msg in complete {
            if self.conns[c].server_node == SOURCE {
                self.respond(now, c, msg);
            } else {
                self.edge_request(now, msg);
            }
        }
    }

    /// The client side of `c` read `n` response bytes.
    fn client_read(&mut self, now: Time, c: usize, mut n: u64) {
        while n > 0 {
            let w = &mut self.conns[c].wire;
            let Some(&(len, msg)) = w.responses.front() else { break };
            let take = n.min(len - w.response_read);
            let first = w.response_read == 0;
            w.response_read += take;
            let arrived = w.response_read;
            n -= take;
            let done = w.response_read == len;
            if done {
                w.responses.pop_front();
                w.response_read = 0;
            }
            match self.conns[c].role {
                Role::Downstream => self.receiver_bytes(now, msg, first, take, done),
                Role::Upstream => {
                    if let Msg::Segment(k) = msg {
                        self.edge_arrived.insert(k, arrived);
                        self.relay(now, k);
                        if first && self.edge_relaying.is_none() {
                            self.serve_downstream(now);
                        }
                    }
                    if done {
                        self.edge_fetched(now, c, msg);
                    }
                }
            }
        }
    }

    // ------------------------------------------------------------ receiver

    fn receiver_bytes(&mut self, now: Time, msg: Msg, first: bool, bytes: u64, done: bool) {
        match msg {
            Msg::Playlist { hold } if done && self.receiver.player.is_none() => {
                self.receiver.hold = hold;
                self.start_player(now, hold);
                self.drive_receiver(now);
            }
            Msg::Playlist { .. } => {}
            Msg::Segment(k) => {
                let Some(p) = self.receiver.player.as_mut() else { return };
                if first {
                    p.on_first_byte(now);
                }
                if !done {
                    p.on_bytes(now, bytes);
                    return;
                }
                p.on_segment_done(now);
                if let Some((seg, at)) = self.receiver.current.take() {
                    let secs = now.saturating_since(at).as_secs_f64().max(1e-9);
                    let size = self.content.segment_bytes(seg, 0).unwrap_or(0) as f64;
                    self.receiver.segments.push(ReceiverSegment {
                        segment: k,
                        requested_s: at.as_secs_f64(),
                        done_s: now.as_secs_f64(),
                        throughput_mbps: size * 8.0 / secs / 1e6,
                    });
                }
                self.drive_receiver(now);
            }
        }
    }

    fn start_player(&mut self, now: Time, hold: u32) {
        let l = self.cfg.segment_length();
        let mut view = self.source;
        view.t0 += l * hold;
        let mut pc = PlayerConfig::seed004(l);
        pc.buffer_target_segments = ((30.0 / self.cfg.segment_s).ceil() as u32).max(4);
        pc.live_start_behind = 3;
        pc.catch_up = CatchUp::Never;
        pc.request_timing = RequestTiming::distributed_from_arrival(self.receiver.arrived, view.t0, l);
        let setup =
            abr::AbrSetup { ladder: self.content.ladder().clone(), segment_duration: l, buffer_target: pc.buffer_target(l), live: true };
        // One quality: the paper disables adaptation (4K must hold).
        let quality = abr::Params([("quality".to_string(), 0.0)].into_iter().collect());
        let rule = abr::build("abr", "fixed", &setup, &quality).expect("fixed rule");
        let mut player = Player::new(self.content.clone(), Availability::Live(view), rule, pc).expect("valid player");
        player.join(now);
        self.receiver.joined = Some(now);
        self.receiver.player = Some(player);
    }

    fn drive_receiver(&mut self, now: Time) {
        let Some(p) = self.receiver.player.as_mut() else { return };
        match p.next_action(now) {
            PlayerAction::WaitUntil(t) => {
                if self.receiver.wake_at.is_none_or(|w| w <= now || t < w) {
                    self.receiver.wake_at = Some(t);
                    self.q.push(t.max(now), Event::App { app: WAKE_RECEIVER, kind: 0 });
                }
            }
            PlayerAction::Fetch(req) => {
                self.receiver.current = Some((req.segment, now));
                self.request(now, 0, Msg::Segment(req.segment));
            }
            PlayerAction::ProbeSizes { .. } | PlayerAction::Downloading | PlayerAction::Finished => {}
        }
    }

    // ------------------------------------------------------------ edge

    fn edge_request(&mut self, now: Time, msg: Msg) {
        if let (Msg::Playlist { .. }, false) = (msg, self.edge_playlist_asked) {
            // First playlist request: forward it upstream on the first backhaul connection.
            self.edge_playlist_asked = true;
            let c = self.open(now, EDGE, SOURCE, Role::Upstream);
            self.conns[c].busy = Some((u64::MAX, now));
            self.request(now, c, Msg::Playlist { hold: 0 });
        }
        if let (Msg::Segment(k), Some(edge)) = (msg, self.edge.as_mut()) {
            edge.on_request(k);
        }
        self.edge_pending.push_back(msg);
        self.pump_edge(now);
        self.serve_downstream(now);
    }

    fn edge_fetched(&mut self, now: Time, c: usize, msg: Msg) {
        let asked = self.conns[c].busy.take();
        if self.cfg.upstream == "transient" {
            self.conns[c].retired = true;
            if let Some(e) = self.conns[c].client.as_mut() {
                e.close();
            }
            self.touch(now, c, 0);
        }
        match msg {
            Msg::Playlist { .. } => {
                let rtt = self.conns[c].client.as_ref().and_then(|e| e.srtt()).unwrap_or_default();
                let Some(edge) = self.edge.as_mut() else { return };
                edge.decide_hold(rtt);
                let connections = edge.upstream_connections();
                if self.cfg.upstream != "transient" {
                    for _ in 1..connections {
                        self.open(now, EDGE, SOURCE, Role::Upstream);
                    }
                }
            }
            Msg::Segment(k) => {
                if let Some(edge) = self.edge.as_mut() {
                    edge.on_fetched(k, now);
                }
                if let Some((_, at)) = asked {
                    let secs = now.saturating_since(at).as_secs_f64().max(1e-9);
                    self.fetches.push(BackhaulFetch {
                        segment: k,
                        connection: c as u32,
                        requested_s: at.as_secs_f64(),
                        done_s: now.as_secs_f64(),
                        throughput_mbps: self.cfg.segment_bytes as f64 * 8.0 / secs / 1e6,
                    });
                }
            }
        }
        self.pump_edge(now);
        self.serve_downstream(now);
    }

    /// Start every fetch the edge wants on idle upstream connections; wake at the next publication.
    fn pump_edge(&mut self, now: Time) {
        let Some(edge) = self.edge.as_mut() else { return };
        if edge.choice.is_none() {
            return;
        }
        let parallel = edge.upstream_connections() as usize;
        loop {
            let upstream = || self.conns.iter().enumerate().filter(|(_, c)| c.role == Role::Upstream);
            let busy = upstream().filter(|(_, c)| c.busy.is_some()).count();
            if busy >= parallel {
                break;
            }
            let idle = upstream().find(|(_, c)| c.connected && c.busy.is_none() && !c.retired).map(|(i, _)| i);
            if idle.is_none() && self.cfg.upstream != "transient" {
                break;
            }
            let Some(edge) = self.edge.as_mut() else { return };
            let Some(k) = edge.next_fetch(now) else { break };
            let c = match idle {
                Some(c) => c,
                // Transient: a fresh connection per fetch (§III-A "parallel (but transient) TCP
                // connections"); the request goes out when it is connected.
                None => self.open(now, EDGE, SOURCE, Role::Upstream),
            };
            self.conns[c].busy = Some((k, now));
            self.request(now, c, Msg::Segment(k));
        }
        if let Some(t) = self.edge.as_ref().and_then(|e| e.next_publication(now)) {
            if self.edge_wake_at.is_none_or(|w| w <= now || t < w) {
                self.edge_wake_at = Some(t);
                self.q.push(t, Event::App { app: WAKE_EDGE, kind: 0 });
            }
        }
    }

    /// Answer the receiver's requests in order, each once the edge can: a cached segment at
    /// once; with cut-through, a segment whose upstream response has begun to arrive too (its
    /// bytes are released as they come, [`Self::relay`]).
    fn serve_downstream(&mut self, now: Time) {
        while let Some(&msg) = self.edge_pending.front() {
            if self.edge_relaying.is_some() {
                return; // responses leave in order: the next waits for the one being relayed
            }
            let Some(edge) = self.edge.as_ref() else { return };
            let cut_through = self.cfg.edge_forwarding == "cut_through";
            let ready = match msg {
                Msg::Playlist { .. } => edge.choice.is_some(),
                Msg::Segment(k) => edge.is_cached(k) || (cut_through && self.edge_arrived.contains_key(&k)),
            };
            if !ready {
                break;
            }
            let reply = match msg {
                Msg::Playlist { .. } => Msg::Playlist { hold: edge.x() },
                m => m,
            };
            self.edge_pending.pop_front();
            match reply {
                Msg::Segment(k) if !edge.is_cached(k) => {
                    // Queue the whole response but hand the socket only what has arrived.
                    let len = RESPONSE_HEAD_BYTES + self.content.segment_bytes(k, 0).unwrap_or(0);
                    self.conns[0].wire.responses.push_back((len, reply));
                    self.edge_relaying = Some((k, 0));
                    self.relay(now, k);
                }
                _ => self.respond(now, 0, reply),
            }
        }
    }

    /// Release to the receiver's connection the bytes of `segment` that reached the edge since
    /// the last release (cut-through).
    fn relay(&mut self, now: Time, segment: u64) {
        let Some((k, released)) = self.edge_relaying else { return };
        if k != segment {
            return;
        }
        let arrived = self.edge_arrived.get(&k).copied().unwrap_or(0);
        let len = RESPONSE_HEAD_BYTES + self.content.segment_bytes(k, 0).unwrap_or(0);
        if arrived > released {
            self.conns[0].wire.response_unsent += arrived - released;
            self.push(now, 0, 1);
        }
        self.edge_relaying = (arrived < len).then_some((k, arrived.max(released)));
        if self.edge_relaying.is_none() {
            self.serve_downstream(now);
        }
    }

    // ------------------------------------------------------------ results

    fn summarise(self) -> TestbedResult {
        let end = self.end;
        let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
        let x = self.edge.as_ref().map_or(0, |e| e.x());
        let choice = self.edge.as_ref().and_then(|e| e.choice);
        let l = self.cfg.segment_s;
        let (initial, buffering, stalls, player_latency, n) = match &self.receiver.player {
            Some(p) => {
                let qoe = p.qoe(end);
                // The player joins when the playlist arrives; the initial delay counts from the
                // receiver's arrival (its first request).
                let joined_after = self.receiver.joined.map_or(0.0, |j| j.saturating_since(self.receiver.arrived).as_secs_f64());
                let initial = qoe.startup_time.map(|s| s.as_secs_f64() + joined_after);
                let lat = p.live_latency(end).map(|d| d.as_secs_f64() + x as f64 * l);
                (initial, qoe.stall_total.as_secs_f64(), qoe.stall_count, lat, qoe.segments)
            }
            None => (None, 0.0, 0, None, 0),
        };
        let recv: Vec<f64> = self.receiver.segments.iter().map(|s| s.throughput_mbps).collect();
        let bh: Vec<f64> = self.fetches.iter().map(|f| f.throughput_mbps).collect();
        let hold_latency = x as f64 * l;
        TestbedSummary {
            scheme: self.cfg.scheme.clone(),
            x,
            model_x: choice.map(|c| c.decision.held_segments()),
            measured_backhaul_rtt_ms: choice.map(|c| c.measured_rtt.as_secs_f64() * 1e3),
            predicted_backhaul_mbps: choice.map(|c| c.predicted_throughput.as_mbps_f64()),
            initial_delay_s: initial,
            buffering_s: buffering,
            stalls,
            hold_latency_s: hold_latency,
            total_latency_s: initial.map(|i| i + buffering + hold_latency),
            player_latency_s: player_latency,
            segments: n,
            receiver_throughput_mbps: mean(&recv),
            backhaul_throughput_mbps: mean(&bh),
            backhaul_fetches: self.fetches.len(),
            upstream_connections: self.conns.iter().filter(|c| c.role == Role::Upstream).count() as u32,
            events: self.q.processed,
        }
        .into_result(self.receiver.segments, self.fetches)
    }
}

impl TestbedSummary {
    fn into_result(self, segments: Vec<ReceiverSegment>, fetches: Vec<BackhaulFetch>) -> TestbedResult {
        TestbedResult { summary: self, segments, fetches }
    }
}

/// Run one configuration given as JSON; errors are one line naming the key.
pub fn run_json(text: &str) -> Result<TestbedResult, String> {
    let de = &mut serde_json::Deserializer::from_str(text);
    let cfg: TestbedConfig = serde_path_to_error::deserialize(de).map_err(|e| format!("{}: {}", e.path(), e.inner()))?;
    Ok(Testbed::new(cfg)?.run())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(scheme: &str, hold: u32, rtt_ms: f64, bitrate: f64, seg_s: f64, seg_bytes: u64, session_s: f64) -> TestbedConfig {
        serde_json::from_value(serde_json::json!({
            "seed": 1, "session_s": session_s, "join_s": 20.0, "backhaul_rtt_ms": rtt_ms,
            "bitrate_mbps": bitrate, "segment_s": seg_s, "segment_bytes": seg_bytes,
            "scheme": scheme, "hold": hold,
        }))
        .unwrap()
    }

    #[test]
    fn hold_x_from_the_model_removes_the_buffering_that_hold_0_suffers_over_a_long_backhaul() {
        // India, 50 Mbit/s, 2 s segments of 12.2 MB: one backhaul fetch takes ~4.4 s > 2 s.
        let h0 = Testbed::new(cfg("hold", 0, 334.0, 50.0, 2.0, 12_200_000, 40.0)).unwrap().run().summary;
        let hx = Testbed::new(cfg("model", 0, 334.0, 50.0, 2.0, 12_200_000, 40.0)).unwrap().run().summary;
        assert!(h0.buffering_s > 5.0, "hold-0 should stall: {h0:?}");
        assert_eq!(hx.model_x, Some(3), "{hx:?}");
        assert_eq!(hx.buffering_s, 0.0, "{hx:?}");
        assert_eq!(hx.total_latency_s.unwrap(), hx.initial_delay_s.unwrap() + 6.0);
    }

    #[test]
    fn a_transient_backhaul_fetch_takes_about_what_the_startup_model_predicts() {
        // Japan 15 Mbit/s 2 s (Table III: modeled 11.7, actual 11.9 Mbit/s): a fresh connection
        // per fetch (IW10, handshake and request RTTs) lands near the one-MSS doubling model.
        let r = Testbed::new(cfg("hold", 2, 224.0, 15.0, 2.0, 3_700_000, 30.0)).unwrap().run();
        let (sim, model) = (r.summary.backhaul_throughput_mbps.unwrap(), r.summary.predicted_backhaul_mbps.unwrap());
        assert!(r.fetches.len() >= 10);
        assert!((sim / model - 1.0).abs() < 0.15, "simulated {sim} vs model {model}");
        // persistent connections let BBR keep its estimates: much faster
        let mut c = cfg("hold", 2, 224.0, 15.0, 2.0, 3_700_000, 30.0);
        c.upstream = "persistent".into();
        let p = Testbed::new(c).unwrap().run().summary.backhaul_throughput_mbps.unwrap();
        assert!(p > 2.0 * sim, "persistent {p} vs transient {sim}");
    }

    #[test]
    fn cut_through_overlaps_the_backhaul_and_ran_legs_of_a_hold_0_fetch() {
        // Japan 15M-4s, hold-0: each segment is fetched when asked. Store and forward starts the
        // RAN leg (7.2 MB at ≤ 112 Mbit/s: ≥ 0.51 s; ~1.6 s measured, the edge's CUBIC socket
        // restarting after idle over the jittery RAN) when the last backhaul byte is in;
        // cut-through has relayed most of the segment by then (~0.4 s left on average, the
        // first three back-to-back start-up segments included).
        let lag = |forwarding: &str| {
            let mut c = cfg("hold", 0, 224.0, 15.0, 4.0, 7_200_000, 40.0);
            c.edge_forwarding = forwarding.into();
            let r = Testbed::new(c).unwrap().run();
            let fetched: std::collections::HashMap<u64, f64> = r.fetches.iter().map(|f| (f.segment, f.done_s)).collect();
            let lags: Vec<f64> = r.segments.iter().filter_map(|s| Some(s.done_s - fetched.get(&s.segment)?)).collect();
            assert!(lags.len() >= 4, "{forwarding}: {lags:?}");
            lags.iter().sum::<f64>() / lags.len() as f64
        };
        let (saf, ct) = (lag("store_and_forward"), lag("cut_through"));
        assert!(saf > 0.9, "store and forward: last receiver byte {saf:.3} s after the last backhaul byte");
        assert!(ct * 2.0 < saf, "cut-through: last receiver byte {ct:.3} s after the last backhaul byte (store and forward {saf:.3} s)");
    }

    #[test]
    fn a_source_that_restarts_cwnd_after_idle_slows_e2e_segments_after_each_pause() {
        // US West 15M-4s E2E: the player idles between segments (each is published 4 s apart and
        // takes well under 4 s), longer than the RTO, so with the restart each segment starts
        // again from IW10 over 137 ms + the RAN (measured: 44 vs 61 Mbit/s).
        let run = |restart: bool| {
            let mut c = cfg("e2e", 0, 137.0, 15.0, 4.0, 7_200_000, 40.0);
            c.source_cwnd_restart = restart;
            Testbed::new(c).unwrap().run().summary.receiver_throughput_mbps.unwrap()
        };
        let (kept, restarted) = (run(false), run(true));
        assert!(restarted < 0.85 * kept, "restart {restarted:.1} vs kept {kept:.1} Mbit/s");
    }

    #[test]
    fn each_segment_crosses_the_backhaul_once_and_reaches_the_receiver_in_order() {
        let r = Testbed::new(cfg("hold", 2, 302.0, 15.0, 2.0, 3_700_000, 30.0)).unwrap().run();
        let mut fetched: Vec<u64> = r.fetches.iter().map(|f| f.segment).collect();
        fetched.sort_unstable();
        let n = fetched.len();
        fetched.dedup();
        assert_eq!(fetched.len(), n, "a segment was fetched twice");
        let got: Vec<u64> = r.segments.iter().map(|s| s.segment).collect();
        assert!(got.windows(2).all(|w| w[1] == w[0] + 1), "{got:?}");
        assert!(got.iter().all(|k| fetched.contains(k)));
    }

    #[test]
    fn the_same_configuration_and_seed_give_the_same_run_and_another_seed_another() {
        let a = Testbed::new(cfg("e2e", 0, 224.0, 15.0, 2.0, 3_700_000, 20.0)).unwrap().run();
        let b = Testbed::new(cfg("e2e", 0, 224.0, 15.0, 2.0, 3_700_000, 20.0)).unwrap().run();
        assert_eq!(a, b);
        let mut c = cfg("e2e", 0, 224.0, 15.0, 2.0, 3_700_000, 20.0);
        c.seed = 2;
        assert_ne!(Testbed::new(c).unwrap().run().segments, a.segments);
    }

    #[test]
    fn bad_input_is_one_line_naming_the_key() {
        let e = run_json(r#"{"seed":1}"#).err().unwrap();
        assert!(e.contains("session_s"), "{e}");
        let mut c = cfg("e2e", 0, 224.0, 15.0, 2.0, 3_700_000, 20.0);
        c.scheme = "split".into();
        assert!(Testbed::new(c).err().unwrap().starts_with("scheme:"));
        let mut c = cfg("e2e", 0, 224.0, 15.0, 2.0, 3_700_000, 20.0);
        c.backhaul_rtt_ms = -1.0;
        assert!(Testbed::new(c).err().unwrap().starts_with("backhaul_rtt_ms:"));
        let mut c = cfg("e2e", 0, 224.0, 15.0, 2.0, 3_700_000, 20.0);
        c.edge_forwarding = "teleport".into();
        assert!(Testbed::new(c).err().unwrap().starts_with("edge_forwarding:"));
        let mut c = cfg("e2e", 0, 224.0, 15.0, 2.0, 3_700_000, 20.0);
        c.backhaul_loss = 0.7;
        assert!(Testbed::new(c).err().unwrap().starts_with("backhaul_loss:"));
        let e = run_json(r#"{"seed":1,"bogus":2}"#).err().unwrap();
        assert!(e.contains("bogus"), "{e}");
    }
}
