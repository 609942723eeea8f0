//! The video tables of a run: per-client QoE, per-segment downloads, stalls with their TCP cause,
//! and the per-client buffer series. Rows are plain data (the Python binding turns them into
//! Arrow tables); times are nanoseconds since the run started, like every other table.

use std::time::Duration;

use tcpvideo_model::video::Player;
use tcpvideo_model::Time;

use super::stall_cause::{classify_sorted, WaitedDownload};
use crate::tcp::TcpLogEvent;

/// One client's quality of experience (a row of `video_clients`).
#[derive(Clone, Debug, PartialEq)]
pub struct ClientQoe {
    pub flow: u32,
    pub client: String,
    pub joined_ns: u64,
    pub startup_s: Option<f64>,
    pub stall_count: u64,
    pub stall_total_s: f64,
    /// Seed 004 liveness of the last segment played (≤ 0: behind the live edge).
    pub liveness_s: Option<f64>,
    /// Seed 002 live latency at the end of the run.
    pub live_latency_s: Option<f64>,
    pub mean_bitrate_bps: u64,
    pub switches: u64,
    pub bytes: u64,
    pub segments: u64,
    pub abr: String,
}

/// One segment download (a row of `video_segments`).
#[derive(Clone, Debug, PartialEq)]
pub struct SegmentRow {
    pub flow: u32,
    pub segment: u64,
    pub quality: u32,
    pub bitrate_bps: u64,
    pub bytes: u64,
    pub available_ns: u64,
    pub requested_ns: u64,
    pub first_byte_ns: Option<u64>,
    pub done_ns: Option<u64>,
    /// Request → last byte.
    pub download_s: Option<f64>,
    pub deadline_met: Option<bool>,
    pub play_start_ns: Option<u64>,
    /// Sender SRTT when the last byte arrived.
    pub srtt_at_done_ns: Option<u64>,
}

/// One stall and its TCP cause (a row of `video_stalls`).
#[derive(Clone, Debug, PartialEq)]
pub struct StallRow {
    pub flow: u32,
    pub start_ns: u64,
    pub end_ns: Option<u64>,
    pub duration_s: f64,
    /// The segment playback waited for (None if it was never requested within the run).
    pub segment: Option<u64>,
    pub cause: String,
    pub rto_events: u32,
    pub retransmissions: u32,
    pub recovery_episodes: u32,
    pub restart_after_idle: bool,
    pub download_bps: Option<f64>,
    pub bitrate_bps: Option<u64>,
}

/// One sample of a client's playout buffer (a row of `video_buffer`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BufferSample {
    pub t_ns: u64,
    pub flow: u32,
    pub buffer_s: f64,
    pub buffer_bytes: u64,
    /// 0 startup, 1 playing, 2 stalled, 3 ended.
    pub state: u8,
    pub live_latency_s: Option<f64>,
}

impl BufferSample {
    pub fn of(flow: u32, now: Time, p: &Player) -> BufferSample {
        use tcpvideo_model::video::PlayState;
        BufferSample {
            t_ns: now.as_nanos(),
            flow,
            buffer_s: p.buffer_level(now).as_secs_f64(),
            buffer_bytes: p.buffer_bytes(now),
            state: match p.play_state() {
                PlayState::Startup => 0,
                PlayState::Playing => 1,
                PlayState::Stalled => 2,
                PlayState::Ended => 3,
            },
            live_latency_s: p.live_latency(now).map(|d| d.as_secs_f64()),
        }
    }
}

/// Everything one client contributes to the tables.
pub struct ClientReport {
    pub qoe: ClientQoe,
    pub segments: Vec<SegmentRow>,
    pub stalls: Vec<StallRow>,
}

/// Build one client's rows at the end of the run. `srtt_at_done` maps segment → sender SRTT at
/// its last byte; `events` are the run's ground-truth events (any flow).
#[allow(clippy::too_many_arguments)]
pub fn report(
    flow: u32,
    client: &str,
    joined: Time,
    end: Time,
    p: &mut Player,
    srtt_at_done: &[(u64, Duration)],
    events: &[TcpLogEvent],
    server_node: u32,
    base_rtt: Duration,
) -> ClientReport {
    p.advance(end);
    let q = p.qoe(end);
    let ladder = p.content().ladder().clone();
    let qoe = ClientQoe {
        flow,
        client: client.to_string(),
        joined_ns: joined.as_nanos(),
        startup_s: q.startup_time.map(|d| d.as_secs_f64()),
        stall_count: q.stall_count as u64,
        stall_total_s: q.stall_total.as_secs_f64(),
        liveness_s: q.liveness_s,
        live_latency_s: q.live_latency.map(|d| d.as_secs_f64()),
        mean_bitrate_bps: q.mean_bitrate.bits_per_sec,
        switches: q.switches as u64,
        bytes: q.bytes,
        segments: q.segments as u64,
        abr: p.abr_name().to_string(),
    };
    let srtt_of = |seg: u64| srtt_at_done.iter().rev().find(|(s, _)| *s == seg).map(|x| x.1);
    let segments: Vec<SegmentRow> = p
        .segments()
        .iter()
        .map(|r| SegmentRow {
            flow,
            segment: r.segment,
            quality: r.quality as u32,
            bitrate_bps: ladder.bitrate(r.quality).bits_per_sec,
            bytes: r.bytes,
            available_ns: r.available.as_nanos(),
            requested_ns: r.requested.as_nanos(),
            first_byte_ns: r.first_byte.map(|t| t.as_nanos()),
            done_ns: r.done.map(|t| t.as_nanos()),
            download_s: r.download_time().map(|d| d.as_secs_f64()),
            deadline_met: r.deadline_met(),
            play_start_ns: r.play_start.map(|t| t.as_nanos()),
            srtt_at_done_ns: srtt_of(r.segment).map(|d| d.as_nanos() as u64),
        })
        .collect();
    let mut flow_events: Vec<TcpLogEvent> = events.iter().filter(|e| e.flow() == flow).copied().collect();
    flow_events.sort_by_key(|e| e.at()); // logged in run order already; a stable sort keeps it so
    let stalls = p
        .stalls()
        .iter()
        .map(|s| {
            let waited = p.segments().iter().find(|r| r.needed_at == Some(s.start));
            let (cause, segment, bitrate) = match waited {
                Some(r) => {
                    let bitrate = ladder.bitrate(r.quality);
                    let d = WaitedDownload {
                        requested: r.requested,
                        done: r.done,
                        bytes: r.bytes,
                        bitrate,
                        srtt_at_done: srtt_of(r.segment),
                        base_rtt,
                    };
                    (Some(classify_sorted(&d, &flow_events, server_node, end)), Some(r.segment), Some(bitrate.bits_per_sec))
                }
                None => (None, None, None),
            };
            StallRow {
                flow,
                start_ns: s.start.as_nanos(),
                end_ns: s.end.map(|t| t.as_nanos()),
                duration_s: s.duration(end).as_secs_f64(),
                segment,
                cause: cause.as_ref().map_or("request_not_sent", |c| c.cause).to_string(),
                rto_events: cause.as_ref().map_or(0, |c| c.rto_events),
                retransmissions: cause.as_ref().map_or(0, |c| c.retransmissions),
                recovery_episodes: cause.as_ref().map_or(0, |c| c.recovery_episodes),
                restart_after_idle: cause.as_ref().is_some_and(|c| c.restart_after_idle),
                download_bps: cause.as_ref().and_then(|c| c.download_bps),
                bitrate_bps: bitrate,
            }
        })
        .collect();
    ClientReport { qoe, segments, stalls }
}
