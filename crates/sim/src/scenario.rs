//! Scenario files: what a simulation run contains, read from TOML (or the same structure as JSON,
//! which is how the Python API passes a dict), validated into a fully typed [`Scenario`].
//!
//! Two stages. [`parse_toml`]/[`parse_json`] deserialize the file with unknown keys rejected
//! (`deny_unknown_fields`) and the path of a bad value reported (`link[2].rate: ...`).
//! [`ScenarioFile::resolve`] then expands generators (the `dumbbell`, whose per-client base RTT is
//! drawn from a normal distribution with the run's seed, as in seed 004: 55±5 ms), parses quantities
//! with units, checks references (a link to a missing node, a flow between unreachable hosts) and
//! returns a [`Scenario`] with nodes, links and flows by index. Every error is ONE line that names
//! the field, e.g. `link[2].b: unknown node "r9"`. Every key is documented in docs/scenario.md.
//!
//! Quantities: a rate is a number of bit/s or a string with a unit (`"100Mbps"`, `"1 Gbit/s"`,
//! `"250kbps"`); a duration is a number of seconds or a string (`"55ms"`, `"2s"`, `"500us"`); a
//! size is a number of bytes or a string (`"10MB"`, `"64KiB"`).

use std::collections::BTreeMap;
use std::time::Duration;

use rand_distr::{Distribution, Normal};
use serde::Deserialize;
use tcpvideo_model::Bandwidth;

use crate::engine::{streams, sub_rng};
use crate::loss::LossSpec;
use crate::network::{NodeKind, QueueLimit};
use crate::tcp::config::default_cc;

/// A one-line scenario error naming the field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ScenarioError(pub String);

fn err<T>(path: impl std::fmt::Display, msg: impl std::fmt::Display) -> Result<T, ScenarioError> {
    Err(ScenarioError(format!("{path}: {msg}")))
}

/// A number or a string with a unit.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum Qty {
    Num(f64),
    Str(String),
}

fn split_unit(s: &str) -> Option<(f64, String)> {
    let s = s.trim();
    let idx = s.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+')).unwrap_or(s.len());
    let (num, unit) = s.split_at(idx);
    let v: f64 = num.trim().parse().ok()?;
    Some((v, unit.trim().to_string()))
}

impl Qty {
    fn value(&self, path: &str, kind: &str, units: &[(&str, f64)], default_unit: f64) -> Result<f64, ScenarioError> {
        let v = match self {
            Qty::Num(v) => *v * default_unit,
            Qty::Str(s) => {
                let Some((v, unit)) = split_unit(s) else {
                    return err(path, format!("cannot read {kind} {s:?}"));
                };
                let unit_l = unit.replace(' ', "");
                let Some((_, mult)) = units.iter().find(|(u, _)| *u == unit_l) else {
                    let known: Vec<&str> = units.iter().map(|(u, _)| *u).filter(|u| !u.is_empty()).collect();
                    return err(path, format!("unknown unit {unit:?} in {kind} {s:?} (use one of {})", known.join(", ")));
                };
                v * mult
            }
        };
        if !v.is_finite() {
            return err(path, format!("{kind} is not a finite number"));
        }
        if v < 0.0 {
            return err(path, format!("negative {kind}"));
        }
        Ok(v)
    }

    pub fn rate(&self, path: &str) -> Result<Bandwidth, ScenarioError> {
        const U: &[(&str, f64)] = &[
            ("", 1.0),
            ("bps", 1.0),
            ("bit/s", 1.0),
            ("kbps", 1e3),
            ("kbit", 1e3),
            ("kbit/s", 1e3),
            ("Kbps", 1e3),
            ("Mbps", 1e6),
            ("Mbit", 1e6),
            ("Mbit/s", 1e6),
            ("Gbps", 1e9),
            ("Gbit", 1e9),
            ("Gbit/s", 1e9),
        ];
        let v = self.value(path, "rate", U, 1.0)?;
        if v < 1.0 {
            return err(path, "rate must be positive");
        }
        Ok(Bandwidth::from_bps(v.round() as u64))
    }

    pub fn duration(&self, path: &str) -> Result<Duration, ScenarioError> {
        const U: &[(&str, f64)] = &[("s", 1e9), ("ms", 1e6), ("us", 1e3), ("µs", 1e3), ("ns", 1.0), ("min", 60e9)];
        let v = self.value(path, "duration", U, 1e9)?;
        Ok(Duration::from_nanos(v.round() as u64))
    }

    pub fn bytes(&self, path: &str) -> Result<u64, ScenarioError> {
        const U: &[(&str, f64)] = &[
            ("", 1.0),
            ("B", 1.0),
            ("kB", 1e3),
            ("KB", 1e3),
            ("MB", 1e6),
            ("GB", 1e9),
            ("KiB", 1024.0),
            ("MiB", 1048576.0),
            ("GiB", 1073741824.0),
        ];
        let v = self.value(path, "size", U, 1.0)?;
        Ok(v.round() as u64)
    }
}

// ---------------------------------------------------------------- the file as written

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    pub name: Option<String>,
    pub description: Option<String>,
    pub duration: Qty,
    pub seed: Option<u64>,
    #[serde(default)]
    pub tcp: TcpSpec,
    #[serde(default)]
    pub node: Vec<NodeSpec>,
    #[serde(default)]
    pub link: Vec<LinkSpec>,
    pub dumbbell: Option<DumbbellSpec>,
    /// Users behind their own last miles, drawn from distributions (crates/sim/src/population.rs).
    pub population: Option<crate::population::PopulationSpec>,
    /// The stream video flows (`app = "live"` / `"vod"`) fetch.
    pub video: Option<VideoSpec>,
    #[serde(default)]
    pub flow: Vec<FlowSpec>,
    #[serde(default)]
    pub record: RecordSpec,
}

impl Default for Qty {
    fn default() -> Self {
        Qty::Num(0.0)
    }
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    pub name: String,
    #[serde(default)]
    pub kind: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LossToml {
    pub model: String,
    pub p: f64,
    pub r: Option<f64>,
    pub loss_good: Option<f64>,
    pub loss_bad: Option<f64>,
    /// `gilbert_elliott_time` only: mean duration of a Bad period.
    #[serde(default)]
    pub mean_bad: Option<Qty>,
}

/// `reorder = { p = 0.01, delay = "30ms" }` on a link or one direction (crate::reorder).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ReorderToml {
    pub p: f64,
    pub delay: Qty,
}

/// `spikes = { every = "160s", length = "500ms" }` on a link or one direction (crate::delay_spikes).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SpikesToml {
    pub every: Qty,
    pub length: Qty,
}

/// `jitter = { mean = "20us", seed = 0 }` on a link or one direction (crate::delay_jitter).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct JitterToml {
    pub mean: Qty,
    pub seed: Option<u64>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirSpec {
    pub rate: Option<Qty>,
    pub delay: Option<Qty>,
    pub queue: Option<u64>,
    pub queue_bytes: Option<Qty>,
    pub loss: Option<LossToml>,
    pub reorder: Option<ReorderToml>,
    pub spikes: Option<SpikesToml>,
    pub jitter: Option<JitterToml>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    pub name: Option<String>,
    pub a: String,
    pub b: String,
    pub rate: Qty,
    pub delay: Option<Qty>,
    pub queue: Option<u64>,
    pub queue_bytes: Option<Qty>,
    pub loss: Option<LossToml>,
    pub reorder: Option<ReorderToml>,
    pub spikes: Option<SpikesToml>,
    pub jitter: Option<JitterToml>,
    pub ab: Option<DirSpec>,
    pub ba: Option<DirSpec>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DumbbellSpec {
    pub clients: u32,
    pub bottleneck_rate: Qty,
    pub bottleneck_delay: Option<Qty>,
    pub queue: Option<u64>,
    pub queue_bytes: Option<Qty>,
    pub loss: Option<LossToml>,
    pub access_rate: Option<Qty>,
    pub access_queue: Option<u64>,
    pub server_rate: Option<Qty>,
    pub server_delay: Option<Qty>,
    pub rtt: Qty,
    pub rtt_std: Option<Qty>,
    /// Flow template, one flow per client (server → client by default).
    pub flow: Option<FlowTemplate>,
    /// How the clients' starts spread over `flow.start_jitter`: `"uniform"` (default: each start
    /// drawn Uniform[0, jitter), a Poisson process conditioned on `clients` arrivals in the
    /// window) or `"poisson"` (seed 004 §III as a simulator draws it: exponential inter-arrival
    /// times of mean jitter/clients, so the last client arrives near the window's end, before or
    /// after it).
    pub arrivals: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestSpec {
    pub at: Qty,
    pub bytes: Qty,
    pub request_bytes: Option<Qty>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PauseSpec {
    pub at: Qty,
    pub duration: Qty,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReaderSpec {
    pub rate: Option<Qty>,
    #[serde(default)]
    pub pauses: Vec<PauseSpec>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClampSpec {
    pub at: Qty,
    /// cwnd clamp in packets (segments); 0 removes the clamp.
    pub packets: u64,
}

/// `[video]`: the stream every video flow fetches (one origin per run).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VideoSpec {
    pub segment_duration: Option<Qty>,
    /// Stream length in segments (default: enough to cover the run).
    pub segments: Option<u64>,
    /// Representation ladder, kbit/s (default seed 004 Table I).
    pub ladder_kbps: Option<Vec<f64>>,
    /// "cbr" (default) or "vbr" (the model's seeded VBR sizes).
    pub sizes: Option<String>,
    /// "hls" (default, MPEG-TS segments) or "dash" (fMP4 segments, an MPD).
    pub format: Option<String>,
    /// Live: when recording of segment 0 starts (default 0 s).
    pub live_start: Option<Qty>,
    /// Live: segments listed in the live playlist (default 5).
    pub window_segments: Option<u64>,
}

/// `player = { ... }` of a video flow: the client's player and ABR.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlayerSpec {
    /// ABR rule: "fixed" (default), "throughput", "bba", "bola".
    pub abr: Option<String>,
    pub abr_params: Option<BTreeMap<String, f64>>,
    /// Buffer target in segments (seed 004: 1, 5, 15; default 1).
    pub buffer_segments: Option<u32>,
    /// "synchronized" (default: as soon as available), "distributed" (seed 004 §IV-C: a not-before
    /// phase) or "clocked" (§IV-C as written: one request per period at the phase, whatever the buffer).
    pub request_timing: Option<String>,
    /// Skip to the live edge after a stall (default false: every stall adds to the latency).
    pub catch_up: Option<bool>,
    /// Live: start this many segments behind the newest (default 0).
    pub live_start_behind: Option<u64>,
    /// "once" (default) or "every_segment".
    pub playlist: Option<String>,
    /// "persistent" (default: one keep-alive connection) or "per_segment" (a new connection per segment).
    pub connection: Option<String>,
}

/// `crowd = { channel = 3, stream_for = "60s" }` of a crowdlive flow (`app = "publish"` /
/// `"subscribe"`, crate::app::crowd): the channel it uploads to or watches, and for how long the
/// publisher produces frames / the subscriber watches before it leaves.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrowdSpec {
    pub channel: u32,
    pub stream_for: Qty,
    /// Publisher: how the upload ends after `stream_for`: "silence" (default) or "fin".
    pub end: Option<String>,
    /// Publisher: encoder pauses `{at, duration}` (from the flow's start): no frames meanwhile.
    #[serde(default)]
    pub pauses: Vec<PauseSpec>,
    /// The frame types this connection carries, letters of "IPV" (default all; seed 000 §4: one connection per frame type).
    pub frames: Option<String>,
    /// Subscriber: "fq" paces the front-end's socket at Linux's sk_pacing_rate (the fq qdisc), default "none".
    pub pacing: Option<String>,
    /// Publisher: the voice frame of each 40-ms slot is produced and written this long after
    /// the slot's video frame (0 ≤ offset < 40 ms; default 0: both in one write).
    pub audio_offset: Option<Qty>,
    /// Subscriber: how the front-end starts a new viewer's stream: "gop_cache" (default: from
    /// the channel's latest I frame) or "wait_key" (nginx-rtmp's `wait_key`: new frames only,
    /// P frames skipped until the next I frame, voice at once).
    pub join: Option<String>,
}

/// Everything a flow has except its endpoints (shared by `[[flow]]` and `[dumbbell.flow]`).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowTemplate {
    pub app: Option<String>,
    pub start: Option<Qty>,
    pub start_jitter: Option<Qty>,
    pub bytes: Option<Qty>,
    pub direction: Option<String>,
    pub close: Option<bool>,
    pub requests: Option<Vec<RequestSpec>>,
    pub period: Option<Qty>,
    pub count: Option<u32>,
    pub response_bytes: Option<Qty>,
    pub request_bytes: Option<Qty>,
    pub reader: Option<ReaderSpec>,
    pub cwnd_clamp: Option<u64>,
    #[serde(default)]
    pub cwnd_clamp_schedule: Vec<ClampSpec>,
    pub player: Option<PlayerSpec>,
    pub progressive: Option<crate::app::progressive::ProgressiveSpec>,
    pub crowd: Option<CrowdSpec>,
    pub tcp: Option<TcpSpec>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    pub name: Option<String>,
    pub client: String,
    pub server: String,
    pub app: Option<String>,
    pub start: Option<Qty>,
    pub start_jitter: Option<Qty>,
    pub bytes: Option<Qty>,
    pub direction: Option<String>,
    pub close: Option<bool>,
    pub requests: Option<Vec<RequestSpec>>,
    pub period: Option<Qty>,
    pub count: Option<u32>,
    pub response_bytes: Option<Qty>,
    pub request_bytes: Option<Qty>,
    pub reader: Option<ReaderSpec>,
    pub cwnd_clamp: Option<u64>,
    #[serde(default)]
    pub cwnd_clamp_schedule: Vec<ClampSpec>,
    pub player: Option<PlayerSpec>,
    pub progressive: Option<crate::app::progressive::ProgressiveSpec>,
    pub crowd: Option<CrowdSpec>,
    pub tcp: Option<TcpSpec>,
}

impl FlowSpec {
    fn template(&self) -> FlowTemplate {
        FlowTemplate {
            app: self.app.clone(),
            start: self.start.clone(),
            start_jitter: self.start_jitter.clone(),
            bytes: self.bytes.clone(),
            direction: self.direction.clone(),
            close: self.close,
            requests: self.requests.clone(),
            period: self.period.clone(),
            count: self.count,
            response_bytes: self.response_bytes.clone(),
            request_bytes: self.request_bytes.clone(),
            reader: self.reader.clone(),
            cwnd_clamp: self.cwnd_clamp,
            cwnd_clamp_schedule: self.cwnd_clamp_schedule.clone(),
            tcp: self.tcp.clone(),
            player: self.player.clone(),
            progressive: self.progressive.clone(),
            crowd: self.crowd.clone(),
        }
    }
}

/// TCP settings; every key optional, defaults are Linux's (crates/sim/src/tcp/config.rs).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TcpSpec {
    pub cc: Option<String>,
    pub cc_params: Option<BTreeMap<String, f64>>,
    pub mss: Option<u16>,
    pub initial_cwnd: Option<u64>,
    pub rcv_buf: Option<Qty>,
    pub snd_buf: Option<Qty>,
    pub sack: Option<bool>,
    pub timestamps: Option<bool>,
    pub window_scaling: Option<bool>,
    pub min_rto: Option<Qty>,
    pub initial_rto: Option<Qty>,
    pub max_rto: Option<Qty>,
    pub delayed_ack: Option<Qty>,
    pub quickack_segments: Option<u32>,
    pub slow_start_after_idle: Option<bool>,
    pub dupack_threshold: Option<u32>,
    pub nagle: Option<bool>,
    pub keepalive_idle: Option<Qty>,
    pub keepalive_interval: Option<Qty>,
    pub keepalive_probes: Option<u32>,
    pub rack_tlp: Option<bool>,
    /// Tail-loss probes alone (TcpConfig::tlp).
    pub tlp: Option<bool>,
    pub frto: Option<bool>,
    /// GSO packets as Linux (default true; TcpConfig::tso).
    pub tso: Option<bool>,
}

impl TcpSpec {
    /// `self` with the keys of `over` that are set taking precedence.
    pub fn merged(&self, over: &TcpSpec) -> TcpSpec {
        macro_rules! pick {
            ($($f:ident),*) => { TcpSpec { $($f: over.$f.clone().or_else(|| self.$f.clone())),* } };
        }
        pick!(
            cc,
            cc_params,
            mss,
            initial_cwnd,
            rcv_buf,
            snd_buf,
            sack,
            timestamps,
            window_scaling,
            min_rto,
            initial_rto,
            max_rto,
            delayed_ack,
            quickack_segments,
            slow_start_after_idle,
            dupack_threshold,
            nagle,
            keepalive_idle,
            keepalive_interval,
            keepalive_probes,
            rack_tlp,
            tlp,
            frto,
            tso
        )
    }
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PcapSpec {
    pub link: String,
    pub at: Option<String>,
    pub file: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordSpec {
    #[serde(default)]
    pub pcap: Vec<PcapSpec>,
    pub snaplen: Option<u32>,
    pub pcap_timestamps: Option<String>,
    pub sample_interval: Option<Qty>,
    pub events: Option<bool>,
}

// ---------------------------------------------------------------- parsing

/// Parse TOML text; unknown keys and bad types fail with the key's path.
pub fn parse_toml(text: &str) -> Result<ScenarioFile, ScenarioError> {
    let de = toml::Deserializer::new(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let msg = inner.message().to_string();
        let line =
            inner.span().map(|s| format!(" (line {})", text[..s.start.min(text.len())].matches('\n').count() + 1)).unwrap_or_default();
        if path == "." || path.is_empty() {
            ScenarioError(format!("scenario: {msg}{line}"))
        } else {
            ScenarioError(format!("{path}: {msg}{line}"))
        }
    })
}

/// Parse JSON text (the Python API's dicts); same structure as TOML.
pub fn parse_json(text: &str) -> Result<ScenarioFile, ScenarioError> {
    let mut de = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        let msg = inner.split(" at line ").next().unwrap_or(&inner).to_string();
        if path == "." || path.is_empty() {
            ScenarioError(format!("scenario: {msg}"))
        } else {
            ScenarioError(format!("{path}: {msg}"))
        }
    })
}

// ---------------------------------------------------------------- resolved scenario

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DirDef {
    pub rate: Bandwidth,
    pub delay: Duration,
    pub limit: QueueLimit,
    pub loss: LossSpec,
    pub reorder: Option<crate::reorder::ReorderSpec>,
    pub spikes: Option<crate::delay_spikes::DelaySpikesSpec>,
    pub jitter: Option<crate::delay_jitter::DelayJitterSpec>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct LinkDef {
    pub name: String,
    pub a: u32,
    pub b: u32,
    pub ab: DirDef,
    pub ba: DirDef,
}

#[derive(Clone, Debug, PartialEq)]
pub struct NodeDef {
    pub name: String,
    pub kind: NodeKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Server sends to client (a download, the video case).
    Down,
    /// Client sends to server (an upload).
    Up,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Request {
    pub at: Duration,
    pub request_bytes: u64,
    pub response_bytes: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub enum AppDef {
    /// Send `bytes` (None = unlimited) in `direction`, then close if `close`.
    Bulk { bytes: Option<u64>, direction: Direction, close: bool },
    /// Client sends requests on one persistent connection; server answers each in full. A request is
    /// issued at max(its time, completion of the previous response) (one outstanding request).
    ReqResp { requests: Vec<Request> },
    /// A video player fetching the run's `[video]` stream over HTTP/1.1 on one persistent
    /// connection (`live` or on demand).
    Video { live: bool, player: PlayerDef },
    /// One progressive download served by ustreamer in a delivery mode (seed 003).
    Progressive(crate::app::progressive::ProgressiveDef),
    /// Crowdsourced live streaming (seed 000, crate::app::crowd): a publisher uploading FLV to
    /// the front-end (`publish`) or a subscriber watching a channel over HTTP-FLV (`subscribe`).
    Crowd { publisher: bool, channel: u32, stream_for: Duration, publish: crate::app::crowd::front_end::PublishStyle },
}

/// A client's player, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct PlayerDef {
    pub abr: String,
    pub abr_params: BTreeMap<String, f64>,
    pub buffer_segments: u32,
    pub distributed: bool,
    /// Distributed on the client's own clock, whatever its buffer (`request_timing = "clocked"`).
    pub clocked: bool,
    pub catch_up: bool,
    pub live_start_behind: u64,
    pub playlist_every_segment: bool,
    pub per_segment_connections: bool,
}

/// The run's stream, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct VideoDef {
    pub segment_duration: Duration,
    pub segments: u64,
    pub ladder_kbps: Vec<f64>,
    pub vbr: bool,
    pub dash: bool,
    pub live_start: Duration,
    pub window_segments: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ReaderDef {
    /// Read rate (None = read everything as soon as it arrives).
    pub rate: Option<Bandwidth>,
    /// (start, end) offsets from the flow start during which the application does not read.
    pub pauses: Vec<(Duration, Duration)>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FlowDef {
    pub name: String,
    pub client: u32,
    pub server: u32,
    /// Start time, jitter already drawn.
    pub start: Duration,
    pub app: AppDef,
    pub reader: ReaderDef,
    /// (time offset from start, clamp in packets; None removes it).
    pub clamps: Vec<(Duration, Option<u64>)>,
    pub tcp: TcpSpec,
    /// Base RTT of the path (sum of propagation delays both ways), for reports.
    pub base_rtt: Duration,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PcapDef {
    pub link: u32,
    /// The node on whose side the tap sits.
    pub at: u32,
    pub file: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct RecordDef {
    pub pcaps: Vec<PcapDef>,
    pub snaplen: u32,
    pub nanosecond_pcap: bool,
    pub sample_interval: Option<Duration>,
    pub events: bool,
}

/// A validated scenario: everything by index, every quantity typed.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub duration: Duration,
    pub seed: u64,
    pub nodes: Vec<NodeDef>,
    pub links: Vec<LinkDef>,
    pub flows: Vec<FlowDef>,
    pub record: RecordDef,
    /// The stream of the video flows, if any.
    pub video: Option<VideoDef>,
}

const DEFAULT_QUEUE_PACKETS: u64 = 1000; // Linux txqueuelen default

fn loss_of(l: &Option<LossToml>, path: &str) -> Result<LossSpec, ScenarioError> {
    let Some(l) = l else { return Ok(LossSpec::None) };
    let prob = |v: f64, k: &str| -> Result<f64, ScenarioError> {
        if !(0.0..=1.0).contains(&v) {
            return err(format!("{path}.{k}"), format!("probability {v} is not in [0, 1]"));
        }
        Ok(v)
    };
    if l.mean_bad.is_some() && l.model != "gilbert_elliott_time" {
        return err(format!("{path}.mean_bad"), "only for model \"gilbert_elliott_time\"");
    }
    match l.model.as_str() {
        "gilbert_elliott_time" => {
            if l.r.is_some() {
                return err(format!("{path}.r"), "not for model \"gilbert_elliott_time\" (give mean_bad)");
            }
            let Some(mb) = &l.mean_bad else {
                return err(format!("{path}.mean_bad"), "missing (mean duration of a Bad period)");
            };
            let mean_bad_ns = mb.duration(&format!("{path}.mean_bad"))?.as_nanos() as u64;
            if mean_bad_ns == 0 {
                return err(format!("{path}.mean_bad"), "must be positive");
            }
            let p = prob(l.p, "p")?;
            if p >= 1.0 {
                return err(format!("{path}.p"), "share of time in Bad must be below 1");
            }
            Ok(LossSpec::GilbertElliottTime {
                p,
                mean_bad_ns,
                loss_good: prob(l.loss_good.unwrap_or(0.0), "loss_good")?,
                loss_bad: prob(l.loss_bad.unwrap_or(1.0), "loss_bad")?,
            })
        }
        "bernoulli" => {
            for (k, v) in [("r", l.r), ("loss_good", l.loss_good), ("loss_bad", l.loss_bad)] {
                if v.is_some() {
                    return err(format!("{path}.{k}"), "only for model \"gilbert_elliott\"");
                }
            }
            Ok(LossSpec::Bernoulli { p: prob(l.p, "p")? })
        }
        "keyed" => {
            for (k, v) in [("r", l.r), ("loss_good", l.loss_good), ("loss_bad", l.loss_bad)] {
                if v.is_some() {
                    return err(format!("{path}.{k}"), "only for model \"gilbert_elliott\"");
                }
            }
            Ok(LossSpec::Keyed { p: prob(l.p, "p")? })
        }
        "gilbert_elliott" => {
            let Some(r) = l.r else { return err(format!("{path}.r"), "missing (Bad→Good probability)") };
            Ok(LossSpec::GilbertElliott {
                p: prob(l.p, "p")?,
                r: prob(r, "r")?,
                loss_good: prob(l.loss_good.unwrap_or(0.0), "loss_good")?,
                loss_bad: prob(l.loss_bad.unwrap_or(1.0), "loss_bad")?,
            })
        }
        other => {
            err(format!("{path}.model"), format!("unknown loss model {other:?} (bernoulli, gilbert_elliott, gilbert_elliott_time, keyed)"))
        }
    }
}

fn limit_of(queue: Option<u64>, queue_bytes: &Option<Qty>, path: &str, default: u64) -> Result<QueueLimit, ScenarioError> {
    match (queue, queue_bytes) {
        (Some(_), Some(_)) => err(format!("{path}.queue_bytes"), "give either queue (packets) or queue_bytes, not both"),
        (Some(p), None) => Ok(QueueLimit::Packets(p)),
        (None, Some(b)) => Ok(QueueLimit::Bytes(b.bytes(&format!("{path}.queue_bytes"))?)),
        (None, None) => Ok(QueueLimit::Packets(default)),
    }
}

pub(crate) struct Builder {
    nodes: Vec<NodeDef>,
    pub(crate) links: Vec<LinkDef>,
}

impl Builder {
    fn node(&self, name: &str, path: &str) -> Result<u32, ScenarioError> {
        match self.nodes.iter().position(|n| n.name == name) {
            Some(i) => Ok(i as u32),
            None => err(path, format!("unknown node {name:?}")),
        }
    }
    pub(crate) fn add_node(&mut self, name: String, kind: NodeKind, path: &str) -> Result<u32, ScenarioError> {
        if name.is_empty() {
            return err(path, "empty node name");
        }
        if self.nodes.iter().any(|n| n.name == name) {
            return err(path, format!("duplicate node name {name:?}"));
        }
        self.nodes.push(NodeDef { name, kind });
        Ok(self.nodes.len() as u32 - 1)
    }
}

fn dir_of(base: &LinkSpec, d: &Option<DirSpec>, path: &str, which: &str) -> Result<DirDef, ScenarioError> {
    let empty = DirSpec::default();
    let d = d.as_ref().unwrap_or(&empty);
    let dp = format!("{path}.{which}");
    let rate = match &d.rate {
        Some(r) => r.rate(&format!("{dp}.rate"))?,
        None => base.rate.rate(&format!("{path}.rate"))?,
    };
    let delay = match (&d.delay, &base.delay) {
        (Some(x), _) => x.duration(&format!("{dp}.delay"))?,
        (None, Some(x)) => x.duration(&format!("{path}.delay"))?,
        (None, None) => Duration::ZERO,
    };
    let limit = if d.queue.is_some() || d.queue_bytes.is_some() {
        limit_of(d.queue, &d.queue_bytes, &dp, DEFAULT_QUEUE_PACKETS)?
    } else {
        limit_of(base.queue, &base.queue_bytes, path, DEFAULT_QUEUE_PACKETS)?
    };
    let loss = if d.loss.is_some() { loss_of(&d.loss, &format!("{dp}.loss"))? } else { loss_of(&base.loss, &format!("{path}.loss"))? };
    let reorder = match d.reorder.as_ref().or(base.reorder.as_ref()) {
        None => None,
        Some(r) => {
            let rp = if d.reorder.is_some() { format!("{dp}.reorder") } else { format!("{path}.reorder") };
            if !(0.0..=1.0).contains(&r.p) {
                return err(format!("{rp}.p"), format!("probability {} is not in [0, 1]", r.p));
            }
            Some(crate::reorder::ReorderSpec { p: r.p, delay: r.delay.duration(&format!("{rp}.delay"))? })
        }
    };
    let spikes = match d.spikes.as_ref().or(base.spikes.as_ref()) {
        None => None,
        Some(s) => {
            let sp = if d.spikes.is_some() { format!("{dp}.spikes") } else { format!("{path}.spikes") };
            let every = s.every.duration(&format!("{sp}.every"))?;
            let length = s.length.duration(&format!("{sp}.length"))?;
            if every.is_zero() {
                return err(format!("{sp}.every"), "must be above 0 (the mean gap between spikes)");
            }
            if length.is_zero() {
                return err(format!("{sp}.length"), "must be above 0 (the mean length of a spike)");
            }
            Some(crate::delay_spikes::DelaySpikesSpec { every, length })
        }
    };
    let jitter = match d.jitter.as_ref().or(base.jitter.as_ref()) {
        None => None,
        Some(j) => {
            let jp = if d.jitter.is_some() { format!("{dp}.jitter") } else { format!("{path}.jitter") };
            let mean = j.mean.duration(&format!("{jp}.mean"))?;
            if mean.is_zero() {
                return err(format!("{jp}.mean"), "must be above 0 (the mean extra delay; leave jitter out for none)");
            }
            let seed = j.seed.unwrap_or(0);
            if seed > crate::delay_jitter::MAX_JITTER_SEED {
                return err(format!("{jp}.seed"), format!("{seed} is above {}", crate::delay_jitter::MAX_JITTER_SEED));
            }
            Some(crate::delay_jitter::DelayJitterSpec { mean, seed })
        }
    };
    Ok(DirDef { rate, delay, limit, loss, reorder, spikes, jitter })
}

pub(crate) fn flow_of(
    t: &FlowTemplate,
    path: &str,
    name: String,
    client: u32,
    server: u32,
    default_tcp: &TcpSpec,
    jitter_rng: &mut rand_pcg::Pcg64,
) -> Result<FlowDef, ScenarioError> {
    use rand::Rng;
    let p = |k: &str| format!("{path}.{k}");
    let start = match &t.start {
        Some(s) => s.duration(&p("start"))?,
        None => Duration::ZERO,
    };
    let jitter = match &t.start_jitter {
        Some(j) => j.duration(&p("start_jitter"))?,
        None => Duration::ZERO,
    };
    // Drawn for every flow (even with zero jitter) so one flow's jitter never shifts another's.
    let u: f64 = jitter_rng.gen();
    let start = start.saturating_add(Duration::from_nanos((jitter.as_nanos() as f64 * u) as u64));
    let app_name = t.app.clone().unwrap_or_else(|| "bulk".into());
    let only = |keys: &[(&str, bool)], app: &str| -> Result<(), ScenarioError> {
        for (k, set) in keys {
            if *set {
                return err(p(k), format!("not used by app {app:?}"));
            }
        }
        Ok(())
    };
    let app = match app_name.as_str() {
        "bulk" => {
            only(
                &[
                    ("requests", t.requests.is_some()),
                    ("period", t.period.is_some()),
                    ("count", t.count.is_some()),
                    ("response_bytes", t.response_bytes.is_some()),
                    ("request_bytes", t.request_bytes.is_some()),
                ],
                "bulk",
            )?;
            let bytes = match &t.bytes {
                Some(b) => Some(b.bytes(&p("bytes"))?),
                None => None,
            };
            let direction = match t.direction.as_deref() {
                None | Some("down") => Direction::Down,
                Some("up") => Direction::Up,
                Some(o) => return err(p("direction"), format!("unknown direction {o:?} (down, up)")),
            };
            AppDef::Bulk { bytes, direction, close: t.close.unwrap_or(bytes.is_some()) }
        }
        "reqresp" => {
            only(&[("bytes", t.bytes.is_some()), ("direction", t.direction.is_some()), ("close", t.close.is_some())], "reqresp")?;
            let default_req = match &t.request_bytes {
                Some(q) => q.bytes(&p("request_bytes"))?,
                None => 300,
            };
            let mut requests = Vec::new();
            if let Some(list) = &t.requests {
                if t.period.is_some() || t.count.is_some() {
                    return err(p("period"), "give either requests = [...] or period/count/response_bytes");
                }
                for (i, r) in list.iter().enumerate() {
                    let rp = format!("{path}.requests[{i}]");
                    requests.push(Request {
                        at: r.at.duration(&format!("{rp}.at"))?,
                        request_bytes: match &r.request_bytes {
                            Some(q) => q.bytes(&format!("{rp}.request_bytes"))?,
                            None => default_req,
                        },
                        response_bytes: r.bytes.bytes(&format!("{rp}.bytes"))?,
                    });
                }
            } else {
                let Some(period) = &t.period else {
                    return err(p("requests"), "reqresp needs requests = [...] or period/count/response_bytes");
                };
                let period = period.duration(&p("period"))?;
                let Some(count) = t.count else { return err(p("count"), "missing (number of requests)") };
                if count > 10_000_000 {
                    return err(p("count"), "more than 10000000 requests");
                }
                if period.as_nanos() * count as u128 > u64::MAX as u128 {
                    return err(p("count"), "period × count overflows");
                }
                let Some(resp) = &t.response_bytes else { return err(p("response_bytes"), "missing") };
                let resp = resp.bytes(&p("response_bytes"))?;
                for k in 0..count {
                    requests.push(Request { at: period * k, request_bytes: default_req, response_bytes: resp });
                }
            }
            for (i, r) in requests.iter().enumerate() {
                if r.request_bytes == 0 {
                    return err(format!("{path}.requests[{i}].request_bytes"), "must be at least 1 byte");
                }
            }
            AppDef::ReqResp { requests }
        }
        "live" | "vod" => {
            only(
                &[
                    ("requests", t.requests.is_some()),
                    ("period", t.period.is_some()),
                    ("count", t.count.is_some()),
                    ("response_bytes", t.response_bytes.is_some()),
                    ("request_bytes", t.request_bytes.is_some()),
                    ("bytes", t.bytes.is_some()),
                    ("direction", t.direction.is_some()),
                    ("close", t.close.is_some()),
                ],
                &app_name,
            )?;
            AppDef::Video { live: app_name == "live", player: player_of(t.player.as_ref(), &p("player"))? }
        }
        "progressive" => {
            only(
                &[
                    ("requests", t.requests.is_some()),
                    ("period", t.period.is_some()),
                    ("count", t.count.is_some()),
                    ("response_bytes", t.response_bytes.is_some()),
                    ("request_bytes", t.request_bytes.is_some()),
                    ("bytes", t.bytes.is_some()),
                    ("direction", t.direction.is_some()),
                    ("close", t.close.is_some()),
                ],
                "progressive",
            )?;
            AppDef::Progressive(crate::app::progressive::progressive_of(t.progressive.as_ref(), &p("progressive"))?)
        }
        "publish" | "subscribe" => {
            let Some(c) = &t.crowd else { return err(p("crowd"), "missing (crowd = { channel = N, stream_for = \"60s\" })") };
            AppDef::Crowd {
                publisher: app_name == "publish",
                channel: c.channel,
                stream_for: c.stream_for.duration(&p("crowd.stream_for"))?,
                publish: crate::app::crowd::front_end::PublishStyle::of(c, &p("crowd"))?,
            }
        }
        other => return err(p("app"), format!("unknown app {other:?} (bulk, reqresp, live, vod, progressive, publish, subscribe)")),
    };
    if t.progressive.is_some() && !matches!(app, AppDef::Progressive(_)) {
        return err(p("progressive"), format!("not used by app {app_name:?}"));
    }
    if t.crowd.is_some() && !matches!(app, AppDef::Crowd { .. }) {
        return err(p("crowd"), format!("not used by app {app_name:?}"));
    }
    if t.player.is_some() && !matches!(app, AppDef::Video { .. }) {
        return err(p("player"), format!("not used by app {app_name:?}"));
    }
    let reader = match &t.reader {
        None => ReaderDef { rate: None, pauses: vec![] },
        Some(r) => {
            let rate = match &r.rate {
                Some(q) => Some(q.rate(&p("reader.rate"))?),
                None => None,
            };
            let mut pauses = Vec::new();
            for (i, ps) in r.pauses.iter().enumerate() {
                let a = ps.at.duration(&format!("{path}.reader.pauses[{i}].at"))?;
                let d = ps.duration.duration(&format!("{path}.reader.pauses[{i}].duration"))?;
                pauses.push((a, a.saturating_add(d)));
            }
            pauses.sort();
            ReaderDef { rate, pauses }
        }
    };
    let mut clamps = Vec::new();
    if let Some(c) = t.cwnd_clamp {
        if c == 0 {
            return err(p("cwnd_clamp"), "must be at least 1 packet");
        }
        clamps.push((Duration::ZERO, Some(c)));
    }
    for (i, c) in t.cwnd_clamp_schedule.iter().enumerate() {
        let at = c.at.duration(&format!("{path}.cwnd_clamp_schedule[{i}].at"))?;
        clamps.push((at, (c.packets > 0).then_some(c.packets)));
    }
    clamps.sort_by_key(|c| c.0);
    let tcp = match &t.tcp {
        Some(o) => default_tcp.merged(o),
        None => default_tcp.clone(),
    };
    Ok(FlowDef { name, client, server, start, app, reader, clamps, tcp, base_rtt: Duration::ZERO })
}

fn player_of(ps: Option<&PlayerSpec>, path: &str) -> Result<PlayerDef, ScenarioError> {
    let d = PlayerSpec::default();
    let ps = ps.unwrap_or(&d);
    let abr = ps.abr.clone().unwrap_or_else(|| "fixed".into());
    let Some(info) = tcpvideo_model::video::abr::find(&abr) else {
        let known: Vec<&str> = tcpvideo_model::video::abr::ABR_RULES.iter().map(|a| a.name).collect();
        return err(format!("{path}.abr"), format!("unknown ABR rule {abr:?} (known: {})", known.join(", ")));
    };
    let abr_params = ps.abr_params.clone().unwrap_or_default();
    for k in abr_params.keys() {
        if !info.params.iter().any(|i| i.name == k) {
            let known: Vec<&str> = info.params.iter().map(|i| i.name).collect();
            return err(
                format!("{path}.abr_params.{k}"),
                format!("ABR rule {} has no parameter {k:?} (known: {})", info.name, known.join(", ")),
            );
        }
    }
    let buffer_segments = ps.buffer_segments.unwrap_or(1);
    if buffer_segments == 0 {
        return err(format!("{path}.buffer_segments"), "a buffer smaller than one segment cannot play (at least 1)");
    }
    let (distributed, clocked) = match ps.request_timing.as_deref() {
        None | Some("synchronized") => (false, false),
        Some("distributed") => (true, false),
        Some("clocked") => (true, true),
        Some(o) => return err(format!("{path}.request_timing"), format!("unknown timing {o:?} (synchronized, distributed, clocked)")),
    };
    let playlist_every_segment = match ps.playlist.as_deref() {
        None | Some("once") => false,
        Some("every_segment") => true,
        Some(o) => return err(format!("{path}.playlist"), format!("unknown refresh {o:?} (once, every_segment)")),
    };
    let per_segment_connections = match ps.connection.as_deref() {
        None | Some("persistent") => false,
        Some("per_segment") => true,
        Some(o) => return err(format!("{path}.connection"), format!("unknown connection {o:?} (persistent, per_segment)")),
    };
    Ok(PlayerDef {
        abr: info.name.to_string(),
        abr_params,
        buffer_segments,
        distributed,
        clocked,
        catch_up: ps.catch_up.unwrap_or(false),
        live_start_behind: ps.live_start_behind.unwrap_or(0),
        playlist_every_segment,
        per_segment_connections,
    })
}

fn video_of(v: &VideoSpec, run: Duration) -> Result<VideoDef, ScenarioError> {
    let segment_duration = match &v.segment_duration {
        Some(q) => q.duration("video.segment_duration")?,
        None => Duration::from_secs(2),
    };
    if segment_duration < Duration::from_millis(1) {
        return err("video.segment_duration", "must be at least 1ms");
    }
    let live_start = match &v.live_start {
        Some(q) => q.duration("video.live_start")?,
        None => Duration::ZERO,
    };
    let segments = match v.segments {
        Some(0) => return err("video.segments", "must be at least 1"),
        Some(n) if n > 1_000_000 => return err("video.segments", "more than 1000000 segments"),
        Some(n) => n,
        None => (run.as_nanos().div_ceil(segment_duration.as_nanos()) as u64).max(1),
    };
    let ladder_kbps = v.ladder_kbps.clone().unwrap_or_else(|| vec![250.0, 500.0, 750.0, 1000.0, 1500.0, 3000.0]);
    tcpvideo_model::video::Ladder::from_kbps("video.ladder_kbps", &ladder_kbps).map_err(|e| ScenarioError(e.to_string()))?;
    let vbr = match v.sizes.as_deref() {
        None | Some("cbr") => false,
        Some("vbr") => true,
        Some(o) => return err("video.sizes", format!("unknown size model {o:?} (cbr, vbr)")),
    };
    let dash = match v.format.as_deref() {
        None | Some("hls") => false,
        Some("dash") => true,
        Some(o) => return err("video.format", format!("unknown format {o:?} (hls, dash)")),
    };
    let window_segments = v.window_segments.unwrap_or(5);
    if window_segments == 0 {
        return err("video.window_segments", "the live playlist must list at least one segment");
    }
    Ok(VideoDef { segment_duration, segments, ladder_kbps, vbr, dash, live_start, window_segments })
}

impl ScenarioFile {
    /// Expand generators, check references and types; `seed` overrides the file's seed.
    pub fn resolve(&self, seed: Option<u64>) -> Result<Scenario, ScenarioError> {
        let seed = seed.or(self.seed).unwrap_or(1);
        let duration = self.duration.duration("duration")?;
        if duration.is_zero() {
            return err("duration", "must be positive");
        }
        let mut b = Builder { nodes: Vec::new(), links: Vec::new() };
        for (i, n) in self.node.iter().enumerate() {
            let kind = match n.kind.as_deref() {
                None | Some("host") => NodeKind::Host,
                Some("router") => NodeKind::Router,
                Some(o) => return err(format!("node[{i}].kind"), format!("unknown kind {o:?} (host, router)")),
            };
            b.add_node(n.name.clone(), kind, &format!("node[{i}].name"))?;
        }
        for (i, l) in self.link.iter().enumerate() {
            let path = format!("link[{i}]");
            let a = b.node(&l.a, &format!("{path}.a"))?;
            let bb = b.node(&l.b, &format!("{path}.b"))?;
            if a == bb {
                return err(format!("{path}.b"), "a link needs two different nodes");
            }
            let name = l.name.clone().unwrap_or_else(|| format!("{}-{}", l.a, l.b));
            if b.links.iter().any(|x| x.name == name) {
                return err(format!("{path}.name"), format!("duplicate link name {name:?}"));
            }
            let ab = dir_of(l, &l.ab, &path, "ab")?;
            let ba = dir_of(l, &l.ba, &path, "ba")?;
            b.links.push(LinkDef { name, a, b: bb, ab, ba });
        }
        let mut flows = Vec::new();
        let mut jitter_rng = sub_rng(seed, streams::START_JITTER);
        let default_tcp = self.tcp.clone();
        if let Some(d) = &self.dumbbell {
            self.expand_dumbbell(d, seed, &mut b, &mut flows, &default_tcp, &mut jitter_rng)?;
        }
        if let Some(p) = &self.population {
            if self.dumbbell.is_some() {
                return err("population", "give either [dumbbell] or [population], not both");
            }
            crate::population::expand(p, seed, &mut b, &mut flows, &default_tcp, &mut jitter_rng)?;
        }
        for (i, f) in self.flow.iter().enumerate() {
            let path = format!("flow[{i}]");
            let c = b.node(&f.client, &format!("{path}.client"))?;
            let s = b.node(&f.server, &format!("{path}.server"))?;
            for (k, n) in [("client", c), ("server", s)] {
                if b.nodes[n as usize].kind != NodeKind::Host {
                    return err(format!("{path}.{k}"), format!("{:?} is a router; flows run between hosts", b.nodes[n as usize].name));
                }
            }
            if c == s {
                return err(format!("{path}.server"), "client and server are the same node");
            }
            let name = f.name.clone().unwrap_or_else(|| format!("flow{}", flows.len()));
            flows.push(flow_of(&f.template(), &path, name, c, s, &default_tcp, &mut jitter_rng)?);
        }
        // Reachability and base RTT (sum of propagation delays along both routes).
        let probe = crate::network::Network::from_defs(&b.nodes, &b.links, seed);
        for (i, f) in flows.iter_mut().enumerate() {
            let path = if i < self.dumbbell.as_ref().map(|d| d.clients as usize).unwrap_or(0) {
                format!("dumbbell.flow[{i}]")
            } else {
                format!("flow[{}]", i - self.dumbbell.as_ref().map(|d| d.clients as usize).unwrap_or(0))
            };
            let mut rtt = Duration::ZERO;
            for (from, to) in [(f.client, f.server), (f.server, f.client)] {
                let mut n = from;
                let mut hops = 0;
                while n != to {
                    let Some(c) = probe.route(n, to) else {
                        return err(
                            format!("{path}.server"),
                            format!("no route from {:?} to {:?}", b.nodes[from as usize].name, b.nodes[to as usize].name),
                        );
                    };
                    rtt += probe.channels[c as usize].delay;
                    n = probe.channels[c as usize].to;
                    hops += 1;
                    if hops > b.nodes.len() {
                        return err(&path, "routing loop");
                    }
                }
            }
            f.base_rtt = rtt;
            // Validate the congestion control name and parameters now, so a typo fails up front.
            let cc = f.tcp.cc.clone().unwrap_or_else(|| default_cc().to_string());
            let params = tcpvideo_model::cc::Params(f.tcp.cc_params.clone().unwrap_or_default());
            if let Err(e) = tcpvideo_model::cc::build(&cc, &tcpvideo_model::cc::CcConfig::default(), &params) {
                return err(format!("{path}.tcp.cc"), e);
            }
        }
        let r = &self.record;
        let mut pcaps = Vec::new();
        for (i, pc) in r.pcap.iter().enumerate() {
            let Some(li) = b.links.iter().position(|l| l.name == pc.link) else {
                return err(format!("record.pcap[{i}].link"), format!("unknown link {:?}", pc.link));
            };
            let l = &b.links[li];
            let at = match &pc.at {
                None => l.a,
                Some(n) => {
                    let id = b.node(n, &format!("record.pcap[{i}].at"))?;
                    if id != l.a && id != l.b {
                        return err(format!("record.pcap[{i}].at"), format!("{n:?} is not an end of link {:?}", l.name));
                    }
                    id
                }
            };
            let file = pc.file.clone().unwrap_or_else(|| format!("{}@{}.pcap", l.name, b.nodes[at as usize].name));
            if file.contains('/') || file.contains('\\') {
                return err(format!("record.pcap[{i}].file"), "a file name, not a path (files go to the output directory)");
            }
            pcaps.push(PcapDef { link: li as u32, at, file });
        }
        let nanosecond_pcap = match r.pcap_timestamps.as_deref() {
            None | Some("us") => false,
            Some("ns") => true,
            Some(o) => return err("record.pcap_timestamps", format!("unknown resolution {o:?} (us, ns)")),
        };
        let sample_interval = match &r.sample_interval {
            Some(q) => {
                let d = q.duration("record.sample_interval")?;
                if d < Duration::from_micros(100) {
                    return err("record.sample_interval", "must be at least 100us");
                }
                Some(d)
            }
            None => None,
        };
        let snaplen = r.snaplen.unwrap_or(128);
        if snaplen < 54 {
            return err("record.snaplen", "must be at least 54 (Ethernet + IPv4 + TCP headers)");
        }
        if b.nodes.is_empty() {
            return err("node", "the scenario has no nodes (declare [[node]]/[[link]] or a [dumbbell])");
        }
        let video = match &self.video {
            Some(v) => Some(video_of(v, duration)?),
            None => None,
        };
        if video.is_none() {
            if let Some(i) = flows.iter().position(|f| matches!(f.app, AppDef::Video { .. })) {
                let n_db = self.dumbbell.as_ref().map(|d| d.clients as usize).unwrap_or(0);
                let path = if i < n_db { "dumbbell.flow.app".to_string() } else { format!("flow[{}].app", i - n_db) };
                return err(path, "a video app needs a [video] table (the stream to fetch)");
            }
        }
        Ok(Scenario {
            name: self.name.clone().unwrap_or_else(|| "scenario".into()),
            duration,
            seed,
            nodes: b.nodes,
            links: b.links,
            flows,
            record: RecordDef { pcaps, snaplen, nanosecond_pcap, sample_interval, events: r.events.unwrap_or(true) },
            video,
        })
    }

    fn expand_dumbbell(
        &self,
        d: &DumbbellSpec,
        seed: u64,
        b: &mut Builder,
        flows: &mut Vec<FlowDef>,
        default_tcp: &TcpSpec,
        jitter_rng: &mut rand_pcg::Pcg64,
    ) -> Result<(), ScenarioError> {
        let p = |k: &str| format!("dumbbell.{k}");
        if d.clients == 0 {
            return err(p("clients"), "must be at least 1");
        }
        let bn_rate = d.bottleneck_rate.rate(&p("bottleneck_rate"))?;
        let bn_delay = match &d.bottleneck_delay {
            Some(q) => q.duration(&p("bottleneck_delay"))?,
            None => Duration::ZERO,
        };
        let access_rate = match &d.access_rate {
            Some(q) => q.rate(&p("access_rate"))?,
            None => Bandwidth::from_mbps(1000),
        };
        let server_rate = match &d.server_rate {
            Some(q) => q.rate(&p("server_rate"))?,
            None => Bandwidth::from_mbps(10_000),
        };
        let server_delay = match &d.server_delay {
            Some(q) => q.duration(&p("server_delay"))?,
            None => Duration::ZERO,
        };
        let rtt = d.rtt.duration(&p("rtt"))?;
        let rtt_std = match &d.rtt_std {
            Some(q) => q.duration(&p("rtt_std"))?,
            None => Duration::ZERO,
        };
        let limit = limit_of(d.queue, &d.queue_bytes, "dumbbell", DEFAULT_QUEUE_PACKETS)?;
        let loss = loss_of(&d.loss, &p("loss"))?;
        let access_limit = QueueLimit::Packets(d.access_queue.unwrap_or(DEFAULT_QUEUE_PACKETS));
        let fixed_one_way = server_delay + bn_delay;
        if rtt < fixed_one_way * 2 {
            return err(p("rtt"), "smaller than twice server_delay + bottleneck_delay");
        }
        let srv = b.add_node("server".into(), NodeKind::Host, "dumbbell")?;
        let r1 = b.add_node("r1".into(), NodeKind::Router, "dumbbell")?;
        let r2 = b.add_node("r2".into(), NodeKind::Router, "dumbbell")?;
        let sym = |rate, delay, limit, loss| DirDef { rate, delay, limit, loss, reorder: None, spikes: None, jitter: None };
        let none = LossSpec::None;
        b.links.push(LinkDef {
            name: "server".into(),
            a: srv,
            b: r1,
            ab: sym(server_rate, server_delay, access_limit, none),
            ba: sym(server_rate, server_delay, access_limit, none),
        });
        // The bottleneck is R1→R2 (server side, seed 004 Fig. 1); the reverse carries ACKs.
        b.links.push(LinkDef {
            name: "bottleneck".into(),
            a: r1,
            b: r2,
            ab: sym(bn_rate, bn_delay, limit, loss),
            ba: sym(bn_rate, bn_delay, limit, none),
        });
        let mut rng = sub_rng(seed, streams::TOPOLOGY);
        let normal =
            Normal::new(rtt.as_nanos() as f64, rtt_std.as_nanos() as f64).map_err(|e| ScenarioError(format!("dumbbell.rtt_std: {e}")))?;
        let tmpl = d.flow.clone().unwrap_or_default();
        let first_flow = flows.len();
        for i in 0..d.clients {
            // Truncate the normal at the fixed part of the path (a negative access delay is
            // impossible); with seed 004's 55±5 ms this never triggers.
            let draw = normal.sample(&mut rng).max((fixed_one_way * 2).as_nanos() as f64);
            let one_way = Duration::from_nanos((draw / 2.0) as u64) - fixed_one_way;
            let c = b.add_node(format!("c{i}"), NodeKind::Host, "dumbbell")?;
            b.links.push(LinkDef {
                name: format!("c{i}"),
                a: r2,
                b: c,
                ab: sym(access_rate, one_way, access_limit, none),
                ba: sym(access_rate, one_way, access_limit, none),
            });
            flows.push(flow_of(&tmpl, &format!("dumbbell.flow[{i}]"), format!("c{i}"), c, srv, default_tcp, jitter_rng)?);
        }
        match d.arrivals.as_deref() {
            None | Some("uniform") => {}
            Some("poisson") => poisson_arrivals(&tmpl, &mut flows[first_flow..], seed)?,
            Some(o) => return err(p("arrivals"), format!("unknown arrivals {o:?} (uniform, poisson)")),
        }
        Ok(())
    }
}

/// `dumbbell.arrivals = "poisson"`: client *i* starts at `flow.start` plus the sum of *i* + 1
/// exponential inter-arrival times of mean `flow.start_jitter` / clients (seed 004 §III: "a
/// Poisson process with an average inter-arrival time λ = number of clients / segment
/// duration"). The uniform draws were already made from the jitter stream and are replaced, so
/// no other flow's draw moves; the gaps come from their own stream.
fn poisson_arrivals(t: &FlowTemplate, flows: &mut [FlowDef], seed: u64) -> Result<(), ScenarioError> {
    use rand_distr::Exp;
    let start = match &t.start {
        Some(s) => s.duration("dumbbell.flow.start")?,
        None => Duration::ZERO,
    };
    let window = match &t.start_jitter {
        Some(j) => j.duration("dumbbell.flow.start_jitter")?,
        None => Duration::ZERO,
    };
    if window.is_zero() || flows.is_empty() {
        return err("dumbbell.arrivals", "\"poisson\" needs flow.start_jitter > 0 (the window the clients arrive in)");
    }
    let mean_gap_ns = window.as_nanos() as f64 / flows.len() as f64;
    let exp = Exp::new(1.0 / mean_gap_ns).map_err(|e| ScenarioError(format!("dumbbell.arrivals: {e}")))?;
    let mut rng = sub_rng(seed, streams::ARRIVALS);
    let mut at_ns = 0.0;
    for f in flows.iter_mut() {
        at_ns += exp.sample(&mut rng);
        f.start = start.saturating_add(Duration::from_nanos(at_ns as u64));
    }
    Ok(())
}

/// Read a scenario from TOML text and resolve it.
pub fn load_toml(text: &str, seed: Option<u64>) -> Result<Scenario, ScenarioError> {
    parse_toml(text)?.resolve(seed)
}

/// Read a scenario from JSON text and resolve it.
pub fn load_json(text: &str, seed: Option<u64>) -> Result<Scenario, ScenarioError> {
    parse_json(text)?.resolve(seed)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_HOSTS: &str = r#"
duration = "2s"
[[node]]
name = "a"
[[node]]
name = "r"
kind = "router"
[[node]]
name = "b"
[[link]]
a = "a"
b = "r"
rate = "100Mbps"
delay = "10ms"
[[link]]
a = "r"
b = "b"
rate = 1e9
delay = 0.015
queue_bytes = "64KiB"
[[flow]]
client = "a"
server = "b"
bytes = "1MB"
"#;

    #[test]
    fn quantities_parse_with_units() {
        let s = load_toml(TWO_HOSTS, None).unwrap();
        assert_eq!(s.links[0].ab.rate, Bandwidth::from_mbps(100));
        assert_eq!(s.links[1].ab.rate, Bandwidth::from_mbps(1000));
        assert_eq!(s.links[1].ba.delay, Duration::from_millis(15));
        assert_eq!(s.links[1].ab.limit, QueueLimit::Bytes(65536));
        assert_eq!(s.links[0].ab.limit, QueueLimit::Packets(1000));
        assert_eq!(s.flows[0].base_rtt, Duration::from_millis(50));
        assert_eq!(s.flows[0].app, AppDef::Bulk { bytes: Some(1_000_000), direction: Direction::Down, close: true });
    }

    #[test]
    fn dumbbell_draws_per_client_rtts_from_the_seed() {
        let text = r#"
duration = "1s"
[dumbbell]
clients = 200
bottleneck_rate = "100Mbps"
queue = 1375
rtt = "55ms"
rtt_std = "5ms"
"#;
        let s = load_toml(text, Some(4)).unwrap();
        assert_eq!(s.nodes.len(), 203);
        let rtts: Vec<f64> = s.flows.iter().map(|f| f.base_rtt.as_secs_f64() * 1e3).collect();
        let mean = rtts.iter().sum::<f64>() / rtts.len() as f64;
        let sd = (rtts.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / rtts.len() as f64).sqrt();
        assert!((mean - 55.0).abs() < 1.5, "{mean}");
        assert!((sd - 5.0).abs() < 1.0, "{sd}");
        let other = load_toml(text, Some(5)).unwrap();
        assert_ne!(other.flows[0].base_rtt, s.flows[0].base_rtt);
        assert_eq!(load_toml(text, Some(4)).unwrap(), s);
    }

    #[test]
    fn poisson_arrivals_replace_the_uniform_starts_with_exponential_gaps_and_move_nothing_else() {
        let text = r#"
duration = "1s"
[dumbbell]
clients = 400
bottleneck_rate = "100Mbps"
rtt = "55ms"
rtt_std = "5ms"
[dumbbell.flow]
start = "1s"
start_jitter = "2s"
"#;
        let uniform = load_toml(text, Some(3)).unwrap();
        let poisson = load_toml(&text.replace("[dumbbell.flow]", "arrivals = \"poisson\"\n[dumbbell.flow]"), Some(3)).unwrap();
        let starts: Vec<f64> = poisson.flows.iter().map(|f| f.start.as_secs_f64()).collect();
        assert!(starts.windows(2).all(|w| w[0] <= w[1]), "arrivals in client order");
        assert!(starts[0] > 1.0);
        // 400 gaps of mean 5 ms: the last arrival is Gamma(400, 5 ms), 2 s ± 0.1 s after the start
        assert!((starts[399] - 3.0).abs() < 0.4, "{}", starts[399]);
        let gaps: Vec<f64> = std::iter::once(starts[0] - 1.0).chain(starts.windows(2).map(|w| w[1] - w[0])).collect();
        let mean = gaps.iter().sum::<f64>() / 400.0;
        let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / 400.0).sqrt();
        assert!((sd / mean - 1.0).abs() < 0.2, "exponential gaps: sd ≈ mean ({sd} vs {mean})");
        assert_ne!(uniform.flows.iter().map(|f| f.start).collect::<Vec<_>>(), poisson.flows.iter().map(|f| f.start).collect::<Vec<_>>());
        // only the starts differ: RTTs and everything else are the uniform run's
        for (u, q) in uniform.flows.iter().zip(&poisson.flows) {
            assert_eq!(u.base_rtt, q.base_rtt);
            assert_eq!(u.app, q.app);
        }
        assert_eq!(uniform.nodes, poisson.nodes);
        let e = fails(&text.replace("[dumbbell.flow]", "arrivals = \"bursty\"\n[dumbbell.flow]"));
        assert_eq!(e, "dumbbell.arrivals: unknown arrivals \"bursty\" (uniform, poisson)");
        let e = fails(&text.replace("[dumbbell.flow]", "arrivals = \"poisson\"\n[dumbbell.flow]").replace("start_jitter = \"2s\"", ""));
        assert!(e.starts_with("dumbbell.arrivals: \"poisson\" needs flow.start_jitter"), "{e}");
    }

    fn fails(text: &str) -> String {
        let e = load_toml(text, None).unwrap_err().0;
        assert!(!e.contains('\n'), "one line: {e}");
        e
    }

    #[test]
    fn unknown_key_names_its_path() {
        let e = fails(&TWO_HOSTS.replace("delay = \"10ms\"", "delay = \"10ms\"\ncolour = 3"));
        assert!(e.starts_with("link[0].colour: unknown field `colour`"), "{e}");
    }

    #[test]
    fn negative_rate_names_its_path() {
        let e = fails(&TWO_HOSTS.replace("rate = \"100Mbps\"", "rate = \"-5Mbps\""));
        assert_eq!(e, "link[0].rate: negative rate");
        let e = fails(&TWO_HOSTS.replace("rate = 1e9", "rate = -1e9"));
        assert_eq!(e, "link[1].rate: negative rate");
    }

    #[test]
    fn link_to_missing_node_names_its_path() {
        let e = fails(&TWO_HOSTS.replace("a = \"r\"\nb = \"b\"", "a = \"r\"\nb = \"r9\""));
        assert_eq!(e, "link[1].b: unknown node \"r9\"");
    }

    #[test]
    fn unreachable_flow_endpoint_is_reported() {
        let text = TWO_HOSTS.to_string() + "[[node]]\nname = \"island\"\n[[flow]]\nclient = \"a\"\nserver = \"island\"\n";
        let e = fails(&text);
        assert_eq!(e, "flow[1].server: no route from \"a\" to \"island\"");
    }

    #[test]
    fn json_and_toml_give_the_same_scenario() {
        let j = r#"{"duration": "2s", "node": [{"name": "a"}, {"name": "b"}],
                    "link": [{"a": "a", "b": "b", "rate": "10Mbps", "delay": "5ms"}],
                    "flow": [{"client": "a", "server": "b"}]}"#;
        let t = "duration = \"2s\"\n[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\nrate = \"10Mbps\"\ndelay = \"5ms\"\n[[flow]]\nclient = \"a\"\nserver = \"b\"\n";
        assert_eq!(load_json(j, None).unwrap(), load_toml(t, None).unwrap());
        let e = load_json(r#"{"duration": "2s", "bogus": 1}"#, None).unwrap_err().0;
        assert!(e.starts_with("bogus: unknown field `bogus`"), "{e}");
    }

    #[test]
    fn rack_tlp_and_frto_can_be_switched_off_per_scenario() {
        let on = load_toml(TWO_HOSTS, None).unwrap();
        let cfg = crate::sim::tcp_config(&on.flows[0].tcp, "tcp").unwrap();
        assert!(cfg.rack_tlp && cfg.frto, "Linux defaults: both on");
        assert!(cfg.tlp, "Linux default tcp_early_retrans = 3");
        let off = load_toml(&(TWO_HOSTS.to_string() + "[tcp]\nrack_tlp = false\nfrto = false\n"), None).unwrap();
        let cfg = crate::sim::tcp_config(&off.flows[0].tcp, "tcp").unwrap();
        assert!(!cfg.rack_tlp && !cfg.frto);
        let tlp_off = load_toml(&(TWO_HOSTS.to_string() + "[tcp]\ntlp = false\n"), None).unwrap();
        let cfg = crate::sim::tcp_config(&tlp_off.flows[0].tcp, "tcp").unwrap();
        assert!(cfg.rack_tlp && !cfg.tlp);
    }
}

#[cfg(test)]
mod edge_tests {
    use super::*;

    #[test]
    fn absurd_numbers_are_errors_not_panics() {
        let base = "duration = \"1s\"\n[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\nrate = \"1Mbps\"\n[[flow]]\nclient = \"a\"\nserver = \"b\"\n";
        let e = load_toml(&format!("{base}app = \"reqresp\"\nperiod = \"10000000000s\"\ncount = 4000000\nresponse_bytes = 1\n"), None)
            .unwrap_err();
        assert_eq!(e.0, "flow[0].count: period × count overflows");
        let e =
            load_toml(&format!("{base}app = \"reqresp\"\nperiod = \"1s\"\ncount = 4000000000\nresponse_bytes = 1\n"), None).unwrap_err();
        assert_eq!(e.0, "flow[0].count: more than 10000000 requests");
        let e = load_toml(&format!("{base}start = 1e300\n"), None).unwrap_err();
        assert_eq!(e.0, "flow[0].start: duration is not a finite number");
        // Huge but finite: saturates instead of overflowing.
        assert!(load_toml(&format!("{base}start = 1e10\nreader = {{ pauses = [{{ at = 1e10, duration = 1e10 }}] }}\n"), None).is_ok());
        let e = load_toml(&base.replace("rate = \"1Mbps\"", "rate = \"fast\""), None).unwrap_err();
        assert_eq!(e.0, "link[0].rate: cannot read rate \"fast\"");
        let e = load_toml(&base.replace("rate = \"1Mbps\"", "rate = \"1 furlong\""), None).unwrap_err();
        assert!(e.0.starts_with("link[0].rate: unknown unit \"furlong\""), "{}", e.0);
    }

    #[test]
    fn gilbert_elliott_in_time_needs_mean_bad_and_reads_it_as_a_duration() {
        let base = "duration = \"1s\"\n[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\nrate = \"1Mbps\"\n";
        let with = |loss: &str| load_toml(&format!("{base}loss = {loss}\n[[flow]]\nclient = \"a\"\nserver = \"b\"\n"), None);
        let s = with("{ model = \"gilbert_elliott_time\", p = 0.01, mean_bad = \"120ms\" }").unwrap();
        assert_eq!(s.links[0].ab.loss, LossSpec::GilbertElliottTime { p: 0.01, mean_bad_ns: 120_000_000, loss_good: 0.0, loss_bad: 1.0 });
        let e = with("{ model = \"gilbert_elliott_time\", p = 0.01 }").unwrap_err();
        assert_eq!(e.0, "link[0].loss.mean_bad: missing (mean duration of a Bad period)");
        let e = with("{ model = \"gilbert_elliott\", p = 0.01, r = 0.5, mean_bad = \"1s\" }").unwrap_err();
        assert_eq!(e.0, "link[0].loss.mean_bad: only for model \"gilbert_elliott_time\"");
        let e = with("{ model = \"gilbert_elliott_time\", p = 1.0, mean_bad = \"1s\" }").unwrap_err();
        assert_eq!(e.0, "link[0].loss.p: share of time in Bad must be below 1");
    }

    #[test]
    fn delay_spikes_are_read_per_direction_and_need_a_positive_gap_and_length() {
        let base = "duration = \"1s\"\n[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\nrate = \"1Mbps\"\n";
        let flow = "[[flow]]\nclient = \"a\"\nserver = \"b\"\n";
        let s = load_toml(&format!("{base}ab = {{ spikes = {{ every = \"160s\", length = \"500ms\" }} }}\n{flow}"), None).unwrap();
        let want = crate::delay_spikes::DelaySpikesSpec { every: Duration::from_secs(160), length: Duration::from_millis(500) };
        assert_eq!((s.links[0].ab.spikes, s.links[0].ba.spikes), (Some(want), None));
        let s = load_toml(&format!("{base}spikes = {{ every = \"160s\", length = \"500ms\" }}\n{flow}"), None).unwrap();
        assert_eq!((s.links[0].ab.spikes, s.links[0].ba.spikes), (Some(want), Some(want)));
        let e = load_toml(&format!("{base}ab = {{ spikes = {{ every = \"0s\", length = \"500ms\" }} }}\n{flow}"), None).unwrap_err();
        assert_eq!(e.0, "link[0].ab.spikes.every: must be above 0 (the mean gap between spikes)");
        let e = load_toml(&format!("{base}spikes = {{ every = \"1s\", length = \"0ms\" }}\n{flow}"), None).unwrap_err();
        assert_eq!(e.0, "link[0].spikes.length: must be above 0 (the mean length of a spike)");
        let e = load_toml(&format!("{base}spikes = {{ every = \"1s\" }}\n{flow}"), None).unwrap_err();
        assert!(e.0.contains("length"), "{}", e.0);
    }

    #[test]
    fn jitter_is_read_per_direction_with_its_own_seed_and_needs_a_positive_mean() {
        let base = "duration = \"1s\"\n[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\nrate = \"1Mbps\"\n";
        let flow = "[[flow]]\nclient = \"a\"\nserver = \"b\"\n";
        let s = load_toml(&format!("{base}ba = {{ jitter = {{ mean = \"20us\", seed = 3 }} }}\n{flow}"), None).unwrap();
        let want = crate::delay_jitter::DelayJitterSpec { mean: Duration::from_micros(20), seed: 3 };
        assert_eq!((s.links[0].ab.jitter, s.links[0].ba.jitter), (None, Some(want)));
        let s = load_toml(&format!("{base}jitter = {{ mean = \"20us\" }}\n{flow}"), None).unwrap();
        let want = crate::delay_jitter::DelayJitterSpec { seed: 0, ..want };
        assert_eq!((s.links[0].ab.jitter, s.links[0].ba.jitter), (Some(want), Some(want)));
        let e = load_toml(&format!("{base}jitter = {{ mean = \"0us\" }}\n{flow}"), None).unwrap_err();
        assert_eq!(e.0, "link[0].jitter.mean: must be above 0 (the mean extra delay; leave jitter out for none)");
        let e = load_toml(&format!("{base}ab = {{ jitter = {{ mean = \"1us\", seed = 65536 }} }}\n{flow}"), None).unwrap_err();
        assert_eq!(e.0, "link[0].ab.jitter.seed: 65536 is above 65535");
    }
}
