//! The `progressive` table: one row per progressive-download flow, with seed 003's per-connection
//! statistics split by phase (§4.1: "bytes sent and retransmitted, RTTs, and rebuffering events in
//! both phases"; §4.2 Table 1's RTT_startup and BW; §5 throttling-phase-only metrics).
//!
//! Phases (see `progressive_server.rs`): startup = request read → startup bytes acknowledged;
//! throttling = from there → whole body acknowledged, or the end of the run. Rates over the
//! throttling phase are over its length; a flow whose run ends in the startup phase has no
//! throttling-phase values (the paper filters such flows out, §4.1).

use std::time::Duration;

use tcpvideo_model::Time;

use super::progressive::ProgressiveConn;
use super::progressive_server::{ProgressiveServer, SenderSnapshot};
use super::video_outputs::ClientQoe;
use crate::tcp::TcpEndpoint;

/// One row of the `progressive` table. Times in ns since the run started.
#[derive(Clone, Debug, PartialEq)]
pub struct ProgressiveRow {
    pub flow: u32,
    pub client: String,
    pub mode: String,
    pub rate_bps: u64,
    pub file_bytes: u64,
    pub startup_bytes: u64,
    pub request_ns: Option<u64>,
    /// When the startup bytes were acknowledged (throttling phase begins).
    pub throttle_start_ns: Option<u64>,
    /// When the whole body was acknowledged, else the run's end.
    pub throttle_end_ns: Option<u64>,
    pub body_done: bool,
    /// Table 1: srtt when the ustreamer wrote its last startup byte (its switch to throttling).
    pub rtt_startup_ns: Option<u64>,
    /// Table 1: average goodput over the startup phase (BW).
    pub startup_goodput_bps: Option<f64>,
    /// Throttling phase (Fig. 3, Fig. 4, Fig. 8).
    pub throttle_goodput_bps: Option<f64>,
    pub throttle_data_segments: Option<u64>,
    pub throttle_retransmissions: Option<u64>,
    pub throttle_retrans_rate: Option<f64>,
    /// srtt at the end of the connection (throttle end).
    pub srtt_end_ns: Option<u64>,
    /// Fraction of throttling-phase polls at which Trickle's clamp was lifted.
    pub unclamped_share: Option<f64>,
    /// Client: playback start, rebuffering events and their total time (Table 3).
    pub playback_start_ns: Option<u64>,
    pub rebuffer_count: u64,
    pub rebuffer_total_s: f64,
    /// Seconds of the flow (request → end of throttling phase), for the rebuffering frequency.
    pub flow_s: Option<f64>,
    /// Frame player only: pictures discarded (seed 001).
    pub picture_discards: Option<u64>,
}

/// Build flow `flow`'s row at the run's `end`; `sender` is the server's endpoint.
pub fn row(flow: u32, client: &str, c: &mut ProgressiveConn, sender: Option<&TcpEndpoint>, end: Time) -> ProgressiveRow {
    let s: &ProgressiveServer = &c.server;
    let def = s.def();
    let end_snap: Option<SenderSnapshot> = s.body_done.or_else(|| sender.map(|e| ProgressiveServer::snapshot(end, e)));
    let ns = |t: Time| t.as_nanos();
    let request = s.request_read_at();
    let start = s.throttle_start;
    let startup_goodput_bps = match (request, start) {
        (Some(r), Some(st)) if st.at > r => Some(s.startup_bytes() as f64 * 8.0 / st.at.saturating_since(r).as_secs_f64()),
        _ => None,
    };
    let throttle = start.zip(end_snap).filter(|(a, b)| b.at > a.at);
    let throttle_goodput_bps =
        throttle.map(|(a, b)| b.bytes_acked.saturating_sub(a.bytes_acked) as f64 * 8.0 / b.at.saturating_since(a.at).as_secs_f64());
    let segs = throttle.map(|(a, b)| b.data_segments_sent.saturating_sub(a.data_segments_sent));
    let rtx = throttle.map(|(a, b)| b.retransmissions.saturating_sub(a.retransmissions));
    let polls = s.polls_clamped + s.polls_unclamped;
    let (rebuffer_count, rebuffer_total) = c.client.playback.rebuffers(end);
    let flow_end = end_snap.map(|e| e.at).unwrap_or(end);
    ProgressiveRow {
        flow,
        client: client.to_string(),
        mode: def.mode_name.clone(),
        rate_bps: def.rate.bits_per_sec,
        file_bytes: s.file_bytes(),
        startup_bytes: s.startup_bytes(),
        request_ns: request.map(ns),
        throttle_start_ns: start.map(|x| ns(x.at)),
        throttle_end_ns: throttle.map(|(_, b)| ns(b.at)),
        body_done: s.body_done.is_some(),
        rtt_startup_ns: s.startup_written.and_then(|x| x.srtt).map(dur_ns),
        startup_goodput_bps,
        throttle_goodput_bps,
        throttle_data_segments: segs,
        throttle_retransmissions: rtx,
        throttle_retrans_rate: segs.zip(rtx).filter(|(n, _)| *n > 0).map(|(n, r)| r as f64 / n as f64),
        srtt_end_ns: end_snap.and_then(|x| x.srtt).map(dur_ns),
        unclamped_share: (polls > 0 && matches!(def.mode, tcpvideo_model::delivery::DeliveryMode::Trickle { .. }))
            .then(|| s.polls_unclamped as f64 / polls as f64),
        playback_start_ns: c.client.playback.started_at().map(ns),
        rebuffer_count,
        rebuffer_total_s: rebuffer_total.as_secs_f64(),
        flow_s: request.map(|r| flow_end.saturating_since(r).as_secs_f64()),
        picture_discards: match &c.client.playback {
            super::progressive_client::Playback::Frames(f) => Some(f.picture_discards()),
            super::progressive_client::Playback::Buffer(_) => None,
        },
    }
}

/// The flow's row of `video_clients` (startup, stalls, bytes), so the QoE table covers
/// progressive clients too.
pub fn qoe(r: &ProgressiveRow, joined: Time, bytes_read: u64) -> ClientQoe {
    ClientQoe {
        flow: r.flow,
        client: r.client.clone(),
        joined_ns: joined.as_nanos(),
        startup_s: r.playback_start_ns.map(|t| Time::from_nanos(t).saturating_since(joined).as_secs_f64()),
        stall_count: r.rebuffer_count,
        stall_total_s: r.rebuffer_total_s,
        liveness_s: None,
        live_latency_s: None,
        mean_bitrate_bps: r.rate_bps,
        switches: 0,
        bytes: bytes_read,
        segments: 0,
        abr: format!("progressive/{}", r.mode),
    }
}

fn dur_ns(d: Duration) -> u64 {
    d.as_nanos() as u64
}
