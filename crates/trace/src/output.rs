//! Result tables and the summary: per-flow, per-stall, per-retransmission, per-burst and
//! per-HTTP-transaction rows, the seed's aggregate tables, and the upload→download stall pairing
//! of Zhou et al. §2.3 (Table 3).
//!
//! Aggregates follow the seed's definitions:
//! - Table 1: upload flows bucketed by reordering rate, mean throughput, size and FCT;
//! - stall share of FCT (§2.1/§2.2: "the stall time accounts for 31.6% of the completion time
//!   in upload flows"): Σ stall time within the flows' FCT windows / Σ FCT, per direction;
//! - stall types (Table 2 and §2.1) as shares of stall *time*;
//! - timeout-retransmission types (Table 5) as shares of timeout retransmissions, per frame type;
//! - frame table (Table 4): share of frames, mean interval between the server sending
//!   consecutive frames of a type, mean size, loss rate (retransmitted / sent data packets —
//!   Trickle §5.1 also uses "retransmissions to approximate losses"), timeouts per loss;
//! - RTT / RTT_3WHS by in_flight (Fig. 5);
//! - pairing (Table 3): flows with the same channel key; an upload stall starting at T "causes"
//!   a download stall if one of the channel's download flows has a stall starting within
//!   [T − 1 s, T + 1 s]; Table 3 gives the kinds of those download stalls.
//!
//! Rows are sorted by flow start time and 5-tuple; flow ids are assigned after sorting.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{json, Value};

use crate::burst::Burst;
use crate::decode::addr_to_string;
use crate::flow::{FlowOut, INFLIGHT_EDGES_KB};
use crate::flv::FrameType;
use crate::reader::{ReadStats, Warning};
use crate::retrans::{RetransKind, TimeoutType};
use crate::stall::StallKind;
use crate::AnalyzeOptions;

/// Counters of the decoding stage.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DecodeStats {
    pub packets: u64,
    pub tcp: u64,
    pub not_ip: u64,
    pub not_tcp: u64,
    pub fragments: u64,
    pub truncated: u64,
    pub bad_header: u64,
    pub unknown_link: u64,
    pub ts_backwards: u64,
    /// Exact copies of a recent frame (span port, overlapping merge), dropped (`dedup`).
    pub duplicates: u64,
}

/// One flow.
#[derive(Clone, Debug, Serialize)]
pub struct FlowRecord {
    pub flow_id: u64,
    pub client_ip: String,
    pub client_port: u16,
    pub server_ip: String,
    pub server_port: u16,
    pub ip_version: u8,
    /// How the server side was found: "option", "syn" or "port".
    pub server_by: &'static str,
    pub handshake: bool,
    /// "upload" (server receives) or "download" (server sends).
    pub direction: &'static str,
    pub app: &'static str,
    pub channel: Option<String>,
    pub name: Option<String>,
    pub role: Option<String>,
    pub start_ns: u64,
    pub end_ns: u64,
    pub fct_ns: u64,
    /// Unique payload bytes in the flow's direction.
    pub bytes: u64,
    pub bytes_up: u64,
    pub bytes_down: u64,
    /// Unique bytes over the FCT; none for a flow without payload (refused, empty).
    pub throughput_bps: Option<f64>,
    /// Bytes delivered (download: cumulatively acknowledged; upload: in order at the server)
    /// over the same FCT, so never above the throughput.
    pub goodput_bps: Option<f64>,
    /// Where the capture was taken: "server", "client", "mid_path" or "unknown" (no handshake).
    pub vantage: &'static str,
    /// The seed's 3WHS RTT at the server (SYN+ACK → ACK); elsewhere the whole SYN → ACK time.
    pub rtt_3whs_ns: Option<u64>,
    /// tshark's initial RTT: most recent SYN → the ACK completing the handshake.
    pub rtt_initial_ns: Option<u64>,
    /// Capture point ↔ server round trip (SYN → SYN+ACK at the capture point).
    pub rtt_server_half_ns: Option<u64>,
    /// Capture point ↔ client round trip (SYN+ACK → ACK at the capture point).
    pub rtt_client_half_ns: Option<u64>,
    pub rtt_samples: u64,
    pub rtt_min_ns: Option<u64>,
    pub rtt_mean_ns: Option<u64>,
    pub srtt_end_ns: Option<u64>,
    pub rto_end_ns: u64,
    pub mss: u32,
    pub packets_up: u64,
    pub packets_down: u64,
    pub data_packets: u64,
    pub retrans_packets: u64,
    /// Kinds of the retransmissions of the flow's direction; they add up to `retrans_packets`.
    pub fast_retrans: u64,
    pub timeout_retrans: u64,
    /// ACK-clocked after a timeout (rest of the window in the RTO loss episode).
    pub recovery_retrans: u64,
    /// ACK-clocked without loss evidence.
    pub other_retrans: u64,
    /// Tail-loss probes re-sending the highest segment (tlp.rs): timer-driven, no RTO.
    pub tlp_retrans: u64,
    /// Upload flows: repeated client data seen at the receiving server, whose trigger cannot be
    /// told from there.
    pub unclassified_retrans: u64,
    pub retrans_rate: f64,
    pub reordered_packets: u64,
    pub reordering_rate: f64,
    pub timeout_reorderings: u64,
    pub stall_count: u64,
    pub stall_time_ns: u64,
    pub stall_share: f64,
    /// Episodes of a zero receive window advertised by the client (not packets).
    pub zero_window_episodes: u64,
    /// Keep-alive (or window probe) packets, either side.
    pub keepalive_packets: u64,
    /// Micro-bursts of the flow's direction.
    pub bursts: u64,
    pub max_in_flight: u64,
    pub syn_retrans: u32,
    pub closed_by: &'static str,
}

/// One stall.
#[derive(Clone, Debug, Serialize)]
pub struct StallRecord {
    pub flow_id: u64,
    pub direction: &'static str,
    pub start_ns: u64,
    pub end_ns: u64,
    pub duration_ns: u64,
    pub threshold_ns: u64,
    pub kind: StallKind,
    pub timeout_type: Option<TimeoutType>,
    pub frame: FrameType,
    pub in_flight: u64,
    /// Upload stalls: a paired download flow stalled within ±1 s. Download stalls: an upload
    /// stall of the same channel started within ±1 s.
    pub paired: bool,
    /// The part of the stall inside the flow's FCT: the seed's stall time is a share of the
    /// completion time ("Among these stalls, normal stall contributes 93.5 % of stall time",
    /// §2.1), so the summary's time by class counts only this part (issue 16: an upload's FCT
    /// ends at its last data byte, so the keep-alive gaps of a silent publisher before the 20 s
    /// close are outside it).
    #[serde(skip)]
    pub in_fct_ns: u64,
}

/// One retransmitted segment.
#[derive(Clone, Debug, Serialize)]
pub struct RetransRecord {
    pub flow_id: u64,
    pub ts_ns: u64,
    pub seq: u64,
    pub len: u32,
    pub kind: RetransKind,
    pub prior_retrans: u16,
    pub frame: FrameType,
    pub timeout_type: Option<TimeoutType>,
    /// Segments out at the RTO (the seed's Eq. 1 `packets_out`: SND.UNA to SND.NXT).
    pub packets_out: Option<u32>,
    pub segs_after: Option<u32>,
    pub dupacks: Option<u32>,
    pub spurious: Option<bool>,
    pub ack_beyond: Option<bool>,
    pub flow_tail: Option<bool>,
}

/// One micro-burst.
#[derive(Clone, Debug, Serialize)]
pub struct BurstRecord {
    pub flow_id: u64,
    pub direction: &'static str,
    pub start_ns: u64,
    pub end_ns: u64,
    pub packets: u32,
    pub bytes: u64,
    pub frame: FrameType,
    /// Some packet of the burst was later retransmitted (Trickle Fig. 7).
    pub retransmitted: bool,
}

/// One HTTP transaction (a segment; its response is an on period).
#[derive(Clone, Debug, Serialize)]
pub struct HttpRecord {
    pub flow_id: u64,
    pub index: u32,
    pub method: String,
    pub path: String,
    pub status: u16,
    pub request_ns: u64,
    pub response_start_ns: Option<u64>,
    pub response_end_ns: Option<u64>,
    pub on_period_ns: Option<u64>,
    pub response_bytes: u64,
}

/// Table 4/5 row: one frame type over all flows of the type's direction.
#[derive(Clone, Debug, Serialize)]
pub struct FrameTypeStats {
    pub frame: FrameType,
    pub frames: u64,
    pub frames_share: f64,
    pub mean_interval_s: Option<f64>,
    pub mean_size_bytes: Option<f64>,
    pub packets: u64,
    pub retrans_packets: u64,
    pub loss_rate: f64,
    pub timeout_retrans: u64,
    pub timeout_per_loss: f64,
    /// Counts per TimeoutType::ALL order (tail, less_packet, double, ack_delay_loss,
    /// continuous_loss, other).
    pub timeout_types: [u64; 6],
}

/// Fig. 5 row.
#[derive(Clone, Debug, Serialize)]
pub struct RttBucket {
    pub lo_kb: u64,
    pub hi_kb: Option<u64>,
    pub samples: u64,
    pub mean_rtt_ms: Option<f64>,
    pub mean_ratio: Option<f64>,
}

/// Table 3.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PairingStats {
    pub channels: u64,
    pub upload_stalls: u64,
    pub upload_stalls_causing: u64,
    pub share_causing: Option<f64>,
    /// Kinds of the download stalls caused (one per causing upload stall: the nearest).
    pub caused_kinds: BTreeMap<String, u64>,
}

/// Everything an analysis produced.
#[derive(Clone, Debug, Serialize)]
pub struct Analysis {
    pub flows: Vec<FlowRecord>,
    pub stalls: Vec<StallRecord>,
    pub retransmissions: Vec<RetransRecord>,
    pub bursts: Vec<BurstRecord>,
    pub http: Vec<HttpRecord>,
    pub frame_types: Vec<FrameTypeStats>,
    pub rtt_buckets: Vec<RttBucket>,
    pub pairing: PairingStats,
    pub read: ReadStats,
    pub decode: DecodeStats,
    pub warnings: Vec<Warning>,
    pub options: AnalyzeOptions,
    /// Each server's TLP and RACK settings as the wire told them (server_settings.rs).
    pub server_settings: Vec<crate::server_settings::ServerSettings>,
}

/// Headline numbers (the JSON summary).
#[derive(Clone, Debug, Serialize)]
pub struct Summary(pub Value);

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// Overlap of [s, e) with [lo, hi).
fn clip(s: u64, e: u64, lo: u64, hi: u64) -> u64 {
    e.min(hi).saturating_sub(s.max(lo))
}

pub(crate) fn build(
    mut flows: Vec<FlowOut>,
    opts: &AnalyzeOptions,
    read: ReadStats,
    decode: DecodeStats,
    warnings: Vec<Warning>,
) -> Analysis {
    flows.sort_by_key(|a| (a.start_ns, a.key));
    // Single-segment re-sends: probe or RTO, from every flow of the same server.
    crate::tlp_inference::resolve(&mut flows);
    crate::rack_inference::resolve(&mut flows);
    let server_settings = crate::server_settings::collect(&flows);
    let mut a = Analysis {
        flows: Vec::with_capacity(flows.len()),
        stalls: Vec::new(),
        retransmissions: Vec::new(),
        bursts: Vec::new(),
        http: Vec::new(),
        frame_types: Vec::new(),
        rtt_buckets: Vec::new(),
        pairing: PairingStats::default(),
        read,
        decode,
        warnings,
        options: opts.clone(),
        server_settings,
    };
    let mut frame_pkts = [(0u64, 0u64, 0u64); 5];
    let mut frame_agg = [(0u64, 0u64, 0u64, 0u64); 5];
    let mut tt_by_frame = [[0u64; 6]; 5];
    let mut buckets = [(0u64, 0f64, 0u64); 7];
    for (id, f) in flows.iter().enumerate() {
        let id = id as u64;
        let dir = if f.download { "download" } else { "upload" };
        let fct = f.fct_end_ns.saturating_sub(f.fct_start_ns);
        // Stalls of the flow's direction: the gap must exceed that direction's threshold.
        let mut stall_time = 0u64;
        let mut stall_count = 0u64;
        for s in &f.stalls {
            let thr = if f.download { s.thr_down_ns } else { s.thr_up_ns };
            if s.end_ns - s.start_ns <= thr {
                continue;
            }
            stall_count += 1;
            let in_fct_ns = clip(s.start_ns, s.end_ns, f.fct_start_ns, f.fct_end_ns.max(f.fct_start_ns));
            stall_time += in_fct_ns;
            let kind = if f.download { s.kind_down } else { s.kind_up };
            a.stalls.push(StallRecord {
                flow_id: id,
                direction: dir,
                start_ns: s.start_ns,
                end_ns: s.end_ns,
                duration_ns: s.end_ns - s.start_ns,
                threshold_ns: thr,
                kind,
                timeout_type: s.retrans.and_then(|i| f.retrans[i].timeout_type),
                frame: s.frame,
                in_flight: s.in_flight,
                paired: false,
                in_fct_ns,
            });
        }
        for r in &f.retrans {
            let e = r.evidence;
            a.retransmissions.push(RetransRecord {
                flow_id: id,
                ts_ns: r.ts_ns,
                seq: r.seq,
                len: r.len,
                kind: r.kind,
                prior_retrans: r.prior,
                frame: r.frame,
                timeout_type: r.timeout_type,
                packets_out: e.map(|e| e.packets_out),
                segs_after: e.map(|e| e.segs_after),
                dupacks: e.map(|e| e.dupacks),
                spurious: e.map(|e| e.spurious),
                ack_beyond: e.map(|e| e.ack_beyond),
                flow_tail: e.map(|e| e.flow_tail),
            });
        }
        let bursts: &Vec<(Burst, bool)> = if f.download { &f.bursts } else { &f.bursts_up };
        if opts.keep_bursts {
            for (b, hit) in bursts {
                a.bursts.push(BurstRecord {
                    flow_id: id,
                    direction: dir,
                    start_ns: b.start_ns,
                    end_ns: b.end_ns,
                    packets: b.packets,
                    bytes: b.bytes,
                    frame: b.frame,
                    retransmitted: *hit,
                });
            }
        }
        for (i, t) in f.http.iter().enumerate() {
            a.http.push(HttpRecord {
                flow_id: id,
                index: i as u32,
                method: t.method.clone(),
                path: t.path.clone(),
                status: t.status,
                request_ns: t.request_ns,
                response_start_ns: t.response_start_ns,
                response_end_ns: t.response_end_ns,
                on_period_ns: match (t.response_start_ns, t.response_end_ns) {
                    (Some(s), Some(e)) => Some(e.saturating_sub(s)),
                    _ => None,
                },
                response_bytes: t.response_bytes,
            });
        }
        if f.download {
            for ft in FrameType::ALL {
                let k = ft.index();
                frame_pkts[k].0 += f.frame_pkts[k].packets;
                frame_pkts[k].1 += f.frame_pkts[k].retrans;
                frame_pkts[k].2 += f.frame_pkts[k].timeouts;
                for (sum, n) in tt_by_frame[k].iter_mut().zip(&f.timeout_types_by_frame[k]) {
                    *sum += n;
                }
            }
            for (i, b) in f.rtt_buckets.iter().enumerate() {
                buckets[i].0 += b.0;
                buckets[i].1 += b.1;
                buckets[i].2 += b.2;
            }
        }
        for ft in FrameType::ALL {
            let k = ft.index();
            let g = &f.frame_agg[k];
            frame_agg[k].0 += g.frames;
            frame_agg[k].1 += g.bytes;
            frame_agg[k].2 += g.interval_sum_ns;
            frame_agg[k].3 += g.intervals;
        }
        let (bytes, data_pkts) = if f.download { (f.bytes_down, f.data_pkts_down) } else { (f.bytes_up, f.data_pkts_up) };
        let retrans_pkts = if f.download { f.retrans_pkts } else { f.dup_pkts_up };
        // Both rates over the FCT: goodput counts only delivered bytes, so it cannot exceed
        // the throughput (issue 12: different windows made it exceed it). No rate at all for a
        // flow that carried nothing (a refused connection is not a 0 bit/s sample).
        let delivered = if f.download { f.acked_bytes } else { f.delivered_up };
        let rate = |b: u64| (bytes > 0 && fct > 0).then(|| b as f64 * 8e9 / fct as f64);
        let (fast, timeout, recovery, other, tlp, unclassified) = if f.download {
            (f.fast_retrans, f.timeout_retrans, f.recovery_retrans, f.other_retrans, f.tlp_retrans, 0)
        } else {
            (0, 0, 0, 0, 0, retrans_pkts)
        };
        a.flows.push(FlowRecord {
            flow_id: id,
            client_ip: addr_to_string(f.client.0, f.v6),
            client_port: f.client.1,
            server_ip: addr_to_string(f.server.0, f.v6),
            server_port: f.server.1,
            ip_version: if f.v6 { 6 } else { 4 },
            server_by: f.server_by,
            handshake: f.handshake,
            direction: dir,
            app: f.proto.as_str(),
            channel: f.channel.clone(),
            name: f.name.clone(),
            role: f.role.clone(),
            start_ns: f.start_ns,
            end_ns: f.end_ns,
            fct_ns: fct,
            bytes,
            bytes_up: f.bytes_up,
            bytes_down: f.bytes_down,
            throughput_bps: rate(bytes),
            goodput_bps: rate(delivered.min(bytes)),
            vantage: f.vantage.as_str(),
            rtt_3whs_ns: f.rtt_3whs_ns,
            rtt_initial_ns: f.rtt_initial_ns,
            rtt_server_half_ns: f.rtt_server_half_ns,
            rtt_client_half_ns: f.rtt_client_half_ns,
            rtt_samples: f.rtt_samples,
            rtt_min_ns: f.rtt_min_ns,
            rtt_mean_ns: f.rtt_mean_ns,
            srtt_end_ns: f.srtt_end_ns,
            rto_end_ns: f.rto_end_ns,
            mss: f.mss,
            packets_up: f.pkts_up,
            packets_down: f.pkts_down,
            data_packets: data_pkts,
            retrans_packets: retrans_pkts,
            fast_retrans: fast,
            timeout_retrans: timeout,
            recovery_retrans: recovery,
            other_retrans: other,
            tlp_retrans: tlp,
            unclassified_retrans: unclassified,
            retrans_rate: ratio(retrans_pkts as f64, data_pkts as f64),
            reordered_packets: f.reordered_up,
            reordering_rate: ratio(f.reordered_up as f64, f.data_pkts_up as f64),
            timeout_reorderings: f.timeout_reorderings,
            stall_count,
            stall_time_ns: stall_time,
            stall_share: ratio(stall_time as f64, fct as f64),
            zero_window_episodes: f.zero_windows,
            keepalive_packets: f.keepalives,
            bursts: bursts.len() as u64,
            max_in_flight: f.max_in_flight,
            syn_retrans: f.syn_retrans,
            closed_by: f.closed_by,
        });
    }
    let total_frames: u64 = frame_agg.iter().take(3).map(|x| x.0).sum();
    for ft in [FrameType::I, FrameType::P, FrameType::Audio, FrameType::Meta, FrameType::Unknown] {
        let k = ft.index();
        let (frames, bytes, isum, icount) = frame_agg[k];
        let (pk, rt, to) = frame_pkts[k];
        a.frame_types.push(FrameTypeStats {
            frame: ft,
            frames,
            frames_share: if k < 3 { ratio(frames as f64, total_frames as f64) } else { 0.0 },
            mean_interval_s: (icount > 0).then(|| isum as f64 / icount as f64 / 1e9),
            mean_size_bytes: (frames > 0).then(|| bytes as f64 / frames as f64),
            packets: pk,
            retrans_packets: rt,
            loss_rate: ratio(rt as f64, pk as f64),
            timeout_retrans: to,
            timeout_per_loss: ratio(to as f64, rt as f64),
            timeout_types: tt_by_frame[k],
        });
    }
    let mut lo = 0;
    for (i, &hi) in INFLIGHT_EDGES_KB.iter().enumerate() {
        let (n, rs, rt) = buckets[i];
        a.rtt_buckets.push(RttBucket {
            lo_kb: lo,
            hi_kb: (hi != u64::MAX).then_some(hi),
            samples: n,
            mean_rtt_ms: (n > 0).then(|| rt as f64 / n as f64 / 1e6),
            mean_ratio: (n > 0).then(|| rs / n as f64),
        });
        lo = hi;
    }
    pair_channels(&mut a, opts.pairing_window.as_nanos() as u64);
    a
}

/// Seed 000 §2.3 / Table 3: pair upload and download flows by channel key.
fn pair_channels(a: &mut Analysis, window: u64) {
    let mut chans: BTreeMap<&str, (Vec<u64>, Vec<u64>)> = BTreeMap::new();
    for f in &a.flows {
        if let Some(c) = f.channel.as_deref() {
            let e = chans.entry(c).or_default();
            if f.direction == "upload" {
                e.0.push(f.flow_id);
            } else {
                e.1.push(f.flow_id);
            }
        }
    }
    let mut by_flow: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for (i, s) in a.stalls.iter().enumerate() {
        by_flow.entry(s.flow_id).or_default().push(i);
    }
    let mut p = PairingStats::default();
    let mut mark_up = Vec::new();
    let mut mark_down = Vec::new();
    for (_, (ups, downs)) in chans.iter().filter(|(_, (u, d))| !u.is_empty() && !d.is_empty()) {
        p.channels += 1;
        // Download stalls of the channel sorted by start.
        let mut ds: Vec<(u64, usize)> =
            downs.iter().flat_map(|f| by_flow.get(f).into_iter().flatten().map(|&i| (a.stalls[i].start_ns, i))).collect();
        ds.sort_unstable();
        for u in ups {
            for &i in by_flow.get(u).into_iter().flatten() {
                let t = a.stalls[i].start_ns;
                p.upload_stalls += 1;
                let lo = ds.partition_point(|d| d.0 < t.saturating_sub(window));
                let hi = ds.partition_point(|d| d.0 <= t + window);
                if lo < hi {
                    p.upload_stalls_causing += 1;
                    mark_up.push(i);
                    let nearest = ds[lo..hi].iter().min_by_key(|d| d.0.abs_diff(t)).unwrap().1;
                    *p.caused_kinds.entry(a.stalls[nearest].kind.as_str().to_string()).or_default() += 1;
                    mark_down.extend(ds[lo..hi].iter().map(|d| d.1));
                }
            }
        }
    }
    for i in mark_up.into_iter().chain(mark_down) {
        a.stalls[i].paired = true;
    }
    p.share_causing = (p.upload_stalls > 0).then(|| p.upload_stalls_causing as f64 / p.upload_stalls as f64);
    a.pairing = p;
}

impl Analysis {
    /// The summary as JSON: the seed's tables and the reading/decoding counters.
    pub fn summary(&self) -> Summary {
        let mut out = serde_json::Map::new();
        for dir in ["upload", "download"] {
            // Flows that carried no payload (refused or empty connections) are no FCT,
            // throughput or stall samples; they are counted apart.
            let flows: Vec<&FlowRecord> = self.flows.iter().filter(|f| f.direction == dir && f.bytes > 0).collect();
            let fct: u64 = flows.iter().map(|f| f.fct_ns).sum();
            let stall: u64 = flows.iter().map(|f| f.stall_time_ns).sum();
            let mut kinds: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
            let list: &[StallKind] = if dir == "upload" { &StallKind::UPLOAD } else { &StallKind::DOWNLOAD };
            for k in list {
                kinds.insert(k.as_str(), (0, 0));
            }
            // Time by class is stall time inside the FCT (what `stall_share_of_fct` counts); a
            // stall wholly outside it (an upload's keep-alive gaps after its last data byte) is
            // counted apart, not in any class.
            let (mut outside_n, mut outside_ns) = (0u64, 0u64);
            for s in self.stalls.iter().filter(|s| s.direction == dir) {
                outside_ns += s.duration_ns - s.in_fct_ns;
                if s.in_fct_ns == 0 {
                    outside_n += 1;
                    continue;
                }
                let e = kinds.entry(s.kind.as_str()).or_default();
                e.0 += 1;
                e.1 += s.in_fct_ns;
            }
            let total_time: u64 = kinds.values().map(|v| v.1).sum();
            let data: u64 = flows.iter().map(|f| f.data_packets).sum();
            let rtx: u64 = flows.iter().map(|f| f.retrans_packets).sum();
            let reord: u64 = flows.iter().map(|f| f.reordered_packets).sum();
            let treord: u64 = flows.iter().map(|f| f.timeout_reorderings).sum();
            let mut fcts: Vec<u64> = flows.iter().map(|f| f.fct_ns).collect();
            fcts.sort_unstable();
            let mut tputs: Vec<f64> = flows.iter().filter_map(|f| f.throughput_bps).collect();
            tputs.sort_by(|a, b| a.total_cmp(b));
            out.insert(
                dir.to_string(),
                json!({
                    "flows": flows.len(),
                    "fct_total_s": fct as f64 / 1e9,
                    "fct_median_s": fcts.get(fcts.len() / 2).map(|&x| x as f64 / 1e9),
                    "throughput_median_bps": tputs.get(tputs.len() / 2),
                    "stall_time_s": stall as f64 / 1e9,
                    "stall_share_of_fct": ratio(stall as f64, fct as f64),
                    "stalls": kinds.values().map(|v| v.0).sum::<u64>(),
                    "stalls_outside_fct": outside_n,
                    "stall_time_outside_fct_s": outside_ns as f64 / 1e9,
                    "stall_types_by_time": kinds.iter().map(|(k, v)| (k.to_string(), json!({
                        "count": v.0, "time_s": v.1 as f64 / 1e9, "share": ratio(v.1 as f64, total_time as f64)
                    }))).collect::<serde_json::Map<_, _>>(),
                    "data_packets": data,
                    "retrans_rate": ratio(rtx as f64, data as f64),
                    "reordering_rate": ratio(reord as f64, data as f64),
                    "timeout_reordering_share": ratio(treord as f64, reord as f64),
                }),
            );
        }
        // Table 5 (timeout types) overall and per frame type.
        let mut tt = serde_json::Map::new();
        let mut overall = [0u64; 6];
        for r in &self.retransmissions {
            if let Some(t) = r.timeout_type {
                overall[TimeoutType::ALL.iter().position(|&x| x == t).unwrap()] += 1;
            }
        }
        let shares = |c: &[u64; 6]| {
            let n: u64 = c.iter().sum();
            TimeoutType::ALL
                .iter()
                .zip(c)
                .map(|(t, &v)| (t.as_str().to_string(), json!({"count": v, "share": ratio(v as f64, n as f64)})))
                .collect::<serde_json::Map<_, _>>()
        };
        tt.insert("all".into(), Value::Object(shares(&overall)));
        for f in &self.frame_types {
            if f.timeout_retrans > 0 || f.frame.index() < 3 {
                tt.insert(f.frame.as_str().into(), Value::Object(shares(&f.timeout_types)));
            }
        }
        out.insert("timeout_types".into(), Value::Object(tt));
        // Table 1: upload flows by reordering rate (< 10 %, 10–20 %, > 20 %).
        let mut t1 = Vec::new();
        for (lo, hi, label) in [(0.0, 0.1, "<10%"), (0.1, 0.2, "10-20%"), (0.2, f64::INFINITY, ">20%")] {
            let fl: Vec<&FlowRecord> = self
                .flows
                .iter()
                .filter(|f| f.direction == "upload" && f.data_packets > 0)
                .filter(|f| f.reordering_rate >= lo && f.reordering_rate < hi)
                .collect();
            let n = fl.len() as f64;
            t1.push(json!({
                "reordering_rate": label,
                "flows": fl.len(),
                "mean_throughput_bps": (n > 0.0).then(|| fl.iter().filter_map(|f| f.throughput_bps).sum::<f64>() / n),
                "mean_bytes": (n > 0.0).then(|| fl.iter().map(|f| f.bytes as f64).sum::<f64>() / n),
                "mean_fct_s": (n > 0.0).then(|| fl.iter().map(|f| f.fct_ns as f64).sum::<f64>() / n / 1e9),
            }));
        }
        out.insert("upload_by_reordering".into(), Value::Array(t1));
        // HTTP segments: on periods (first to last response byte) and off periods (last byte
        // of one response to the first of the next on the same connection).
        let mut on: Vec<u64> = self.http.iter().filter_map(|h| h.on_period_ns).collect();
        let mut off: Vec<u64> = self
            .http
            .windows(2)
            .filter(|w| w[0].flow_id == w[1].flow_id)
            .filter_map(|w| Some(w[1].response_start_ns?.saturating_sub(w[0].response_end_ns?)))
            .collect();
        on.sort_unstable();
        off.sort_unstable();
        out.insert(
            "http".into(),
            json!({
                "transactions": self.http.len(),
                "on_period_median_s": on.get(on.len() / 2).map(|&x| x as f64 / 1e9),
                "off_period_median_s": off.get(off.len() / 2).map(|&x| x as f64 / 1e9),
            }),
        );
        out.insert("frame_types".into(), serde_json::to_value(&self.frame_types).unwrap());
        out.insert("rtt_by_in_flight".into(), serde_json::to_value(&self.rtt_buckets).unwrap());
        out.insert("pairing".into(), serde_json::to_value(&self.pairing).unwrap());
        let mut sizes: Vec<u32> = self.bursts.iter().map(|b| b.packets).collect();
        sizes.sort_unstable();
        out.insert(
            "bursts".into(),
            json!({
                "count": sizes.len(),
                "median_packets": sizes.get(sizes.len() / 2),
                "p90_packets": sizes.get(sizes.len() * 9 / 10),
                "with_retransmission": self.bursts.iter().filter(|b| b.retransmitted).count(),
            }),
        );
        let srtts: Vec<u64> = self.flows.iter().filter_map(|f| f.srtt_end_ns).collect();
        out.insert(
            "srtt_end_mean_ms".into(),
            json!((!srtts.is_empty()).then(|| srtts.iter().sum::<u64>() as f64 / srtts.len() as f64 / 1e6)),
        );
        out.insert("flows".into(), json!(self.flows.len()));
        out.insert("refused_or_empty_flows".into(), json!(self.flows.iter().filter(|f| f.bytes == 0).count()));
        let mut vantage: BTreeMap<&str, u64> = BTreeMap::new();
        for f in &self.flows {
            *vantage.entry(f.vantage).or_default() += 1;
        }
        out.insert("vantage".into(), json!(vantage));
        out.insert("read".into(), serde_json::to_value(&self.read).unwrap());
        out.insert("decode".into(), serde_json::to_value(&self.decode).unwrap());
        out.insert("warnings".into(), serde_json::to_value(&self.warnings).unwrap());
        out.insert("options".into(), serde_json::to_value(&self.options).unwrap());
        out.insert("server_settings".into(), serde_json::to_value(&self.server_settings).unwrap());
        Summary(Value::Object(out))
    }

    /// The summary as pretty JSON text.
    pub fn summary_json(&self) -> String {
        serde_json::to_string_pretty(&self.summary().0).unwrap()
    }
}
