//! A simulation run: the scenario's network, one TCP connection per flow (client endpoint and
//! server endpoint), the applications driving them, and the recorders.
//!
//! Control flow per event (see engine.rs for the queue):
//! - `Arrive`: a router forwards; a host hands the packet to the flow's endpoint on that node
//!   (`on_packet`). Demultiplexing is by flow index, carried in every packet (both directions).
//! - `Timer`: the endpoint's timer (`on_timer`), unless a newer timer superseded it (generation).
//! - `App`: flow start (connect/listen), next request or player wake-up, reader wake-up,
//!   cwnd-clamp change.
//!
//! After every call into an endpoint the run drains what it produced ([`Simulation::settle`]):
//! packets go to the network, ground-truth events to the log, socket events to the application
//! (which may call into the endpoint again), and the endpoint's next timer is (re)armed. A timer
//! is armed only when it is earlier than the one already queued; a later or cancelled timer
//! leaves the earlier event in place, which then fires harmlessly (the endpoint checks what is
//! due) — fewer heap operations than cancelling, same behaviour.
//!
//! Randomness: ISNs come from their own stream (engine::streams::ISN), drawn once per flow in flow
//! order; the dumbbell RTTs and the start jitter were drawn when the scenario was resolved.
//!
//! Connections: endpoints are indexed by connection (client 2c, server 2c + 1) and packets carry
//! their connection; connection c < flows is flow c's first (so a run without per-segment
//! connections numbers everything as before), further ones come from [`ConnTable`]
//! (crate::connection: numbering, ISNs, ports, the statistics of finished connections).

use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rand::Rng;
use tcpvideo_model::Time;

use crate::app::bulk::Bulk;
use crate::app::crowd::front_end::FrontEnd;
use crate::app::crowd::truth::{Snapshot, Truth};
use crate::app::http::HttpWire;
use crate::app::kind;
use crate::app::origin::{OriginConn, StreamFormat, VideoSite};
use crate::app::player::{Completed, PlayerApp, PlaylistRefresh};
use crate::app::progressive::ProgressiveConn;
use crate::app::progressive_outputs::{self, ProgressiveRow};
use crate::app::reader::{ReadOutcome, Reader};
use crate::app::reqresp::{ReqResp, RequestRecord};
use crate::app::video_outputs::{self, BufferSample, ClientQoe, SegmentRow, StallRow};
use crate::connection::{client_port, ConnTable, Retired};
use crate::engine::{streams, sub_rng, Event, EventQueue, PacketPool};
use crate::network::{Network, NodeKind};
use crate::packet::Packet;
use crate::payload::{PayloadBook, SharedPayloads};
use crate::pcap::{PcapSink, TsResolution};
use crate::scenario::{AppDef, Direction, Qty, Scenario, ScenarioError, TcpSpec};
use crate::tcp::{Addr, KeepAliveConfig, SocketEvent, TcpConfig, TcpEndpoint, TcpLogEvent, TcpState};

/// Build the endpoint configuration of a flow: Linux defaults, then the scenario's keys.
pub fn tcp_config(spec: &TcpSpec, path: &str) -> Result<TcpConfig, ScenarioError> {
    let mut c = TcpConfig::default();
    let d = |q: &Option<Qty>, k: &str| -> Result<Option<Duration>, ScenarioError> {
        q.as_ref().map(|q| q.duration(&format!("{path}.{k}"))).transpose()
    };
    if let Some(cc) = &spec.cc {
        c.cc = cc.clone();
    }
    if let Some(p) = &spec.cc_params {
        c.cc_params = tcpvideo_model::cc::Params(p.clone());
    }
    if let Some(m) = spec.mss {
        if m < 88 {
            return Err(ScenarioError(format!("{path}.mss: must be at least 88 bytes")));
        }
        c.mss = m;
    }
    if let Some(w) = spec.initial_cwnd {
        if w == 0 {
            return Err(ScenarioError(format!("{path}.initial_cwnd: must be at least 1 segment")));
        }
        c.initial_cwnd_segments = w;
    }
    match &spec.rcv_buf {
        // Linux's default: autotuned from tcp_rmem[1] up to tcp_rmem[2] (tcp/rcvbuf.rs).
        None => {}
        Some(Qty::Str(s)) if s.trim() == "auto" => c.rcv_buf_autotune = true,
        Some(q) => {
            // A fixed size is SO_RCVBUF, which locks autotuning off in Linux.
            c.rcv_buf_bytes = q.bytes(&format!("{path}.rcv_buf")).map_err(|e| ScenarioError(format!("{} (or \"auto\")", e.0)))?;
            c.rcv_buf_autotune = false;
            if c.rcv_buf_bytes < 2 * c.mss as u64 {
                return Err(ScenarioError(format!("{path}.rcv_buf: must hold at least two segments")));
            }
        }
    }
    if let Some(q) = &spec.snd_buf {
        c.snd_buf_bytes = q.bytes(&format!("{path}.snd_buf"))?;
        if c.snd_buf_bytes == 0 {
            return Err(ScenarioError(format!("{path}.snd_buf: must be positive")));
        }
    }
    if let Some(v) = spec.sack {
        c.sack = v;
    }
    if let Some(v) = spec.timestamps {
        c.timestamps = v;
    }
    if let Some(v) = spec.window_scaling {
        c.window_scaling = v;
    }
    if let Some(v) = d(&spec.min_rto, "min_rto")? {
        c.min_rto = v;
    }
    if let Some(v) = d(&spec.initial_rto, "initial_rto")? {
        c.initial_rto = v;
    }
    if let Some(v) = d(&spec.max_rto, "max_rto")? {
        c.max_rto = v;
    }
    if let Some(v) = d(&spec.delayed_ack, "delayed_ack")? {
        c.delayed_ack = v;
    }
    if let Some(v) = spec.quickack_segments {
        c.quickack_segments = v;
    }
    if let Some(v) = spec.slow_start_after_idle {
        c.slow_start_after_idle = v;
    }
    if let Some(v) = spec.dupack_threshold {
        c.dupack_threshold = v.max(1);
    }
    if let Some(v) = spec.nagle {
        c.nagle = v;
    }
    if let Some(v) = spec.rack_tlp {
        c.rack_tlp = v;
    }
    if let Some(v) = spec.tlp {
        c.tlp = v;
    }
    if let Some(v) = spec.frto {
        c.frto = v;
    }
    if let Some(v) = spec.tso {
        c.tso = v;
    }
    let ka_idle = d(&spec.keepalive_idle, "keepalive_idle")?;
    let ka_int = d(&spec.keepalive_interval, "keepalive_interval")?;
    if ka_idle.is_some() || ka_int.is_some() || spec.keepalive_probes.is_some() {
        let def = KeepAliveConfig::default();
        c.keepalive = Some(KeepAliveConfig {
            idle: ka_idle.unwrap_or(def.idle),
            interval: ka_int.unwrap_or(def.interval),
            probes: spec.keepalive_probes.unwrap_or(def.probes),
        });
    }
    Ok(c)
}

/// Errors of a run: a bad scenario, or I/O on an output file.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("{0}")]
    Scenario(#[from] ScenarioError),
    #[error("{0}")]
    Io(String),
}

struct EpSlot {
    /// Boxed: a finished per-segment connection's slot stays (connection ids index `eps`), and
    /// then holds 24 bytes instead of a whole endpoint (~2 KB).
    ep: Option<Box<TcpEndpoint>>,
    gen: u32,
    armed: Option<Time>,
}

enum AppState {
    Bulk(Bulk),
    ReqResp(ReqResp),
    Video(Box<VideoConn>),
    Progressive(Box<ProgressiveConn>),
    /// A crowdlive publisher or subscriber; its state lives in `Simulation::crowd`.
    Crowd,
}

/// Both ends of one video connection.
struct VideoConn {
    client: PlayerApp,
    origin: OriginConn,
    wire: HttpWire,
    /// Segment → sender SRTT when its last byte was read.
    srtt_at_done: Vec<(u64, Duration)>,
    done_buf: Vec<Completed>,
}

struct FlowRt {
    client: u32,
    server: u32,
    start: Time,
    app: AppState,
    /// Endpoint id (2f = client, 2f+1 = server) that sends the data / reads it.
    data_sender: u32,
    data_receiver: u32,
    reader: Reader,
    /// Receiver got every byte of a finite bulk transfer at this time.
    completed_at: Option<Time>,
    clamp_packets: Option<u64>,
    /// The flow's current connection (its first is numbered like the flow).
    conn: u32,
    /// Statistics of the flow's finished connections (per-segment connections).
    retired: Retired,
}

/// Per-flow metrics (one row of the `flows` table).
#[derive(Clone, Debug, PartialEq)]
pub struct FlowMetrics {
    pub flow: u32,
    pub name: String,
    pub client: String,
    pub server: String,
    pub cc: String,
    pub start_ns: u64,
    pub base_rtt_ns: u64,
    /// Payload bytes delivered in order to the receiving application's buffer.
    pub bytes: u64,
    pub bytes_read: u64,
    pub goodput_bps: f64,
    pub fct_ns: Option<u64>,
    pub retrans_fast: u64,
    pub retrans_timeout: u64,
    pub rto_count: u64,
    /// Tail-loss-probe retransmissions (RACK-TLP).
    pub retrans_tlp: u64,
    /// Retransmissions of both endpoints (SYN retransmissions included), for pcap cross-checks.
    pub retrans_both_directions: u64,
    pub srtt_end_ns: Option<u64>,
    pub min_rtt_ns: Option<u64>,
    pub handshake_rtt_ns: Option<u64>,
    pub max_cwnd_bytes: u64,
    pub cwnd_end_bytes: u64,
    pub zero_window_probes: u64,
    pub data_segments_sent: u64,
}

/// Per-link-direction metrics (one row of the `links` table).
#[derive(Clone, Debug, PartialEq)]
pub struct LinkMetrics {
    pub link: String,
    pub from: String,
    pub to: String,
    pub rate_bps: u64,
    pub delay_ns: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub queue_drops: u64,
    pub loss_drops: u64,
    pub mean_queue_packets: f64,
    pub mean_queue_bytes: f64,
    pub max_queue_packets: u64,
    pub max_queue_bytes: u64,
    pub utilization: f64,
}

/// One sample of a flow's sender state.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowSample {
    pub t_ns: u64,
    pub flow: u32,
    pub cwnd_bytes: u64,
    pub ssthresh_bytes: u64,
    pub srtt_ns: Option<u64>,
    pub bytes_in_flight: u64,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub peer_window_bytes: u64,
}

/// One sample of a link direction's queue.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QueueSample {
    pub t_ns: u64,
    pub channel: u32,
    pub packets: u64,
    pub bytes: u64,
    /// Cumulative bytes the channel has accepted for transmission (for utilisation over a window).
    pub tx_bytes: u64,
}

/// Everything a run produces (pcaps are written to files as the run goes).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Results {
    pub scenario: String,
    pub seed: u64,
    pub duration_ns: u64,
    pub flows: Vec<FlowMetrics>,
    pub links: Vec<LinkMetrics>,
    pub events: Vec<TcpLogEvent>,
    pub flow_samples: Vec<FlowSample>,
    pub queue_samples: Vec<QueueSample>,
    /// (flow, record) of every request of request/response flows.
    pub requests: Vec<(u32, RequestRecord)>,
    /// Channel index → (link name, from node name, to node name), for the queue samples.
    pub channels: Vec<(String, String, String)>,
    pub pcap_files: Vec<PathBuf>,
    /// Node index → name (events carry node indices).
    pub node_names: Vec<String>,
    pub events_processed: u64,
    pub packets_sent: u64,
    pub unroutable: u64,
    /// Video tables (empty without video flows).
    pub video_clients: Vec<ClientQoe>,
    pub video_segments: Vec<SegmentRow>,
    pub video_stalls: Vec<StallRow>,
    pub video_buffer: Vec<BufferSample>,
    /// One row per progressive-download flow (empty without them).
    pub progressive: Vec<ProgressiveRow>,
}

pub struct Simulation {
    sc: Scenario,
    net: Network,
    pool: PacketPool,
    q: EventQueue,
    eps: Vec<EpSlot>,
    cfgs: Vec<TcpConfig>,
    flows: Vec<FlowRt>,
    out: Vec<Packet>,
    log: Vec<TcpLogEvent>,
    ev_bufs: Vec<Vec<SocketEvent>>,
    events: Vec<TcpLogEvent>,
    flow_samples: Vec<FlowSample>,
    queue_samples: Vec<QueueSample>,
    isns: Vec<(u32, u32)>,
    end: Time,
    pcap_files: Vec<PathBuf>,
    packets_sent: u64,
    site: Option<VideoSite>,
    /// Real payload bytes for the pcaps (only when a video app runs and pcaps are recorded).
    payloads: Option<SharedPayloads>,
    video_buffer: Vec<BufferSample>,
    /// Crowdlive connections and the front-end (seed 000), and their ground truth.
    crowd: Option<FrontEnd>,
    truth: Option<Truth>,
    out_dir: Option<PathBuf>,
    conns: ConnTable,
}

/// `[video]` → the origin's site (content and live source).
fn video_site(sc: &Scenario) -> Result<Option<VideoSite>, ScenarioError> {
    use tcpvideo_model::video::{Content, Ladder, LiveSource, SizeSource};
    let Some(v) = &sc.video else { return Ok(None) };
    let e = |x: tcpvideo_model::video::VideoError| ScenarioError(x.to_string());
    let ladder = Ladder::from_kbps("video.ladder_kbps", &v.ladder_kbps).map_err(e)?;
    let sizes = if v.vbr { SizeSource::Vbr(Default::default()) } else { SizeSource::Cbr };
    let mut rng = sub_rng(sc.seed, streams::VIDEO);
    let content = Content::build(ladder, v.segment_duration, v.segments, &sizes, &mut rng).map_err(e)?;
    let live = LiveSource::new(Time::ZERO + v.live_start, v.segment_duration, v.segments, v.window_segments).map_err(e)?;
    let any_live = sc.flows.iter().any(|f| matches!(f.app, AppDef::Video { live: true, .. }));
    Ok(Some(VideoSite { content, live: any_live.then_some(live), format: if v.dash { StreamFormat::Dash } else { StreamFormat::Hls } }))
}

/// A client's player for flow `i` (validated: errors name the flow's `player` keys).
fn player_app(site: &VideoSite, def: &crate::scenario::PlayerDef, live: bool, start: Time, path: &str) -> Result<PlayerApp, ScenarioError> {
    use tcpvideo_model::video::{abr, Availability, CatchUp, Player, PlayerConfig, RequestTiming};
    let d = site.content.segment_duration();
    let rename = |x: tcpvideo_model::video::VideoError| {
        let m = x.to_string();
        ScenarioError(m.strip_prefix("client.").map(|r| format!("{path}.{r}")).unwrap_or(m))
    };
    let mut cfg = PlayerConfig::seed004(d);
    cfg.buffer_target_segments = def.buffer_segments;
    cfg.catch_up = if def.catch_up { CatchUp::JumpToLive } else { CatchUp::Never };
    cfg.live_start_behind = def.live_start_behind;
    let availability = match (live, site.live) {
        (true, Some(src)) => {
            if def.clocked {
                cfg.request_timing = RequestTiming::clocked_from_arrival(start, src.t0, d);
            } else if def.distributed {
                cfg.request_timing = RequestTiming::distributed_from_arrival(start, src.t0, d);
            }
            Availability::Live(src)
        }
        _ => Availability::OnDemand,
    };
    let setup = abr::AbrSetup { ladder: site.content.ladder().clone(), segment_duration: d, buffer_target: cfg.buffer_target(d), live };
    let rule = abr::build(&format!("{path}.abr"), &def.abr, &setup, &abr::Params(def.abr_params.clone())).map_err(rename)?;
    let player = Player::new(site.content.clone(), availability, rule, cfg).map_err(rename)?;
    let refresh = if def.playlist_every_segment { PlaylistRefresh::EverySegment } else { PlaylistRefresh::Once };
    Ok(PlayerApp::new(player, refresh, def.per_segment_connections))
}

impl Simulation {
    /// Set up a run. Pcaps (if the scenario asks for any) are written into `out_dir`.
    pub fn new(sc: Scenario, out_dir: Option<&Path>) -> Result<Simulation, SimError> {
        let mut net = Network::from_defs(&sc.nodes, &sc.links, sc.seed);
        let mut pcap_files = Vec::new();
        if !sc.record.pcaps.is_empty() {
            let Some(dir) = out_dir else {
                return Err(ScenarioError("record.pcap: pcap capture needs an output directory (--out)".into()).into());
            };
            std::fs::create_dir_all(dir).map_err(|e| SimError::Io(format!("{}: {e}", dir.display())))?;
            let res = if sc.record.nanosecond_pcap { TsResolution::Nano } else { TsResolution::Micro };
            for pc in &sc.record.pcaps {
                let path = dir.join(&pc.file);
                let f = std::fs::File::create(&path).map_err(|e| SimError::Io(format!("{}: {e}", path.display())))?;
                let sink = PcapSink::new(Box::new(BufWriter::with_capacity(1 << 16, f)), sc.record.snaplen, res)
                    .map_err(|e| SimError::Io(format!("{}: {e}", path.display())))?;
                let t = net.taps.len() as u16;
                net.taps.push(sink);
                let l = &net.links[pc.link as usize];
                let (tx, rx) = if pc.at == l.a { (l.ab, l.ba) } else { (l.ba, l.ab) };
                net.channels[tx as usize].tap_tx = Some(t);
                net.channels[rx as usize].tap_rx = Some(t);
                pcap_files.push(path);
            }
        }
        let site = video_site(&sc)?;
        let has_http = site.is_some() || sc.flows.iter().any(|f| matches!(f.app, AppDef::Progressive(_)));
        let any_crowd = sc.flows.iter().any(|f| matches!(f.app, AppDef::Crowd { .. }));
        let mut crowd = any_crowd.then(FrontEnd::default);
        let mut truth = any_crowd.then(Truth::default);
        if any_crowd {
            net.drop_log = Some(Vec::new());
        }
        if sc.record.sample_interval.is_none() {
            // Queue samples read every channel mid-run; otherwise single-feeder hops forward straight on.
            net.enable_cut_through(Time::ZERO + sc.duration);
        }
        let payloads = ((has_http || any_crowd) && !net.taps.is_empty()).then(|| SharedPayloads::new(PayloadBook::default().into()));
        for t in net.taps.iter_mut() {
            t.payloads = payloads.clone();
        }
        let mut cfgs = Vec::with_capacity(sc.flows.len());
        let mut flows = Vec::with_capacity(sc.flows.len());
        let mut q = EventQueue::new();
        let mut isn_rng = sub_rng(sc.seed, streams::ISN);
        let mut isns = Vec::with_capacity(sc.flows.len());
        for (i, f) in sc.flows.iter().enumerate() {
            let mut cfg = tcp_config(&f.tcp, &format!("flow[{i}].tcp"))?;
            if let (AppDef::Progressive(p), None) = (&f.app, &f.tcp.cc) {
                cfg.cc = p.mode.congestion_control().map_or(cfg.cc, str::to_string);
                // mode "bbr"
            }
            // Build once to validate cc name/params with this flow's MSS.
            tcpvideo_model::cc::build(&cfg.cc, &tcpvideo_model::cc::CcConfig::default(), &cfg.cc_params)
                .map_err(|e| ScenarioError(format!("flow[{i}].tcp.cc: {e}")))?;
            cfgs.push(cfg);
            isns.push((isn_rng.gen::<u32>(), isn_rng.gen::<u32>()));
            let start = Time::ZERO + f.start;
            let (app, sender, receiver) = match &f.app {
                AppDef::Bulk { bytes, direction, close } => {
                    let (s, r) = match direction {
                        Direction::Down => (2 * i as u32 + 1, 2 * i as u32),
                        Direction::Up => (2 * i as u32, 2 * i as u32 + 1),
                    };
                    (AppState::Bulk(Bulk::new(*bytes, *close)), s, r)
                }
                AppDef::ReqResp { requests } => (AppState::ReqResp(ReqResp::new(requests.clone(), start)), 2 * i as u32 + 1, 2 * i as u32),
                AppDef::Video { live, player } => {
                    let site = site.as_ref().ok_or_else(|| ScenarioError(format!("flow[{i}].app: a video app needs a [video] table")))?;
                    let path = format!("{}.player", f.name);
                    let app = player_app(site, player, *live, start, &path)?;
                    let conn = VideoConn {
                        client: app,
                        origin: OriginConn::default(),
                        wire: HttpWire::default(),
                        srtt_at_done: Vec::new(),
                        done_buf: Vec::new(),
                    };
                    (AppState::Video(Box::new(conn)), 2 * i as u32 + 1, 2 * i as u32)
                }
                AppDef::Progressive(def) => (AppState::Progressive(Box::new(ProgressiveConn::new(def))), 2 * i as u32 + 1, 2 * i as u32),
                AppDef::Crowd { publisher, channel, stream_for, publish } => {
                    let fe = crowd.as_mut().expect("crowd front-end");
                    truth.as_mut().expect("crowd truth").track(i, *publisher, *channel);
                    let (c, s) = (2 * i as u32, 2 * i as u32 + 1);
                    if *publisher {
                        fe.add_publisher(
                            i,
                            *channel,
                            start,
                            *stream_for,
                            sub_rng(sc.seed, streams::CROWD_BASE + i as u64),
                            publish.clone(),
                        );
                        (AppState::Crowd, c, s)
                    } else {
                        fe.add_subscriber(i, *channel, start, *stream_for, publish);
                        (AppState::Crowd, s, c)
                    }
                }
            };
            let reader = Reader::new(f.reader.clone(), start);
            for t in reader.pause_ends() {
                q.push(t, Event::App { app: i as u32, kind: kind::READ });
            }
            for (k, (at, _)) in f.clamps.iter().enumerate() {
                q.push(start + *at, Event::App { app: i as u32, kind: kind::CLAMP + k as u32 });
            }
            q.push(start, Event::App { app: i as u32, kind: kind::START });
            flows.push(FlowRt {
                client: f.client,
                server: f.server,
                start,
                app,
                data_sender: sender,
                data_receiver: receiver,
                reader,
                completed_at: None,
                clamp_packets: None,
                conn: i as u32,
                retired: Retired::default(),
            });
        }
        if let Some(iv) = sc.record.sample_interval {
            q.push(Time::ZERO + iv, Event::Sample);
        }
        if let Some(fe) = crowd.as_mut() {
            fe.book = payloads.clone();
        }
        let end = Time::ZERO + sc.duration;
        let eps = (0..2 * flows.len()).map(|_| EpSlot { ep: None, gen: 0, armed: None }).collect();
        let conns = ConnTable::new(flows.len(), sub_rng(sc.seed, streams::CONN_ISN));
        Ok(Simulation {
            sc,
            net,
            pool: PacketPool::default(),
            q,
            eps,
            cfgs,
            flows,
            out: Vec::with_capacity(64),
            log: Vec::with_capacity(16),
            ev_bufs: Vec::new(),
            events: Vec::new(),
            flow_samples: Vec::new(),
            queue_samples: Vec::new(),
            isns,
            end,
            pcap_files,
            packets_sent: 0,
            site,
            payloads,
            video_buffer: Vec::new(),
            crowd,
            truth,
            out_dir: out_dir.map(Path::to_path_buf),
            conns,
        })
    }

    pub fn now(&self) -> Time {
        self.q.now()
    }

    /// Forward hop by hop, one arrival event per packet per hop, as before cut-through hops
    /// (`network.rs`); results are identical either way (the golden check and a test compare).
    /// Call before running.
    pub fn without_cut_through(mut self) -> Self {
        self.net.disable_cut_through();
        self
    }

    /// Channels forwarding straight on (cut-through).
    pub fn cut_through_channels(&self) -> Vec<u32> {
        self.net.cut_through_channels()
    }

    pub fn end(&self) -> Time {
        self.end
    }

    pub fn events_processed(&self) -> u64 {
        self.q.processed
    }

    /// Packets emitted by endpoints so far.
    pub fn packets_sent(&self) -> u64 {
        self.packets_sent
    }

    /// Process every event up to `t` (capped at the scenario's end). Returns true when the run is
    /// over. Running in chunks gives the same result as running at once.
    pub fn run_until(&mut self, t: Time) -> bool {
        let horizon = t.min(self.end);
        while let Some((now, ev)) = self.q.pop_until(horizon) {
            match ev {
                Event::Arrive { chan, pkt } => {
                    if let Some((node, p)) = self.net.arrive(now, chan, pkt, &mut self.pool, &mut self.q) {
                        self.deliver(now, node, &p);
                    }
                }
                Event::Timer { ep, gen } => {
                    let slot = &mut self.eps[ep as usize];
                    if slot.gen == gen {
                        slot.armed = None;
                        if let Some(e) = slot.ep.as_mut() {
                            e.on_timer(now, &mut self.out, &mut self.log);
                            self.settle(now, ep);
                        }
                    }
                }
                Event::App { app, kind } => self.app_event(now, app, kind),
                Event::Sample => {
                    self.sample(now);
                    if let Some(iv) = self.sc.record.sample_interval {
                        self.q.push(now + iv, Event::Sample);
                    }
                }
            }
        }
        self.q.advance_to(horizon);
        horizon >= self.end
    }

    /// Run to the end.
    pub fn run(&mut self) {
        self.run_until(self.end);
    }

    fn deliver(&mut self, now: Time, node: u32, p: &Packet) {
        let c = p.flow;
        if c as usize >= self.conns.len() {
            return;
        }
        let f = self.conns.flow_of(c);
        let flow = &self.flows[f];
        let ep = if node == flow.client {
            2 * c
        } else if node == flow.server {
            2 * c + 1
        } else {
            return;
        };
        if let Some(e) = self.eps[ep as usize].ep.as_mut() {
            e.on_packet(now, p, &mut self.out, &mut self.log);
            if let (AppState::Progressive(c), 1) = (&mut self.flows[f].app, ep % 2) {
                c.server.observe(now, e);
            }
            if ep % 2 == 1 {
                if let Some(tr) = self.truth.as_mut().filter(|t| t.tracks(f)) {
                    tr.received(now, p, Snapshot::of(e, Self::crowd_unsent(&self.crowd, f)));
                }
            }
            self.settle(now, ep);
        }
    }

    /// Bytes the front-end's application holds for flow `f` that its socket has not taken.
    fn crowd_unsent(crowd: &Option<FrontEnd>, f: usize) -> u64 {
        use crate::app::crowd::front_end::CrowdFlow;
        match crowd.as_ref().and_then(|c| c.flows.get(f)).and_then(|x| x.as_ref()) {
            Some(CrowdFlow::Subscriber(s)) => s.down.unsent,
            _ => 0,
        }
    }

    /// Drain what endpoint `ep` produced; react to its socket events; re-arm its timer.
    fn settle(&mut self, now: Time, ep: u32) {
        if ep % 2 == 1 && self.conns.is_first(ep / 2) && (!self.out.is_empty() || !self.log.is_empty()) {
            let f = (ep / 2) as usize;
            if let (Some(tr), Some(e)) = (self.truth.as_mut().filter(|t| t.tracks(f)), self.eps[ep as usize].ep.as_ref()) {
                tr.sent(now, f, &self.out, &self.log, Snapshot::of(e, Self::crowd_unsent(&self.crowd, f)));
            }
        }
        for p in self.out.drain(..) {
            self.packets_sent += 1;
            self.net.send(now, p, &mut self.pool, &mut self.q);
        }
        if !self.log.is_empty() {
            if self.sc.record.events {
                if !self.conns.is_first(ep / 2) {
                    for ev in self.log.iter_mut() {
                        self.conns.label_with_flow(ev);
                    }
                }
                self.events.extend_from_slice(&self.log);
            }
            self.log.clear();
        }
        let mut evs = self.ev_bufs.pop().unwrap_or_default();
        if let Some(e) = self.eps[ep as usize].ep.as_mut() {
            e.take_events(&mut evs);
        }
        for &sev in &evs {
            self.socket_event(now, ep, sev);
        }
        evs.clear();
        self.ev_bufs.push(evs);
        let slot = &mut self.eps[ep as usize];
        if let Some(t) = slot.ep.as_ref().and_then(|e| e.next_timer()) {
            if slot.armed.is_none_or(|a| t < a) {
                slot.gen = slot.gen.wrapping_add(1);
                slot.armed = Some(t);
                self.q.push(t.max(now), Event::Timer { ep, gen: slot.gen });
            }
        }
    }

    /// Flush endpoint `ep` after the application touched it, then settle it.
    fn touch(&mut self, now: Time, ep: u32) {
        if let Some(e) = self.eps[ep as usize].ep.as_mut() {
            e.flush(now, &mut self.out, &mut self.log);
            self.settle(now, ep);
        }
    }

    fn ep_mut(&mut self, ep: u32) -> Option<&mut TcpEndpoint> {
        self.eps[ep as usize].ep.as_deref_mut()
    }

    fn socket_event(&mut self, now: Time, ep: u32, sev: SocketEvent) {
        let f = self.conns.flow_of(ep / 2);
        let is_sender = ep == self.flows[f].data_sender;
        let is_client = ep.is_multiple_of(2);
        if matches!(self.flows[f].app, AppState::Video(_)) && self.video_connection_event(now, f, ep, sev) {
            return;
        }
        match sev {
            SocketEvent::Connected | SocketEvent::Writable => {
                let touched = match &mut self.flows[f].app {
                    AppState::Bulk(b) => {
                        if is_sender {
                            let e = self.eps[ep as usize].ep.as_mut().expect("endpoint");
                            b.fill(e)
                        } else {
                            false
                        }
                    }
                    AppState::Video(v) => {
                        let e = self.eps[ep as usize].ep.as_mut().expect("endpoint");
                        if !is_client {
                            v.origin.push(e)
                        } else if sev == SocketEvent::Connected {
                            let site = self.site.as_ref().expect("video site");
                            let wake = v.client.on_connected(now, site, &mut v.wire, ep / 2, self.payloads.as_ref(), e);
                            if let Some(t) = wake {
                                Self::schedule_wake(&mut self.q, &mut v.client, f, now, t);
                            }
                            true
                        } else {
                            v.client.push(e)
                        }
                    }
                    AppState::Progressive(c) => {
                        let e = self.eps[ep as usize].ep.as_mut().expect("endpoint");
                        if !is_client {
                            let wake = c.server.serve(now, e);
                            Self::schedule_serve(&mut self.q, &mut c.server.wake_at, f, now, wake);
                            true
                        } else if sev == SocketEvent::Connected {
                            c.client.on_connected(f as u32, self.payloads.as_ref(), e)
                        } else {
                            c.client.push(e)
                        }
                    }
                    AppState::Crowd => {
                        let e = self.eps[ep as usize].ep.as_mut().expect("endpoint");
                        let fe = self.crowd.as_mut().expect("crowd front-end");
                        if !is_client {
                            fe.server_writable(f, e)
                        } else if sev == SocketEvent::Connected {
                            if let Some(t) = fe.client_connected(now, f, e) {
                                let k = if fe.is_publisher(f) { kind::CROWD_SLOT } else { kind::CROWD_LEAVE };
                                self.q.push(t, Event::App { app: f as u32, kind: k });
                            }
                            true
                        } else {
                            fe.client_writable(f, e)
                        }
                    }
                    AppState::ReqResp(r) => {
                        let e = self.eps[ep as usize].ep.as_mut().expect("endpoint");
                        if is_client {
                            let t = r.push_client(e);
                            if sev == SocketEvent::Connected {
                                if let Some(at) = r.next_request_time() {
                                    self.q.push(at.max(now), Event::App { app: f as u32, kind: kind::REQUEST });
                                }
                            }
                            t
                        } else {
                            r.push_server(e)
                        }
                    }
                };
                if touched {
                    self.touch(now, ep);
                }
            }
            SocketEvent::Readable | SocketEvent::PeerClosed => {
                if matches!(self.flows[f].app, AppState::Crowd) {
                    self.crowd_readable(now, f, ep, sev == SocketEvent::PeerClosed);
                } else if ep == self.flows[f].data_receiver {
                    self.read(now, f);
                } else if let AppState::Video(v) = &mut self.flows[f].app {
                    // The origin reads requests as they arrive.
                    let e = self.eps[ep as usize].ep.as_mut().expect("endpoint");
                    let n = e.recv(u64::MAX);
                    let site = self.site.as_ref().expect("video site");
                    if v.origin.on_read(now, n, site, &mut v.wire, ep / 2, self.payloads.as_ref(), e) || n > 0 {
                        self.touch(now, ep);
                    }
                } else if let AppState::Progressive(c) = &mut self.flows[f].app {
                    let e = self.eps[ep as usize].ep.as_mut().expect("endpoint");
                    let n = e.recv(u64::MAX);
                    if c.request_complete_after(n) {
                        let wake = c.server.on_request(now, f as u32, self.payloads.as_ref(), e);
                        Self::schedule_serve(&mut self.q, &mut c.server.wake_at, f, now, wake);
                    }
                    if n > 0 {
                        self.touch(now, ep);
                    }
                } else if let AppState::ReqResp(r) = &mut self.flows[f].app {
                    // The server reads requests as they arrive.
                    let e = self.eps[ep as usize].ep.as_mut().expect("endpoint");
                    if r.server_readable(e) {
                        self.touch(now, ep);
                    }
                } else {
                    // Bulk sender side: discard anything the peer sent.
                    if let Some(e) = self.ep_mut(ep) {
                        if e.recv(u64::MAX) > 0 {
                            self.touch(now, ep);
                        }
                    }
                }
            }
            SocketEvent::AllAcked | SocketEvent::Closed | SocketEvent::Reset => {}
        }
    }

    /// Socket events of a video flow's connections that are not the ordinary request/response
    /// path: a finished connection's late events, the origin closing after the client, and
    /// retiring a connection once both ends are closed. Returns true if handled.
    fn video_connection_event(&mut self, now: Time, f: usize, ep: u32, sev: SocketEvent) -> bool {
        let c = ep / 2;
        let current = c == self.flows[f].conn;
        match sev {
            SocketEvent::Closed => {
                self.retire_if_closed(f, c);
                true
            }
            // The client closed (per-segment connections): the origin reads the FIN and closes too.
            SocketEvent::PeerClosed if ep % 2 == 1 => {
                if let Some(e) = self.eps[ep as usize].ep.as_mut() {
                    e.recv(u64::MAX);
                    e.close();
                    self.touch(now, ep);
                }
                true
            }
            // A connection the player has moved on from: nothing left to read or write.
            _ if !current => {
                if let Some(e) = self.eps[ep as usize].ep.as_mut() {
                    if e.recv(u64::MAX) > 0 {
                        self.touch(now, ep);
                    }
                }
                true
            }
            _ => false,
        }
    }

    /// After the player ran: close the connection whose segment it has read, open the one the
    /// next segment waits for (per-segment connections).
    fn video_connection_changes(&mut self, now: Time, f: usize) {
        let AppState::Video(v) = &mut self.flows[f].app else { return };
        if v.client.wants_close {
            v.client.wants_close = false;
            let ep = 2 * self.flows[f].conn;
            if let Some(e) = self.eps[ep as usize].ep.as_mut() {
                e.close();
                self.touch(now, ep);
            }
        }
        let AppState::Video(v) = &mut self.flows[f].app else { return };
        if v.client.wants_connection {
            v.client.reset_for_new_connection();
            v.wire = HttpWire::default();
            v.origin = OriginConn::default();
            let old = self.flows[f].conn;
            let (c, isns) = self.conns.open(f);
            self.eps.extend((0..2).map(|_| EpSlot { ep: None, gen: 0, armed: None }));
            let fl = &mut self.flows[f];
            fl.conn = c;
            fl.data_sender = 2 * c + 1;
            fl.data_receiver = 2 * c;
            self.retire_if_closed(f, old);
            self.open_connection(now, f, c, isns);
        }
    }

    /// Drop a flow's finished connection `c` once both its ends are closed, keeping its counts.
    fn retire_if_closed(&mut self, f: usize, c: u32) {
        if c == self.flows[f].conn {
            return;
        }
        let (ci, si) = (2 * c as usize, 2 * c as usize + 1);
        let closed = |s: &EpSlot| s.ep.as_ref().is_some_and(|e| e.state() == TcpState::Closed);
        if closed(&self.eps[ci]) && closed(&self.eps[si]) {
            let (cl, sv) = (self.eps[ci].ep.take().expect("client"), self.eps[si].ep.take().expect("server"));
            self.flows[f].retired.add(sv.stats(), cl.stats());
        }
    }

    /// A crowdlive socket has data or its peer closed.
    fn crowd_readable(&mut self, now: Time, f: usize, ep: u32, peer_closed: bool) {
        if ep == self.flows[f].data_receiver {
            self.read(now, f);
        } else if let (Some(e), Some(fe)) = (self.eps[ep as usize].ep.as_mut(), self.crowd.as_mut()) {
            // The side that only sends: the front-end reads a subscriber's GET; a publisher
            // discards anything (the front-end sends nothing on an upload).
            let n = e.recv(u64::MAX);
            let touched = if ep % 2 == 1 { fe.subscriber_request_read(f, n, e) } else { false };
            if touched || n > 0 {
                self.touch(now, ep);
            }
        }
        if peer_closed {
            // Either side closes when the other did: the publisher after the front-end's idle
            // close, the front-end after a viewer left.
            if let Some(e) = self.eps[ep as usize].ep.as_mut() {
                e.close();
                self.touch(now, ep);
            }
        }
    }

    /// The data receiver's application reads per its reader policy.
    fn read(&mut self, now: Time, f: usize) {
        let ep = self.flows[f].data_receiver;
        let sender_srtt = match self.flows[f].app {
            AppState::Video(_) => self.eps[self.flows[f].data_sender as usize].ep.as_ref().and_then(|s| s.srtt()),
            _ => None,
        };
        let Some(e) = self.eps[ep as usize].ep.as_mut() else { return };
        let flow = &mut self.flows[f];
        let (n, outcome) = match &flow.app {
            AppState::Progressive(c) if c.client.reads_by_player() => c.client.read_by_player(now, e),
            _ => flow.reader.read(now, e),
        };
        if let AppState::Bulk(b) = &flow.app {
            if let (Some(total), None) = (b.total, flow.completed_at) {
                if e.stats().bytes_received >= total {
                    flow.completed_at = Some(now);
                }
            }
        }
        let mut next_req = None;
        if let AppState::ReqResp(r) = &mut flow.app {
            if n > 0 && r.client_read(now, n) {
                next_req = r.next_request_time();
            }
        }
        if let AppState::Progressive(c) = &mut flow.app {
            c.client.on_read(now, n);
        }
        let mut crowd_feed = Vec::new();
        if matches!(flow.app, AppState::Crowd) && n > 0 {
            if let Some(fe) = self.crowd.as_mut() {
                crowd_feed = fe.upload_read(now, f, n);
                if let Some(t) = fe.idle_close_due(f) {
                    self.q.push(t, Event::App { app: f as u32, kind: kind::CROWD_IDLE });
                }
            }
        }
        let mut video_touch = false;
        if let AppState::Video(v) = &mut flow.app {
            if n > 0 && v.client.on_read(now, n, &mut v.wire, &mut v.done_buf) {
                for c in v.done_buf.drain(..) {
                    if let Some(s) = sender_srtt {
                        v.srtt_at_done.push((c.segment, s));
                    }
                }
                let site = self.site.as_ref().expect("video site");
                if let Some(t) = v.client.drive(now, site, &mut v.wire, ep / 2, self.payloads.as_ref()) {
                    Self::schedule_wake(&mut self.q, &mut v.client, f, now, t);
                }
                video_touch = v.client.push(e);
            }
        }
        if let ReadOutcome::WakeAt(t) = outcome {
            if flow.reader.wake_at.is_none_or(|w| w <= now || t < w) {
                flow.reader.wake_at = Some(t);
                self.q.push(t, Event::App { app: f as u32, kind: kind::READ });
            }
        }
        if let Some(t) = next_req {
            self.q.push(t.max(now), Event::App { app: f as u32, kind: kind::REQUEST });
        }
        if n > 0 || video_touch {
            self.touch(now, ep);
        }
        for sf in crowd_feed {
            let sep = 2 * sf + 1;
            if let (Some(e), Some(fe)) = (self.eps[sep as usize].ep.as_mut(), self.crowd.as_mut()) {
                if fe.feed(sf as usize, e) {
                    self.touch(now, sep);
                }
            }
        }
        if video_touch || n > 0 {
            self.video_connection_changes(now, f);
        }
    }

    /// Schedule a player wake-up at `t` unless an earlier one is pending.
    fn schedule_wake(q: &mut EventQueue, app: &mut PlayerApp, f: usize, now: Time, t: Time) {
        if app.wake_at.is_none_or(|w| w <= now || t < w) {
            app.wake_at = Some(t);
            q.push(t.max(now), Event::App { app: f as u32, kind: kind::REQUEST });
        }
    }

    /// Schedule the progressive server's pacing wake-up at `t` unless an earlier one is pending.
    fn schedule_serve(q: &mut EventQueue, wake_at: &mut Option<Time>, f: usize, now: Time, t: Option<Time>) {
        if let Some(t) = t {
            if wake_at.is_none_or(|w| w <= now || t < w) {
                *wake_at = Some(t);
                q.push(t.max(now), Event::App { app: f as u32, kind: kind::SERVE });
            }
        }
    }

    fn app_event(&mut self, now: Time, app: u32, k: u32) {
        let f = app as usize;
        match k {
            kind::SERVE => {
                let ep = 2 * f as u32 + 1;
                let Some(e) = self.eps[ep as usize].ep.as_mut() else { return };
                let AppState::Progressive(c) = &mut self.flows[f].app else { return };
                if c.server.wake_at.is_some_and(|w| w <= now) {
                    c.server.wake_at = None;
                }
                let wake = c.server.serve(now, e);
                Self::schedule_serve(&mut self.q, &mut c.server.wake_at, f, now, wake);
                self.touch(now, ep);
            }
            kind::START => {
                if let AppState::Video(v) = &mut self.flows[f].app {
                    v.client.join(now);
                }
                self.start_flow(now, f)
            }
            kind::REQUEST if matches!(self.flows[f].app, AppState::Video(_)) => {
                let ep = 2 * self.flows[f].conn;
                let Some(e) = self.eps[ep as usize].ep.as_mut() else { return };
                let AppState::Video(v) = &mut self.flows[f].app else { return };
                if v.client.wake_at.is_some_and(|w| w <= now) {
                    v.client.wake_at = None;
                }
                let site = self.site.as_ref().expect("video site");
                if let Some(t) = v.client.drive(now, site, &mut v.wire, ep / 2, self.payloads.as_ref()) {
                    Self::schedule_wake(&mut self.q, &mut v.client, f, now, t);
                }
                if v.client.push(e) {
                    self.touch(now, ep);
                }
                self.video_connection_changes(now, f);
            }
            kind::REQUEST => {
                let ep = 2 * f as u32;
                let Some(e) = self.eps[ep as usize].ep.as_mut() else { return };
                if let AppState::ReqResp(r) = &mut self.flows[f].app {
                    if r.next_request_time().is_some_and(|t| t <= now) && r.issue(now, e) {
                        self.touch(now, ep);
                    }
                }
            }
            kind::CROWD_SLOT | kind::CROWD_LEAVE | kind::CROWD_IDLE => self.crowd_event(now, f, k),
            kind::READ => {
                if self.flows[f].reader.wake_at.is_some_and(|w| w <= now) {
                    self.flows[f].reader.wake_at = None;
                }
                self.read(now, f);
            }
            c if c >= kind::CLAMP => {
                let idx = (c - kind::CLAMP) as usize;
                let clamp = self.sc.flows[f].clamps[idx].1;
                self.flows[f].clamp_packets = clamp;
                self.apply_clamp(now, f);
            }
            _ => {}
        }
    }

    /// A publisher's frame slot, a viewer leaving, or the front-end's idle check.
    fn crowd_event(&mut self, now: Time, f: usize, k: u32) {
        let ep = if k == kind::CROWD_IDLE { 2 * f as u32 + 1 } else { 2 * f as u32 };
        let (Some(e), Some(fe)) = (self.eps[ep as usize].ep.as_mut(), self.crowd.as_mut()) else { return };
        let touched = match k {
            kind::CROWD_SLOT => {
                if let Some(t) = fe.publisher_slot(now, f, e) {
                    self.q.push(t, Event::App { app: f as u32, kind: kind::CROWD_SLOT });
                }
                true
            }
            kind::CROWD_LEAVE => fe.subscriber_leave(now, f, e),
            _ => fe.idle_close(now, f, e),
        };
        if touched {
            self.touch(now, ep);
        }
    }

    fn apply_clamp(&mut self, now: Time, f: usize) {
        let ep = self.flows[f].data_sender;
        let clamp = self.flows[f].clamp_packets;
        if let Some(e) = self.eps[ep as usize].ep.as_mut() {
            let mss = e.mss_bytes();
            e.set_cwnd_clamp(clamp.map(|p| p * mss));
            self.touch(now, ep);
        }
    }

    fn start_flow(&mut self, now: Time, f: usize) {
        self.open_connection(now, f, f as u32, self.isns[f]);
    }

    /// Open connection `c` of flow `f` (client connects, server listens) with ISNs `(ci, si)`.
    fn open_connection(&mut self, now: Time, f: usize, c: u32, (ci, si): (u32, u32)) {
        let (client, server) = (self.flows[f].client, self.flows[f].server);
        let port = client_port(c);
        let ca = Addr { node: client, ip: Network::ip_of(client), port };
        let sa = Addr { node: server, ip: Network::ip_of(server), port: 80 };
        let cfg = &self.cfgs[f];
        let server_ep = TcpEndpoint::listen(cfg, c, sa, ca, si);
        // Crowdlive: keep-alives are the front-end's (seed §1.2), not the phone's.
        let client_cfg = match self.flows[f].app {
            AppState::Crowd => TcpConfig { keepalive: None, ..cfg.clone() },
            _ => cfg.clone(),
        };
        if let Some(tr) = self.truth.as_mut() {
            tr.opened(f, ci, si, port);
        }
        let client_ep = TcpEndpoint::connect(&client_cfg, c, ca, sa, ci, now, &mut self.out);
        match (client_ep, server_ep) {
            (Ok(cl), Ok(s)) => {
                if let Some(b) = &self.payloads {
                    b.lock().expect("payload book").open(c, client, ci, si);
                }
                self.eps[2 * c as usize].ep = Some(Box::new(cl));
                self.eps[2 * c as usize + 1].ep = Some(Box::new(s));
                if self.flows[f].clamp_packets.is_some() {
                    self.apply_clamp(now, f);
                }
                self.settle(now, 2 * c);
            }
            (Err(e), _) | (_, Err(e)) => {
                // Configuration errors are caught at construction; this is a safety net.
                self.out.clear();
                eprintln!("flow[{f}]: cannot open connection: {e}");
            }
        }
    }

    fn sample(&mut self, now: Time) {
        for (i, fl) in self.flows.iter_mut().enumerate() {
            if let AppState::Video(v) = &mut fl.app {
                v.client.player.advance(now);
                self.video_buffer.push(BufferSample::of(i as u32, now, &v.client.player));
            }
        }
        for (i, fl) in self.flows.iter().enumerate() {
            let (Some(s), Some(r)) = (self.eps[fl.data_sender as usize].ep.as_ref(), self.eps[fl.data_receiver as usize].ep.as_ref())
            else {
                continue;
            };
            self.flow_samples.push(FlowSample {
                t_ns: now.as_nanos(),
                flow: i as u32,
                cwnd_bytes: s.cwnd_bytes(),
                ssthresh_bytes: s.ssthresh_bytes(),
                srtt_ns: s.srtt().map(|d| d.as_nanos() as u64),
                bytes_in_flight: s.bytes_in_flight(),
                bytes_acked: s.stats().bytes_acked,
                bytes_received: r.stats().bytes_received,
                peer_window_bytes: s.peer_window_bytes(),
            });
        }
        for (ci, ch) in self.net.channels.iter_mut().enumerate() {
            if self.net.nodes[ch.from as usize].kind != NodeKind::Router
                && self.sc.record.sample_interval.is_some()
                && self.net.nodes.len() > 16
            {
                continue; // large topologies: sample router queues only
            }
            let (p, b) = ch.queue_at(now);
            self.queue_samples.push(QueueSample {
                t_ns: now.as_nanos(),
                channel: ci as u32,
                packets: p,
                bytes: b,
                tx_bytes: ch.stats.tx_bytes,
            });
        }
    }

    /// End the run: flush the pcaps and compute the tables.
    pub fn finish(mut self) -> Result<Results, SimError> {
        self.run();
        let end = self.end;
        for (i, t) in self.net.taps.iter_mut().enumerate() {
            t.drain(end);
            t.finish().map_err(|e| SimError::Io(format!("{}: {e}", self.pcap_files[i].display())))?;
        }
        if let (Some(mut tr), Some(dir)) = (self.truth.take(), self.out_dir.clone()) {
            for (at, p, cause) in self.net.drop_log.take().unwrap_or_default() {
                let from_client = self.flows.get(p.flow as usize).is_some_and(|fl| fl.client == p.src_node);
                tr.dropped(at, &p, from_client, cause);
            }
            let fe = self.crowd.as_ref().expect("crowd front-end");
            tr.write(&dir, |f| fe.spans(f).map(|x| x.1)).map_err(|e| SimError::Io(format!("{}: {e}", dir.display())))?;
        }
        let dur_ns = self.sc.duration.as_nanos() as f64;
        let mut flows = Vec::with_capacity(self.flows.len());
        for (i, fl) in self.flows.iter().enumerate() {
            let def = &self.sc.flows[i];
            let s = self.eps[fl.data_sender as usize].ep.as_ref();
            let r = self.eps[fl.data_receiver as usize].ep.as_ref();
            let c = self.eps[2 * fl.conn as usize].ep.as_ref();
            // The endpoint that is not the data sender is the data receiver.
            let (ss, rs) = fl.retired.total(s.map(|e| *e.stats()).unwrap_or_default(), r.map(|e| *e.stats()).unwrap_or_default());
            let other = rs;
            let fct = fl.completed_at.map(|t| t.saturating_since(fl.start).as_nanos() as u64);
            let until = fl.completed_at.unwrap_or(end);
            let active = until.saturating_since(fl.start).as_nanos() as f64;
            flows.push(FlowMetrics {
                flow: i as u32,
                name: def.name.clone(),
                client: self.sc.nodes[fl.client as usize].name.clone(),
                server: self.sc.nodes[fl.server as usize].name.clone(),
                cc: self.cfgs[i].cc.clone(),
                start_ns: fl.start.as_nanos(),
                base_rtt_ns: def.base_rtt.as_nanos() as u64,
                bytes: rs.bytes_received,
                bytes_read: rs.bytes_read,
                goodput_bps: if active > 0.0 { rs.bytes_received as f64 * 8e9 / active } else { 0.0 },
                fct_ns: fct,
                retrans_fast: ss.retrans_fast,
                retrans_timeout: ss.retrans_timeout,
                rto_count: ss.rto_count,
                retrans_tlp: ss.retrans_tlp,
                retrans_both_directions: ss.retrans_fast
                    + ss.retrans_timeout
                    + ss.retrans_tlp
                    + other.retrans_fast
                    + other.retrans_timeout
                    + other.retrans_tlp,
                srtt_end_ns: s.and_then(|e| e.srtt()).map(|d| d.as_nanos() as u64),
                min_rtt_ns: ss.min_rtt.map(|d| d.as_nanos() as u64),
                handshake_rtt_ns: c.and_then(|e| e.stats().handshake_rtt).map(|d| d.as_nanos() as u64),
                max_cwnd_bytes: ss.max_cwnd_bytes,
                cwnd_end_bytes: s.map(|e| e.cwnd_bytes()).unwrap_or(0),
                zero_window_probes: ss.zero_window_probes,
                data_segments_sent: ss.data_segments_sent,
            });
        }
        let mut links = Vec::with_capacity(self.net.channels.len());
        let mut channels = Vec::with_capacity(self.net.channels.len());
        for ch in self.net.channels.iter_mut() {
            let (wa, wba) = ch.wait_after(end);
            let st = ch.stats;
            let link = &self.net.links[ch.link as usize];
            let from = self.net.nodes[ch.from as usize].name.clone();
            let to = self.net.nodes[ch.to as usize].name.clone();
            channels.push((link.name.clone(), from.clone(), to.clone()));
            links.push(LinkMetrics {
                link: link.name.clone(),
                from,
                to,
                rate_bps: ch.rate.bits_per_sec,
                delay_ns: ch.delay.as_nanos() as u64,
                tx_packets: st.tx_packets,
                tx_bytes: st.tx_bytes,
                queue_drops: st.queue_drops,
                loss_drops: st.loss_drops,
                mean_queue_packets: (st.wait_ns - wa) as f64 / dur_ns,
                mean_queue_bytes: (st.wait_byte_ns - wba) as f64 / dur_ns,
                max_queue_packets: st.max_queue_packets,
                max_queue_bytes: st.max_queue_bytes,
                utilization: st.tx_bytes as f64 * 8e9 / (ch.rate.bits_per_sec as f64 * dur_ns),
            });
        }
        let mut requests = Vec::new();
        for (i, fl) in self.flows.iter().enumerate() {
            if let AppState::ReqResp(r) = &fl.app {
                requests.extend(r.records.iter().map(|rec| (i as u32, *rec)));
            }
        }
        let (mut video_clients, mut video_segments, mut video_stalls) = (Vec::new(), Vec::new(), Vec::new());
        // Each client's report looks at its own flow's events: group them once (in run order)
        // rather than have every report scan all of them (clients × events, ~1 % of an onoff run).
        let events_of = events_by_flow(&self.events, self.flows.len());
        for (i, fl) in self.flows.iter_mut().enumerate() {
            if let AppState::Video(v) = &mut fl.app {
                let def = &self.sc.flows[i];
                let flow_events: Vec<TcpLogEvent> = events_of[i].iter().map(|&k| self.events[k as usize]).collect();
                let rep = video_outputs::report(
                    i as u32,
                    &def.name,
                    fl.start,
                    end,
                    &mut v.client.player,
                    &v.srtt_at_done,
                    &flow_events,
                    fl.server,
                    def.base_rtt,
                );
                video_clients.push(rep.qoe);
                video_segments.extend(rep.segments);
                video_stalls.extend(rep.stalls);
            }
        }
        let mut progressive = Vec::new();
        for (i, fl) in self.flows.iter_mut().enumerate() {
            if let AppState::Progressive(c) = &mut fl.app {
                let r = progressive_outputs::row(i as u32, &self.sc.flows[i].name, c, self.eps[2 * i + 1].ep.as_deref(), end);
                video_clients.push(progressive_outputs::qoe(&r, fl.start, flows[i].bytes_read));
                progressive.push(r);
            }
        }
        Ok(Results {
            progressive,
            video_clients,
            video_segments,
            video_stalls,
            video_buffer: std::mem::take(&mut self.video_buffer),
            scenario: self.sc.name.clone(),
            seed: self.sc.seed,
            duration_ns: self.sc.duration.as_nanos() as u64,
            flows,
            links,
            events: std::mem::take(&mut self.events),
            flow_samples: std::mem::take(&mut self.flow_samples),
            queue_samples: std::mem::take(&mut self.queue_samples),
            requests,
            channels,
            pcap_files: self.pcap_files.clone(),
            node_names: self.sc.nodes.iter().map(|n| n.name.clone()).collect(),
            events_processed: self.q.processed,
            packets_sent: self.packets_sent,
            unroutable: self.net.unroutable,
        })
    }
}

/// Indices into `events` of each flow's events, in run order (`[f]` = flow `f`'s; flows ≥
/// `flows` are left out).
fn events_by_flow(events: &[TcpLogEvent], flows: usize) -> Vec<Vec<u32>> {
    let mut by_flow = vec![Vec::new(); flows];
    for (k, e) in events.iter().enumerate() {
        if let Some(v) = by_flow.get_mut(e.flow() as usize) {
            v.push(k as u32);
        }
    }
    by_flow
}

/// Convenience: load, run and finish.
pub fn run_scenario(sc: Scenario, out_dir: Option<&Path>) -> Result<Results, SimError> {
    Simulation::new(sc, out_dir)?.finish()
}
