//! Congestion control: one trait, one file per algorithm.
//!
//! The split follows Linux (`struct tcp_congestion_ops`) and quiche: the TCP endpoint owns loss
//! detection (SACK scoreboard, RFC 6675), RTT estimation (RFC 6298), delivery-rate sampling
//! (draft-cheng-iccrg-delivery-rate-estimation) and the cwnd reduction during fast recovery
//! (PRR, RFC 6937, as Linux `tcp_cwnd_reduction`). A [`CongestionControl`] only reacts: it grows
//! the window on ACKs, picks the slow-start threshold when a congestion event starts, and may ask
//! for pacing. Algorithms that take over the window completely during recovery (BBR, Linux
//! `cong_control`) say so with [`CongestionControl::owns_recovery`].
//!
//! Units: windows and thresholds are bytes at the interface. Algorithms that Linux writes in
//! segments (Reno, CUBIC, BIC, Vegas) keep segment counters internally, exactly as Linux does, and
//! convert with the MSS given at construction — so their rounding is Linux's rounding.
//!
//! Every algorithm registers in [`ALGORITHMS`] with its documented parameters, which is what
//! `tcpvideo cc list` prints and what a scenario overrides per flow.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::units::{Bandwidth, Time};

pub mod bbr;
pub mod bic;
pub mod ccp;
pub mod ccplb;
pub mod ccplca;
pub mod compound;
pub mod cubic;
pub mod reno;
#[cfg(test)]
pub(crate) mod testing_path;
pub mod vegas;

/// Construction-time facts about the connection.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CcConfig {
    /// Sender maximum segment size (payload bytes per full segment).
    pub mss_bytes: u64,
    /// Initial window in segments (Linux TCP_INIT_CWND = 10, RFC 6928).
    pub initial_cwnd_segments: u64,
}

impl Default for CcConfig {
    fn default() -> Self {
        CcConfig { mss_bytes: 1448, initial_cwnd_segments: 10 }
    }
}

/// A delivery-rate sample (draft-cheng-iccrg-delivery-rate-estimation, Linux `struct rate_sample`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RateSample {
    /// Bytes delivered during `interval`.
    pub delivered_bytes: u64,
    /// The sampling interval: max(send interval, ACK interval) of the packet that produced it.
    pub interval: Duration,
    /// Connection's total delivered bytes when the sampled packet was sent (for round counting).
    pub prior_delivered_bytes: u64,
    /// True if the sender was application-limited when the sampled packet was sent.
    pub is_app_limited: bool,
    /// Bytes newly marked lost by this ACK.
    pub newly_lost_bytes: u64,
}

impl RateSample {
    pub fn bandwidth(&self) -> Bandwidth {
        Bandwidth::from_bytes_per(self.delivered_bytes, self.interval)
    }
}

/// Everything a congestion control may need from one incoming ACK.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AckEvent {
    pub now: Time,
    /// Bytes newly delivered by this ACK: cumulative advance plus newly SACKed (Linux `acked_sacked`).
    pub acked_bytes: u64,
    /// RTT measured by this ACK; `None` when Karn's rule forbids a sample.
    pub rtt_sample: Option<Duration>,
    /// Smoothed RTT after this ACK (RFC 6298).
    pub srtt: Duration,
    /// Smallest RTT seen on the connection so far.
    pub min_rtt: Duration,
    /// Bytes in flight (RFC 6675 pipe) before this ACK was processed.
    pub prior_in_flight_bytes: u64,
    /// Bytes in flight after this ACK was processed.
    pub bytes_in_flight: u64,
    /// The window limited sending before this ACK (Linux `tcp_is_cwnd_limited`); Linux grows the
    /// window only when this is true, so an application-limited flow does not inflate cwnd.
    pub cwnd_limited: bool,
    /// True only while the endpoint is in fast recovery (Linux `TCP_CA_Recovery`, where
    /// `tcp_cong_control` holds cwnd and PRR sets it). False in Open/Disorder and also in the Loss
    /// state after an RTO (`TCP_CA_Loss`): Linux lets the algorithm grow the window there, so after
    /// an RTO cwnd slow-starts from one segment towards ssthresh. An algorithm that must know it is
    /// in RTO recovery tracks it itself from `on_congestion_event(Timeout)` until the data in
    /// flight at the RTO is delivered (BBR and CCP do).
    pub in_recovery: bool,
    /// Total bytes delivered on the connection after this ACK.
    pub delivered_total_bytes: u64,
    /// Delivery-rate sample, when this ACK produced one.
    pub rate: Option<RateSample>,
}

/// Why the window is being reduced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CongestionSignal {
    /// Loss detected by duplicate ACKs / SACK (RFC 6675), start of fast recovery.
    FastRetransmit,
    /// Retransmission timer expired (RFC 6298); Linux `tcp_enter_loss`.
    Timeout,
}

/// What the video application knows and tells the transport (used by CCPLCA/CCPLB).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AppInfo {
    /// Video rendering (encoding) rate.
    pub video_rate: Option<Bandwidth>,
    /// Playout buffer occupancy, in seconds of media.
    pub playout_buffer: Option<Duration>,
    /// Rate at which the playout buffer is filling (positive) or draining (negative), in media
    /// seconds per wall second.
    pub playout_buffer_rate: Option<f64>,
}

/// The congestion-control callback table. All methods take explicit timestamps; none reads a clock.
pub trait CongestionControl: Send {
    /// Registered name (`"cubic"`, `"reno"`, ...).
    fn name(&self) -> &'static str;

    /// Called once by the endpoint right after construction (and again if it rebuilds the
    /// algorithm for the negotiated MSS) with a per-connection seed derived from the simulator's
    /// seeded RNG (the connection's ISN). Algorithms that use randomness (BBR's PROBE_BW start
    /// phase, Linux `get_random_u32_below`) seed from it so flows differ yet runs are
    /// reproducible. Default: nothing.
    fn on_init(&mut self, _seed: u64) {}

    /// A data segment (new or retransmitted) left the sender.
    fn on_packet_sent(&mut self, _now: Time, _bytes: u64, _bytes_in_flight: u64, _app_limited: bool) {}

    /// An ACK delivered new data. Outside fast recovery this is Linux `cong_avoid`; during fast
    /// recovery it is called too (with `in_recovery = true`) so model-based algorithms keep their
    /// estimators fed; window-based algorithms must not grow cwnd then. In the Loss state (after an
    /// RTO) `in_recovery` is false and the window grows normally (see [`AckEvent::in_recovery`]).
    fn on_ack(&mut self, ack: &AckEvent);

    /// A congestion event starts (once per recovery episode). Sets ssthresh (Linux `ssthresh`);
    /// on [`CongestionSignal::Timeout`] also collapses cwnd to the loss window (1 segment). As
    /// Linux `tcp_enter_loss`, an RTO inside an episode whose ssthresh was already reduced (fast
    /// recovery or an earlier RTO not yet repaired) does not call this again: the endpoint only
    /// sets cwnd to one segment.
    fn on_congestion_event(&mut self, now: Time, signal: CongestionSignal, bytes_in_flight: u64);

    /// Fast recovery ended (Linux `tcp_end_cwnd_reduction`): default sets cwnd = ssthresh.
    fn on_recovery_exit(&mut self, _now: Time) {
        let ss = self.ssthresh();
        self.set_cwnd(ss);
    }

    /// The endpoint found the previous congestion event spurious and restores state (undo).
    fn on_spurious_congestion(&mut self, _now: Time) {}

    /// A further retransmission timeout inside a loss episode whose threshold was already reduced
    /// (Linux `tcp_enter_loss` skips `ssthresh()` then, but `tcp_set_ca_state(TCP_CA_Loss)` still
    /// calls the algorithm's `set_state`, so per-algorithm loss resets run again). The endpoint
    /// sets cwnd to one segment itself. Default: nothing.
    fn on_timeout_in_loss_episode(&mut self, _now: Time, _bytes_in_flight: u64) {}

    /// A data segment is about to be sent with nothing in flight (Linux `tcp_event_data_sent` →
    /// `CA_EVENT_TX_START`): after any idle period however short, and also for the first
    /// retransmission after an RTO (everything in flight was marked lost). Called for every
    /// algorithm, before [`CongestionControl::on_packet_sent`] of that segment and after
    /// [`CongestionControl::on_restart_after_idle`] if that applies. `app_limited`: the sender is
    /// in an application-limited bubble (Linux `tp->app_limited`, which BBR checks). Default: nothing.
    fn on_tx_start(&mut self, _now: Time, _app_limited: bool) {}

    /// Slow start after idle (Linux `tcp_slow_start_after_idle_check` → `tcp_cwnd_restart`,
    /// `CA_EVENT_CWND_RESTART`): new data is queued with nothing in flight after an idle time
    /// longer than the RTO. Not called for algorithms that own the window
    /// ([`CongestionControl::owns_recovery`], Linux `cong_control`). `restart_window_bytes` is the
    /// window Linux computes (cwnd halved per RTO idle, not below min(IW, cwnd)). Linux also
    /// raises ssthresh to max(ssthresh, ¾·cwnd) first; window-based algorithms do that in their
    /// override (see `reno::SegmentWindow::cwnd_restart`). The default only lowers cwnd.
    fn on_restart_after_idle(&mut self, _now: Time, restart_window_bytes: u64) {
        let w = self.cwnd().min(restart_window_bytes);
        self.set_cwnd(w);
    }

    /// The application's view of the video (rendering rate, playout buffer).
    fn on_app_info(&mut self, _info: &AppInfo) {}

    /// Congestion window in bytes.
    fn cwnd(&self) -> u64;

    /// Force the window (used by the endpoint for PRR's end, RTO and restart).
    fn set_cwnd(&mut self, bytes: u64);

    /// Slow-start threshold in bytes (`u64::MAX` until the first congestion event).
    fn ssthresh(&self) -> u64;

    /// Force ssthresh (`u64::MAX` = infinite). The endpoint uses it where Linux writes
    /// `snd_ssthresh` outside the algorithm: `tcp_cwnd_application_limited` (ssthresh =
    /// max(ssthresh, ¾·cwnd) before the window decays) and `tcp_undo_cwnd_reduction` (ssthresh =
    /// max(ssthresh, prior_ssthresh) when a congestion event proves spurious). Window-based
    /// algorithms implement it; the default ignores it (algorithms whose ssthresh is not a
    /// plain window threshold, e.g. BBR).
    fn set_ssthresh(&mut self, _bytes: u64) {}

    /// Pacing rate requested by the algorithm; `None` means "send as the window allows".
    fn pacing_rate(&self) -> Option<Bandwidth> {
        None
    }

    /// True for algorithms that set cwnd themselves during recovery (BBR); the endpoint then skips
    /// PRR and uses [`CongestionControl::cwnd`] directly.
    fn owns_recovery(&self) -> bool {
        false
    }

    /// True while the algorithm is in slow start (for time series and tests).
    fn in_slow_start(&self) -> bool {
        self.cwnd() < self.ssthresh()
    }

    /// A short label of the algorithm's internal state (e.g. BBR's mode), for time series.
    fn state_label(&self) -> &'static str {
        if self.in_slow_start() {
            "slow_start"
        } else {
            "congestion_avoidance"
        }
    }
}

/// One tunable parameter of an algorithm.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ParamInfo {
    pub name: &'static str,
    pub default: f64,
    pub unit: &'static str,
    pub doc: &'static str,
}

/// Registry entry: an algorithm, its source and its parameters.
pub struct AlgorithmInfo {
    pub name: &'static str,
    pub summary: &'static str,
    pub reference: &'static str,
    pub params: &'static [ParamInfo],
    pub build: fn(&CcConfig, &Params) -> Box<dyn CongestionControl>,
}

/// Parameter values a scenario overrides, by name. Missing names take the documented default.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Params(pub BTreeMap<String, f64>);

impl Params {
    pub fn get(&self, info: &ParamInfo) -> f64 {
        self.0.get(info.name).copied().unwrap_or(info.default)
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CcError {
    #[error("unknown congestion control {0:?} (known: {1})")]
    UnknownAlgorithm(String, String),
    #[error("congestion control {algorithm}: unknown parameter {param:?} (known: {known})")]
    UnknownParam { algorithm: String, param: String, known: String },
}

/// Every algorithm tcpvideo provides.
pub static ALGORITHMS: &[AlgorithmInfo] =
    &[reno::INFO, cubic::INFO, bic::INFO, bbr::INFO, compound::INFO, ccp::INFO, ccplca::INFO, ccplb::INFO, vegas::INFO];

/// Look an algorithm up by name (case-insensitive).
pub fn find(name: &str) -> Option<&'static AlgorithmInfo> {
    ALGORITHMS.iter().find(|a| a.name.eq_ignore_ascii_case(name))
}

/// Build an algorithm by name with parameter overrides, rejecting unknown names and parameters.
pub fn build(name: &str, config: &CcConfig, params: &Params) -> Result<Box<dyn CongestionControl>, CcError> {
    let info = find(name)
        .ok_or_else(|| CcError::UnknownAlgorithm(name.to_string(), ALGORITHMS.iter().map(|a| a.name).collect::<Vec<_>>().join(", ")))?;
    for key in params.0.keys() {
        if !info.params.iter().any(|p| p.name == key) {
            return Err(CcError::UnknownParam {
                algorithm: info.name.to_string(),
                param: key.clone(),
                known: info.params.iter().map(|p| p.name).collect::<Vec<_>>().join(", "),
            });
        }
    }
    Ok((info.build)(config, params))
}

#[cfg(test)]
pub(crate) mod testing {
    //! A synthetic ACK clock for congestion-control unit tests (quiche style): no network, exact
    //! timestamps, every ACK built explicitly.
    use super::*;

    /// An ACK for `acked_bytes` at `now` with a fixed RTT, window-limited, not in recovery, with
    /// `in_flight` bytes outstanding before it. Prefer [`AckClock`], which keeps that count itself.
    pub fn ack(now: Time, acked_bytes: u64, rtt: Duration, in_flight: u64) -> AckEvent {
        AckEvent {
            now,
            acked_bytes,
            rtt_sample: Some(rtt),
            srtt: rtt,
            min_rtt: rtt,
            prior_in_flight_bytes: in_flight,
            bytes_in_flight: in_flight.saturating_sub(acked_bytes),
            cwnd_limited: true,
            in_recovery: false,
            delivered_total_bytes: 0,
            rate: None,
        }
    }

    /// The sender side of a test (quiche's `test_sender.rs` idea): it counts the bytes in
    /// flight, so a test says what is sent and what is ACKed and never computes the outstanding
    /// bytes itself. A `refilling` sender sends as much as each ACK frees (a window-full,
    /// ACK-clocked bulk sender: the bytes in flight stay put).
    pub struct AckClock {
        rtt: Duration,
        in_flight: u64,
        refilling: bool,
    }

    impl AckClock {
        /// A sender with nothing in flight whose ACKs carry `rtt` as sample, SRTT and min RTT.
        pub fn new(rtt: Duration) -> AckClock {
            AckClock { rtt, in_flight: 0, refilling: false }
        }

        /// A sender that keeps `in_flight` bytes outstanding whatever is ACKed.
        pub fn refilling(rtt: Duration, in_flight: u64) -> AckClock {
            AckClock { rtt, in_flight, refilling: true }
        }

        pub fn send(&mut self, bytes: u64) {
            self.in_flight += bytes;
        }

        /// The ACK of `acked_bytes` at `now`, with the clock's RTT.
        #[track_caller]
        pub fn ack(&mut self, now: Time, acked_bytes: u64) -> AckEvent {
            let rtt = self.rtt;
            self.ack_with_rtt(now, acked_bytes, rtt)
        }

        /// The ACK of `acked_bytes` at `now` whose RTT sample (and SRTT, min RTT) is `rtt`.
        #[track_caller]
        pub fn ack_with_rtt(&mut self, now: Time, acked_bytes: u64, rtt: Duration) -> AckEvent {
            assert!(acked_bytes <= self.in_flight, "ACK of {acked_bytes} bytes with {} in flight", self.in_flight);
            let a = ack(now, acked_bytes, rtt, self.in_flight);
            if !self.refilling {
                self.in_flight -= acked_bytes;
            }
            a
        }
    }

    /// Drive one round trip: the whole window is sent, then ACKed one MSS at a time, evenly
    /// spread over `rtt`, starting at `start`. Returns the time at the end of the round.
    pub fn one_round(cc: &mut dyn CongestionControl, start: Time, rtt: Duration, mss: u64) -> Time {
        let segments = (cc.cwnd() / mss).max(1);
        let step = rtt / segments as u32;
        let mut t = start;
        let mut clock = AckClock::new(rtt);
        clock.send(segments * mss);
        for _ in 0..segments {
            t += step;
            cc.on_ack(&clock.ack(t, mss));
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_algorithm_is_an_error_naming_the_known_ones() {
        let err = build("nosuch", &CcConfig::default(), &Params::default()).err().unwrap();
        let msg = err.to_string();
        assert!(msg.contains("nosuch") && msg.contains("reno"), "{msg}");
    }

    #[test]
    fn unknown_parameter_is_rejected() {
        let mut p = Params::default();
        p.0.insert("bogus".into(), 1.0);
        assert!(matches!(build("reno", &CcConfig::default(), &p), Err(CcError::UnknownParam { .. })));
    }

    #[test]
    fn every_algorithm_starts_at_the_initial_window() {
        let cfg = CcConfig::default();
        for a in ALGORITHMS {
            let cc = (a.build)(&cfg, &Params::default());
            assert_eq!(cc.cwnd(), cfg.mss_bytes * cfg.initial_cwnd_segments, "{}", a.name);
            assert_eq!(cc.name(), a.name);
        }
    }
}
