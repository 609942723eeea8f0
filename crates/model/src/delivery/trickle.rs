//! Trickle: rate limiting by clamping the sender's congestion window (Ghobadi et al., USENIX ATC
//! 2012, §3, Algorithm 1).
//!
//! In the throttling phase, each time new data is available the server computes a cwnd bound of
//! one RTT's worth of data at the target rate R, with headroom, and applies it to the socket; TCP's
//! ACK clock then spreads the data over the RTT instead of ustreamer's 64 kB write bursts.
//!
//! ```text
//! clamp = headroom · rtt · R / MSS          (headroom 1.2; "similar results with 5 %")
//! if goodput < R:  clamp = ∞                 (behind: let TCP catch up as fast as it can)
//! if clamp < 10:   clamp = 10, throttle writes at R
//! ```
//!
//! - rtt is the connection's smoothed RTT from TCP_INFO (tcpi_rtt), MSS its send MSS.
//! - goodput = bytes delivered in the throttling phase / time since it began (the caller,
//!   [`super::ustreamer`], starts that clock when the startup bytes are all delivered).
//!   Deviation: a goodput measured over less than one srtt is not judged (nothing is "behind"
//!   then, the clamp applies). Algorithm 1 divides by the elapsed time from its first step, where
//!   the bytes a window-based sender gets acknowledged arrive once per RTT: a poll a few ms into
//!   the phase sees ~0 delivered, lifts the clamp and lets a whole send buffer out unclamped (seen
//!   on real Linux at 100 ms RTT, docs/dev/open_items.md).
//! - The clamp is rounded up to whole packets: rounding down could set it below R·rtt and make
//!   the connection fall behind by construction. (Algorithm 1 leaves it fractional; Linux's
//!   snd_cwnd_clamp is an integer.)
//! - The floor of 10 packets keeps fast recovery possible (it needs ≥ 4) and bursts ≤ 10 packets;
//!   since 10·MSS/rtt can exceed R, writes are then throttled to R by application pacing
//!   ([`super::token_bucket`] at rate R, one clamp's worth per block, so a write never exceeds the
//!   window it lands in).

use std::time::Duration;

use crate::units::Bandwidth;

/// Trickle's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrickleParams {
    /// R: the target streaming rate (the video's encoding rate).
    pub target_rate: Bandwidth,
    /// Headroom factor on the clamp (paper: 1.2).
    pub headroom: f64,
    /// Smallest clamp, packets (paper: 10).
    pub floor_packets: u64,
}

impl TrickleParams {
    pub fn paper(target_rate: Bandwidth) -> TrickleParams {
        TrickleParams { target_rate, headroom: 1.2, floor_packets: 10 }
    }
}

/// What the server applies to its socket after one step of Algorithm 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrickleDecision {
    /// cwnd clamp in packets; `None` = no clamp (∞).
    pub clamp_packets: Option<u64>,
    /// Pace writes at R (true when the floor raised the clamp).
    pub write_throttle: bool,
}

/// The throttling-phase measurements Algorithm 1 reads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrickleInputs {
    /// Smoothed RTT of the connection.
    pub srtt: Duration,
    /// Send MSS, bytes.
    pub mss_bytes: u64,
    /// Bytes delivered (acknowledged) since the throttling phase began.
    pub delivered_bytes: u64,
    /// Time since the throttling phase began.
    pub elapsed: Duration,
}

/// One step of Algorithm 1.
pub fn trickle_step(params: &TrickleParams, inputs: &TrickleInputs) -> TrickleDecision {
    let judged = !inputs.elapsed.is_zero() && inputs.elapsed >= inputs.srtt;
    let behind = judged && Bandwidth::from_bytes_per(inputs.delivered_bytes, inputs.elapsed) < params.target_rate;
    if behind {
        return TrickleDecision { clamp_packets: None, write_throttle: false };
    }
    let window_bytes = params.target_rate.bits_per_sec as f64 / 8.0 * inputs.srtt.as_secs_f64();
    let clamp = (params.headroom * window_bytes / inputs.mss_bytes.max(1) as f64).ceil() as u64;
    if clamp < params.floor_packets {
        TrickleDecision { clamp_packets: Some(params.floor_packets), write_throttle: true }
    } else {
        TrickleDecision { clamp_packets: Some(clamp), write_throttle: false }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on_time(srtt_ms: u64, rate_kbps: u64) -> TrickleDecision {
        let p = TrickleParams::paper(Bandwidth::from_bps(rate_kbps * 1000));
        // Delivered exactly at R for 10 s: not behind.
        let delivered = rate_kbps * 1000 / 8 * 10;
        trickle_step(
            &p,
            &TrickleInputs {
                srtt: Duration::from_millis(srtt_ms),
                mss_bytes: 1448,
                delivered_bytes: delivered,
                elapsed: Duration::from_secs(10),
            },
        )
    }

    #[test]
    fn clamp_is_1_2_rtt_times_rate_over_mss_rounded_up() {
        // 4 Mbit/s × 100 ms = 50 000 B; × 1.2 = 60 000 B = 41.4 → 42 packets of 1448 B.
        assert_eq!(on_time(100, 4000), TrickleDecision { clamp_packets: Some(42), write_throttle: false });
        // 2 Mbit/s × 150 ms = 37 500 B; × 1.2 = 45 000 B = 31.08 → 32.
        assert_eq!(on_time(150, 2000), TrickleDecision { clamp_packets: Some(32), write_throttle: false });
    }

    #[test]
    fn clamp_below_ten_packets_is_raised_to_ten_and_writes_are_throttled() {
        // 500 kbit/s × 20 ms = 1250 B (the paper's own example, §3.3); × 1.2 = 1500 B = 1.04 pkt.
        assert_eq!(on_time(20, 500), TrickleDecision { clamp_packets: Some(10), write_throttle: true });
        // A clamp that rounds up to exactly 10 is not below the floor: 965 kbit/s × 100 ms =
        // 12 062.5 B; × 1.2 = 14 475 B = 9.997 packets → 10, no throttle.
        assert_eq!(on_time(100, 965), TrickleDecision { clamp_packets: Some(10), write_throttle: false });
    }

    #[test]
    fn clamp_is_lifted_while_goodput_is_below_the_target_and_restored_after() {
        let p = TrickleParams::paper(Bandwidth::from_mbps(1));
        let behind = TrickleInputs {
            srtt: Duration::from_millis(100),
            mss_bytes: 1448,
            delivered_bytes: 1_249_999,
            elapsed: Duration::from_secs(10),
        };
        assert_eq!(trickle_step(&p, &behind), TrickleDecision { clamp_packets: None, write_throttle: false });
        // One more byte: exactly R over 10 s, no longer below: 1.2·12 500/1448 = 10.36 → 11.
        let caught_up = TrickleInputs { delivered_bytes: 1_250_000, ..behind };
        assert_eq!(trickle_step(&p, &caught_up), TrickleDecision { clamp_packets: Some(11), write_throttle: false });
    }

    #[test]
    fn goodput_over_less_than_one_srtt_is_not_judged_and_after_one_srtt_it_is() {
        let p = TrickleParams::paper(Bandwidth::from_mbps(1));
        let early =
            TrickleInputs { srtt: Duration::from_millis(100), mss_bytes: 1448, delivered_bytes: 0, elapsed: Duration::from_millis(99) };
        assert_eq!(trickle_step(&p, &early).clamp_packets, Some(11));
        let later = TrickleInputs { elapsed: Duration::from_millis(100), ..early };
        assert_eq!(trickle_step(&p, &later).clamp_packets, None);
    }

    #[test]
    fn at_the_start_of_throttling_nothing_is_behind_yet() {
        let p = TrickleParams::paper(Bandwidth::from_mbps(1));
        let start = TrickleInputs { srtt: Duration::from_millis(100), mss_bytes: 1448, delivered_bytes: 0, elapsed: Duration::ZERO };
        assert_eq!(trickle_step(&p, &start).clamp_packets, Some(11));
    }

    #[test]
    fn five_percent_headroom_gives_a_smaller_clamp() {
        let mut p = TrickleParams::paper(Bandwidth::from_mbps(4));
        p.headroom = 1.05;
        let i = TrickleInputs {
            srtt: Duration::from_millis(100),
            mss_bytes: 1448,
            delivered_bytes: 5_000_000,
            elapsed: Duration::from_secs(10),
        };
        // 50 000 × 1.05 / 1448 = 36.26 → 37.
        assert_eq!(trickle_step(&p, &i).clamp_packets, Some(37));
    }
}
