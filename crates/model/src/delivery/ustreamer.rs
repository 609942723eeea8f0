//! One progressive-download video connection as YouTube's ustreamer serves it (Ghobadi et al.,
//! USENIX ATC 2012, §2): a startup phase, then a throttling phase in one of the
//! [`DeliveryMode`]s.
//!
//! - **Startup**: the first 30–40 s of media time (codec time, not network time) are written as
//!   fast as the socket takes them, to fill the player's buffer. `startup_media` sets it (default
//!   30 s); bytes = encoding rate × startup_media.
//! - **Throttling**: the rest, per mode: token-bucket writes, Trickle's clamp (+ write throttle),
//!   a pacing cap, or nothing.
//!
//! The runtime (simulator app or real server) calls [`Ustreamer::poll`] whenever the socket can
//! take data or a timer it was asked to set fires, with what it knows of the connection; it gets
//! back how many bytes to write now, when to call again, and the socket settings to apply (cwnd
//! clamp, max pacing rate). Settings are absolute: applying the same step twice is harmless.
//! "Socket can take data" means the send buffer has room; a runtime that writes more than the
//! buffer takes keeps the rest and offers it first on its next write, as a blocking write would.

use std::time::Duration;

use super::mode::DeliveryMode;
use super::token_bucket::{PacerDecision, TokenBucketPacer, BLOCK_64KB};
use super::trickle::{trickle_step, TrickleInputs, TrickleParams};
use crate::units::{Bandwidth, Time};

/// How much a "write all available data" step offers at once. ustreamer writes what its cache
/// delivered; the socket's buffer is what really limits it, so any chunk of a few hundred kB gives
/// the same wire behaviour while keeping each step small.
pub const BULK_CHUNK_BYTES: u64 = 256 * 1024;

/// What the runtime knows of the connection at a poll.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConnectionState {
    pub srtt: Duration,
    pub mss_bytes: u64,
    /// Bytes of the response acknowledged by the client so far.
    pub delivered_bytes: u64,
}

/// One step's instructions to the runtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerStep {
    /// Write this many bytes now (0: nothing now).
    pub write_bytes: u64,
    /// Call again at this time even if the socket stays writable (a pacing timer).
    pub wake_at: Option<Time>,
    /// The cwnd clamp to have on the socket, packets (None: no clamp).
    pub cwnd_clamp_packets: Option<u64>,
    /// The maximum pacing rate to have on the socket (None: no cap).
    pub max_pacing_rate: Option<Bandwidth>,
}

/// Where the connection is.
#[derive(Clone, Debug)]
enum Phase {
    Startup,
    Throttling {
        since: Time,
        /// Trickle's goodput clock: (time, bytes delivered) when every startup byte had been
        /// acknowledged; None until then.
        judged_from: Option<(Time, u64)>,
        pacer: Option<TokenBucketPacer>,
    },
}

/// The server side of one video response.
#[derive(Clone, Debug)]
pub struct Ustreamer {
    mode: DeliveryMode,
    encoding_rate: Bandwidth,
    total_bytes: u64,
    startup_bytes: u64,
    written_bytes: u64,
    phase: Phase,
}

impl Ustreamer {
    /// A response of `total_bytes` of a video encoded at `encoding_rate`.
    pub fn new(mode: DeliveryMode, encoding_rate: Bandwidth, total_bytes: u64, startup_media: Duration) -> Ustreamer {
        let startup_bytes = encoding_rate.bytes_in(startup_media).min(total_bytes);
        Ustreamer { mode, encoding_rate, total_bytes, startup_bytes, written_bytes: 0, phase: Phase::Startup }
    }

    /// The paper's default: 30 s of media in the startup phase.
    pub fn paper(mode: DeliveryMode, encoding_rate: Bandwidth, total_bytes: u64) -> Ustreamer {
        Ustreamer::new(mode, encoding_rate, total_bytes, Duration::from_secs(30))
    }

    pub fn in_throttling_phase(&self) -> bool {
        matches!(self.phase, Phase::Throttling { .. })
    }

    /// When the throttling phase began (None while in startup).
    pub fn throttling_since(&self) -> Option<Time> {
        match self.phase {
            Phase::Throttling { since, .. } => Some(since),
            Phase::Startup => None,
        }
    }

    pub fn written_bytes(&self) -> u64 {
        self.written_bytes
    }

    pub fn startup_bytes(&self) -> u64 {
        self.startup_bytes
    }

    /// Decide what to do at `now`.
    pub fn poll(&mut self, now: Time, conn: &ConnectionState) -> ServerStep {
        let remaining = self.total_bytes - self.written_bytes;
        if let Phase::Startup = self.phase {
            if self.written_bytes < self.startup_bytes {
                let n = (self.startup_bytes - self.written_bytes).min(BULK_CHUNK_BYTES);
                self.written_bytes += n;
                return ServerStep { write_bytes: n, wake_at: None, cwnd_clamp_packets: None, max_pacing_rate: None };
            }
            self.phase = Phase::Throttling { since: now, judged_from: None, pacer: None };
        }
        let Phase::Throttling { since, ref mut judged_from, ref mut pacer } = self.phase else { unreachable!() };
        let mut step = ServerStep { write_bytes: 0, wake_at: None, cwnd_clamp_packets: None, max_pacing_rate: None };
        match self.mode {
            DeliveryMode::Bulk => step.write_bytes = remaining.min(BULK_CHUNK_BYTES),
            DeliveryMode::PacingCap { gain } => {
                step.write_bytes = remaining.min(BULK_CHUNK_BYTES);
                step.max_pacing_rate = Some(self.encoding_rate.scale(gain));
            }
            DeliveryMode::AppPacing { block_bytes } => {
                let p = pacer.get_or_insert_with(|| TokenBucketPacer::ustreamer(since, self.encoding_rate, block_bytes));
                apply(p.poll(now, remaining), &mut step);
            }
            // BBR differs from the baseline only in the socket's congestion control (see mode.rs).
            DeliveryMode::Bbr => {
                let p = pacer.get_or_insert_with(|| TokenBucketPacer::ustreamer(since, self.encoding_rate, BLOCK_64KB));
                apply(p.poll(now, remaining), &mut step);
            }
            DeliveryMode::Trickle { headroom } => {
                let params = TrickleParams { target_rate: self.encoding_rate, headroom, floor_packets: 10 };
                // Algorithm 1's goodput is the throttling phase's ("the average rate for the
                // entire throttled phase", §3.3), so it is measured from the moment the startup
                // bytes have all been delivered: before that the acknowledgements are of startup
                // data still queued when the phase began (a whole send buffer: seconds at low
                // bandwidth), which would read as the phase running ahead of R, and right after
                // the switch nothing is acknowledged yet, which would read as behind.
                if judged_from.is_none() && conn.delivered_bytes >= self.startup_bytes {
                    *judged_from = Some((now, conn.delivered_bytes));
                }
                let (delivered_bytes, elapsed) = match *judged_from {
                    Some((t0, d0)) => (conn.delivered_bytes.saturating_sub(d0), now.saturating_since(t0)),
                    None => (0, Duration::ZERO),
                };
                let inputs = TrickleInputs { srtt: conn.srtt, mss_bytes: conn.mss_bytes, delivered_bytes, elapsed };
                let d = trickle_step(&params, &inputs);
                step.cwnd_clamp_packets = d.clamp_packets;
                if d.write_throttle {
                    // Write throttling at R, one clamp's worth per block so a write never exceeds
                    // the window it lands in. The pacer is kept across steps (its schedule is the
                    // phase's), created at the first throttled step.
                    let block = d.clamp_packets.unwrap_or(10) * conn.mss_bytes.max(1);
                    let p = pacer.get_or_insert_with(|| TokenBucketPacer::new(since, self.encoding_rate, block, Duration::ZERO));
                    apply(p.poll(now, remaining), &mut step);
                } else {
                    step.write_bytes = remaining.min(BULK_CHUNK_BYTES);
                }
            }
        }
        self.written_bytes += step.write_bytes;
        step
    }
}

fn apply(d: PacerDecision, step: &mut ServerStep) {
    match d {
        PacerDecision::Write { bytes } => step.write_bytes = bytes,
        PacerDecision::WaitUntil(t) if t != Time::MAX => step.wake_at = Some(t),
        PacerDecision::WaitUntil(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn(delivered: u64) -> ConnectionState {
        ConnectionState { srtt: Duration::from_millis(100), mss_bytes: 1448, delivered_bytes: delivered }
    }

    #[test]
    fn startup_writes_30_seconds_of_media_back_to_back_then_throttles() {
        // 1 Mbit/s × 30 s = 3 750 000 bytes in 256 kB chunks: 14 full chunks + 1 of 80 016.
        let mut u = Ustreamer::paper(DeliveryMode::from_name("baseline").unwrap(), Bandwidth::from_mbps(1), 10_000_000);
        let mut chunks = Vec::new();
        while !u.in_throttling_phase() {
            let s = u.poll(Time::ZERO, &conn(0));
            if s.write_bytes > 0 {
                chunks.push(s.write_bytes);
            }
        }
        assert_eq!(chunks.iter().sum::<u64>(), 3_750_000);
        assert_eq!(chunks.len(), 15);
        assert_eq!(u.throttling_since(), Some(Time::ZERO));
    }

    #[test]
    fn baseline_throttling_writes_64kb_blocks_paced_by_the_bucket() {
        // Startup of 0 s so throttling starts at once; 4 Mbit/s → block every 104.8576 ms.
        let mode = DeliveryMode::AppPacing { block_bytes: BLOCK_64KB };
        let mut u = Ustreamer::new(mode, Bandwidth::from_mbps(4), 10_000_000, Duration::ZERO);
        let s = u.poll(Time::ZERO, &conn(0));
        assert_eq!(
            s,
            ServerStep { write_bytes: 0, wake_at: Some(Time::from_nanos(104_857_600)), cwnd_clamp_packets: None, max_pacing_rate: None }
        );
        let s = u.poll(Time::from_nanos(104_857_600), &conn(0));
        assert_eq!(s.write_bytes, BLOCK_64KB);
    }

    #[test]
    fn trickle_sets_the_clamp_and_writes_everything_when_above_the_floor() {
        // 4 Mbit/s, srtt 100 ms: clamp 42 packets (see trickle.rs), no write throttle.
        let mut u = Ustreamer::new(DeliveryMode::Trickle { headroom: 1.2 }, Bandwidth::from_mbps(4), 10_000_000, Duration::ZERO);
        let s = u.poll(Time::ZERO, &conn(0));
        assert_eq!(s.cwnd_clamp_packets, Some(42));
        assert_eq!(s.write_bytes, BULK_CHUNK_BYTES);
        assert_eq!(s.wake_at, None);
    }

    #[test]
    fn trickle_lifts_the_clamp_when_the_throttled_goodput_falls_behind() {
        let mut u = Ustreamer::new(DeliveryMode::Trickle { headroom: 1.2 }, Bandwidth::from_mbps(4), 100_000_000, Duration::ZERO);
        u.poll(Time::ZERO, &conn(0));
        // 10 s later only 4 MB delivered: 3.2 Mbit/s < 4 Mbit/s.
        let s = u.poll(Time::from_secs(10), &conn(4_000_000));
        assert_eq!(s.cwnd_clamp_packets, None);
        // Caught up (5 MB in 10 s = 4 Mbit/s): clamped again.
        let s = u.poll(Time::from_secs(10), &conn(5_000_000));
        assert_eq!(s.cwnd_clamp_packets, Some(42));
    }

    #[test]
    fn trickles_goodput_clock_starts_when_the_startup_bytes_are_delivered_and_judges_after_one_srtt() {
        // 4 Mbit/s, 1 s of media in the startup phase = 500 000 B, all written at t = 0.
        let mut u = Ustreamer::new(DeliveryMode::Trickle { headroom: 1.2 }, Bandwidth::from_mbps(4), 100_000_000, Duration::from_secs(1));
        while !u.in_throttling_phase() {
            u.poll(Time::ZERO, &conn(0));
        }
        // The startup tail still draining (0.8 Mbit/s so far) is not the phase falling behind.
        assert_eq!(u.poll(Time::from_millis(500), &conn(50_000)).cwnd_clamp_packets, Some(42));
        // Startup delivered at 1 s: the clock starts; 50 ms later (< srtt) nothing is judged.
        assert_eq!(u.poll(Time::from_secs(1), &conn(500_000)).cwnd_clamp_packets, Some(42));
        assert_eq!(u.poll(Time::from_millis(1050), &conn(500_000)).cwnd_clamp_packets, Some(42));
        // 2 s of phase at 2 Mbit/s: behind, lifted; at 4 Mbit/s: clamped.
        assert_eq!(u.poll(Time::from_secs(3), &conn(1_000_000)).cwnd_clamp_packets, None);
        assert_eq!(u.poll(Time::from_secs(3), &conn(1_500_000)).cwnd_clamp_packets, Some(42));
    }

    #[test]
    fn trickle_at_its_floor_paces_writes_at_the_target_rate() {
        // 500 kbit/s over 20 ms: clamp 10 packets (floor), writes of 14 480 B at 500 kbit/s →
        // one every 231.68 ms.
        let mut u = Ustreamer::new(DeliveryMode::Trickle { headroom: 1.2 }, Bandwidth::from_bps(500_000), 10_000_000, Duration::ZERO);
        let c = ConnectionState { srtt: Duration::from_millis(20), mss_bytes: 1448, delivered_bytes: 0 };
        let s = u.poll(Time::ZERO, &c);
        assert_eq!((s.cwnd_clamp_packets, s.write_bytes, s.wake_at), (Some(10), 0, Some(Time::from_nanos(231_680_000))));
        let s = u.poll(Time::from_nanos(231_680_000), &ConnectionState { delivered_bytes: 14_480, ..c });
        assert_eq!((s.cwnd_clamp_packets, s.write_bytes), (Some(10), 14_480));
    }

    #[test]
    fn pacing_cap_writes_in_bulk_with_the_socket_rate_capped_at_125_percent() {
        let mut u = Ustreamer::new(DeliveryMode::PacingCap { gain: 1.25 }, Bandwidth::from_mbps(2), 1_000_000, Duration::ZERO);
        let s = u.poll(Time::ZERO, &conn(0));
        assert_eq!(s.max_pacing_rate, Some(Bandwidth::from_bps(2_500_000)));
        assert_eq!(s.write_bytes, BULK_CHUNK_BYTES);
    }

    #[test]
    fn nothing_is_written_past_the_end_of_the_file() {
        let mut u = Ustreamer::new(DeliveryMode::Bulk, Bandwidth::from_mbps(1), 300_000, Duration::from_secs(1));
        let mut total = 0;
        for _ in 0..10 {
            total += u.poll(Time::ZERO, &conn(0)).write_bytes;
        }
        assert_eq!(total, 300_000);
    }
}
