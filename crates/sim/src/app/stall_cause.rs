//! Why a player stalled, at the packet level: each stall is joined to the TCP ground truth of the
//! download it waited for.
//!
//! The segment a stall waited for is the one whose `needed_at` is the stall's start (the player
//! model fills that in). Its download window is [request, last byte]; the simulator's ground-truth
//! log (`tcp::log`) of the server endpoint in that window, the sender's smoothed RTT when the last
//! byte arrived and the download's throughput give the cause, first match wins:
//!
//! 1. `rto` — a retransmission timeout fired (seed 000's "timeout" stalls);
//! 2. `loss_recovery` — fast retransmit / SACK recovery / tail-loss probes, no timeout;
//! 3. `slow_start_after_idle` — the server's cwnd was reset after the off period (RFC 5681 §4.1,
//!    Linux tcp_slow_start_after_idle; seed 004 Fig. 2) and nothing was lost;
//! 4. `queueing_delay` — SRTT at the end of the download exceeded 1.5 × the path's base RTT;
//! 5. `bottleneck_share` — the download ran slower than the segment's bitrate (its share of the
//!    bottleneck was below what the stream needs) without any of the above;
//! 6. `late_request` — none of the above: the download itself was fast enough; the request came
//!    too late for the buffer (live edge, request timing).
//!
//! The counts behind the choice are reported with it, so a reader can weigh mixed causes.

use std::time::Duration;

use tcpvideo_model::{Bandwidth, Time};

use crate::tcp::{RetransmitCause, TcpLogEvent};

/// The download a stall waited for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WaitedDownload {
    pub requested: Time,
    /// Last byte read (None: never completed within the run).
    pub done: Option<Time>,
    pub bytes: u64,
    pub bitrate: Bandwidth,
    /// Sender SRTT when the last byte arrived.
    pub srtt_at_done: Option<Duration>,
    pub base_rtt: Duration,
}

/// The cause and the evidence.
#[derive(Clone, Debug, PartialEq)]
pub struct StallCause {
    pub cause: &'static str,
    pub rto_events: u32,
    pub retransmissions: u32,
    pub recovery_episodes: u32,
    pub restart_after_idle: bool,
    /// Download throughput (bytes over request→last byte), bit/s.
    pub download_bps: Option<f64>,
}

/// SRTT above this multiple of the base RTT counts as queueing delay.
pub const QUEUEING_RTT_FACTOR: f64 = 1.5;

/// Classify one stall from the server's events of this flow (`events`, any order; only those
/// inside the download window are counted). `window_end` closes an unfinished download.
pub fn classify(d: &WaitedDownload, events: &[TcpLogEvent], server_node: u32, window_end: Time) -> StallCause {
    let end = d.done.unwrap_or(window_end);
    let inside = |at: Time| at >= d.requested && at <= end;
    let (mut rto, mut rtx, mut rec, mut idle) = (0u32, 0u32, 0u32, false);
    for e in events {
        match *e {
            TcpLogEvent::Rto { at, from_node, .. } if from_node == server_node && inside(at) => rto += 1,
            TcpLogEvent::Retransmit { at, from_node, cause, .. }
                if from_node == server_node && inside(at) && cause != RetransmitCause::SynTimeout =>
            {
                rtx += 1
            }
            TcpLogEvent::EnterRecovery { at, from_node, .. } if from_node == server_node && inside(at) => rec += 1,
            TcpLogEvent::RestartAfterIdle { at, from_node, .. } if from_node == server_node && inside(at) => idle = true,
            _ => {}
        }
    }
    let download_bps = d.done.map(|t| {
        let s = t.saturating_since(d.requested).as_secs_f64();
        if s > 0.0 {
            d.bytes as f64 * 8.0 / s
        } else {
            f64::INFINITY
        }
    });
    let queueing = d.srtt_at_done.is_some_and(|s| s.as_secs_f64() > QUEUEING_RTT_FACTOR * d.base_rtt.as_secs_f64());
    let slow = download_bps.is_none_or(|b| b < d.bitrate.bits_per_sec as f64);
    let cause = if rto > 0 {
        "rto"
    } else if rtx > 0 || rec > 0 {
        "loss_recovery"
    } else if idle {
        "slow_start_after_idle"
    } else if queueing {
        "queueing_delay"
    } else if slow {
        "bottleneck_share"
    } else {
        "late_request"
    };
    StallCause { cause, rto_events: rto, retransmissions: rtx, recovery_episodes: rec, restart_after_idle: idle, download_bps }
}

/// [`classify`] for `events` sorted by time: only the download window's events are read (two
/// binary searches), so a client's stalls cost stalls × log(events) instead of stalls × events
/// (at the onoff study's full length, 175 clients × ~170 stalls × ~3 200 events each, that scan
/// was ~1.5 % of a run). Same result as `classify` on the whole slice: it counts the same events.
pub fn classify_sorted(d: &WaitedDownload, events: &[TcpLogEvent], server_node: u32, window_end: Time) -> StallCause {
    debug_assert!(events.windows(2).all(|w| w[0].at() <= w[1].at()), "events not sorted by time");
    let end = d.done.unwrap_or(window_end);
    let lo = events.partition_point(|e| e.at() < d.requested);
    let hi = lo + events[lo..].partition_point(|e| e.at() <= end);
    classify(d, &events[lo..hi], server_node, window_end)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SERVER: u32 = 0;

    fn t(ms: u64) -> Time {
        Time::ZERO + Duration::from_millis(ms)
    }

    fn dl(done_ms: u64, srtt_ms: u64) -> WaitedDownload {
        WaitedDownload {
            requested: t(1000),
            done: Some(t(done_ms)),
            bytes: 125_000,
            bitrate: Bandwidth::from_bps(500_000),
            srtt_at_done: Some(Duration::from_millis(srtt_ms)),
            base_rtt: Duration::from_millis(55),
        }
    }

    #[test]
    fn a_timeout_inside_the_download_wins_over_everything_else() {
        let ev = [
            TcpLogEvent::Rto { at: t(1500), flow: 0, from_node: SERVER, backoff: 1, rto: Duration::from_millis(200) },
            TcpLogEvent::RestartAfterIdle { at: t(1000), flow: 0, from_node: SERVER, cwnd_bytes: 14480 },
        ];
        let c = classify(&dl(3500, 300), &ev, SERVER, t(10_000));
        assert_eq!((c.cause, c.rto_events, c.restart_after_idle), ("rto", 1, true));
    }

    #[test]
    fn events_outside_the_window_or_of_the_client_do_not_count() {
        let ev = [
            TcpLogEvent::Rto { at: t(900), flow: 0, from_node: SERVER, backoff: 1, rto: Duration::from_millis(200) },
            TcpLogEvent::Rto { at: t(1500), flow: 0, from_node: 7, backoff: 1, rto: Duration::from_millis(200) },
        ];
        // 125 kB in 1.2 s = 833 kbit/s > 500 kbit/s, SRTT 60 ms < 1.5·55 ms: the request was late.
        assert_eq!(classify(&dl(2200, 60), &ev, SERVER, t(10_000)).cause, "late_request");
    }

    #[test]
    fn an_idle_restart_without_loss_is_slow_start_after_idle() {
        let ev = [TcpLogEvent::RestartAfterIdle { at: t(1001), flow: 0, from_node: SERVER, cwnd_bytes: 14480 }];
        assert_eq!(classify(&dl(2200, 60), &ev, SERVER, t(10_000)).cause, "slow_start_after_idle");
    }

    #[test]
    fn a_high_srtt_is_queueing_and_a_slow_download_is_the_bottleneck_share() {
        assert_eq!(classify(&dl(2200, 83), &[], SERVER, t(10_000)).cause, "queueing_delay");
        // 125 kB in 2.5 s = 400 kbit/s < 500 kbit/s.
        let c = classify(&dl(3500, 60), &[], SERVER, t(10_000));
        assert_eq!(c.cause, "bottleneck_share");
        assert!((c.download_bps.unwrap() - 400_000.0).abs() < 1.0);
    }

    #[test]
    fn the_windowed_classification_counts_exactly_the_events_of_the_window_including_its_edges() {
        // Sorted events right before, at, inside, at the end of and after the window [1000, 2200] ms,
        // several at the same instant, and an unfinished download closed by the window end.
        let rtx = |ms: u64| TcpLogEvent::Retransmit {
            at: t(ms),
            flow: 0,
            from_node: SERVER,
            seq: 1,
            len: 1448,
            cause: RetransmitCause::SackRecovery,
        };
        let rto = |ms: u64| TcpLogEvent::Rto { at: t(ms), flow: 0, from_node: SERVER, backoff: 1, rto: Duration::from_millis(200) };
        let ev = [rtx(999), rtx(1000), rtx(1000), rto(1500), rtx(2200), rtx(2200), rtx(2201), rto(9000)];
        let unfinished = WaitedDownload { done: None, ..dl(0, 60) };
        for d in [dl(2200, 60), dl(1000, 60), dl(1500, 60), unfinished] {
            let (whole, windowed) = (classify(&d, &ev, SERVER, t(8000)), classify_sorted(&d, &ev, SERVER, t(8000)));
            assert_eq!(whole, windowed, "{d:?}");
        }
        let c = classify_sorted(&dl(2200, 60), &ev, SERVER, t(8000));
        assert_eq!((c.rto_events, c.retransmissions), (1, 4)); // 1000, 1000, 2200, 2200 (and the RTO at 1500)
        assert_eq!(classify_sorted(&unfinished, &ev, SERVER, t(8000)).retransmissions, 5);
    }
}
