//! BBR's sizing arithmetic: pacing rate, BDP, in-flight targets (Linux `bbr_bw_to_pacing_rate`,
//! `bbr_bdp`, `bbr_quantization_budget`, `bbr_tso_segs_goal`, `bbr_init_pacing_rate_from_rtt`).
//!
//! Gains are fixed point with `UNIT` = 256 (Linux `BBR_UNIT`) so that rounding matches the kernel:
//! high gain 2/ln2 is 739/256, drain gain 88/256, cwnd gain 512/256, the PROBE_BW up/down gains
//! 320/256 and 192/256. Bandwidth is kept in bits per second ([`Bandwidth`]); windows in segments.
//!
//! - pacing rate = bw · gain · (100 − margin)/100, margin 1 % (`bbr_pacing_margin_percent`): pace
//!   a little below the estimate so queues from bursts drain.
//! - BDP(gain) = ⌈bw · min_rtt · gain / MSS⌉ segments; IW (10) while min_rtt is unknown.
//! - in-flight target = BDP + 3 · TSO goal, rounded up to even, +2 in the PROBE_BW up phase:
//!   Linux budgets for segments sitting in send/receive offload queues. Linux computes the TSO goal
//!   from the pacing rate whether or not the device does TSO (≈1 ms of data, at least 2 segments —
//!   1 below 1.2 Mbit/s — at most 127), so we do the same to stay byte-for-byte comparable with
//!   kernel BBR in emulation.

use std::time::Duration;

use crate::units::Bandwidth;

pub const UNIT: u64 = 256;

/// Linux `GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER` (MAX_TCP_HEADER ≈ 320 bytes on x86-64).
const TSO_MAX_BYTES: u64 = 65_536 - 1 - 320;
/// Linux `bbr_min_tso_rate`: below 1.2 Mbit/s one segment per TSO burst.
const MIN_TSO_RATE_BPS: u64 = 1_200_000;
/// Linux `sk_pacing_shift` default: TSO bursts of ~1/1024 s of data.
const PACING_SHIFT: u32 = 10;

/// Convert a float gain to Linux fixed point (truncating, as the kernel's integer constants).
pub fn gain_to_unit(g: f64) -> u64 {
    (g * UNIT as f64).floor().max(0.0) as u64
}

/// Linux `bbr_rate_bytes_per_sec` + `bbr_bw_to_pacing_rate`: bw · gain, minus the pacing margin.
pub fn pacing_rate(bw: Bandwidth, gain: u64, margin_percent: u64) -> Bandwidth {
    let bps = bw.bits_per_sec as u128 * gain as u128 / UNIT as u128;
    let bps = bps * (100 - margin_percent.min(100)) as u128 / 100;
    Bandwidth::from_bps(bps.min(u64::MAX as u128) as u64)
}

/// Linux `bbr_init_pacing_rate_from_rtt`: before a bandwidth sample exists, pace the initial
/// window over the smoothed RTT (1 ms if none) at the startup gain.
pub fn initial_pacing_rate(cwnd_segments: u64, mss: u64, srtt: Option<Duration>, gain: u64, margin_percent: u64) -> Bandwidth {
    let rtt = srtt.filter(|d| !d.is_zero()).unwrap_or(Duration::from_millis(1));
    pacing_rate(Bandwidth::from_bytes_per(cwnd_segments * mss, rtt), gain, margin_percent)
}

/// Linux `bbr_bdp`: segments needed to fill `bw · min_rtt`, scaled by `gain`, rounded up.
pub fn bdp_segments(bw: Bandwidth, min_rtt: Option<Duration>, gain: u64, mss: u64, initial_cwnd: u64) -> u64 {
    let Some(rtt) = min_rtt else { return initial_cwnd };
    let num = bw.bits_per_sec as u128 * rtt.as_nanos() * gain as u128;
    let den = 8u128 * 1_000_000_000 * UNIT as u128 * mss.max(1) as u128;
    num.div_ceil(den) as u64
}

/// Linux `bbr_tso_segs_goal` from the current pacing rate.
pub fn tso_segs_goal(pacing: Bandwidth, mss: u64) -> u64 {
    let bytes_per_sec = pacing.bits_per_sec / 8;
    let min_segs = if pacing.bits_per_sec < MIN_TSO_RATE_BPS { 1 } else { 2 };
    let bytes = (bytes_per_sec >> PACING_SHIFT).min(TSO_MAX_BYTES);
    (bytes / mss.max(1)).max(min_segs).min(0x7F)
}

/// Linux `bbr_quantization_budget`: room for offload bursts and delayed ACKs.
pub fn quantization_budget(cwnd: u64, tso_goal: u64, probing_up: bool) -> u64 {
    let mut c = cwnd + 3 * tso_goal;
    c = (c + 1) & !1;
    if probing_up {
        c += 2;
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linux_fixed_point_gains() {
        assert_eq!(gain_to_unit(2.885) + 1, 739, "high gain = BBR_UNIT*2885/1000+1");
        assert_eq!(gain_to_unit(1.0 / 2.885), 88, "drain gain = BBR_UNIT*1000/2885");
        assert_eq!(gain_to_unit(1.25), 320);
        assert_eq!(gain_to_unit(0.75), 192);
    }

    #[test]
    fn pacing_rate_is_one_percent_below_gain_times_bw() {
        let r = pacing_rate(Bandwidth::from_mbps(100), UNIT, 1);
        assert_eq!(r, Bandwidth::from_mbps(99));
        let r = pacing_rate(Bandwidth::from_mbps(100), 320, 1);
        assert_eq!(r, Bandwidth::from_bps(123_750_000));
    }

    #[test]
    fn bdp_rounds_up_to_whole_segments() {
        // 10 Mbit/s × 40 ms = 50 000 bytes = 34.53 segments of 1448 → 35; ×2 → 69.06 → 70.
        let bw = Bandwidth::from_mbps(10);
        let rtt = Some(Duration::from_millis(40));
        assert_eq!(bdp_segments(bw, rtt, UNIT, 1448, 10), 35);
        assert_eq!(bdp_segments(bw, rtt, 2 * UNIT, 1448, 10), 70);
        assert_eq!(bdp_segments(bw, None, 2 * UNIT, 1448, 10), 10, "IW before any RTT sample");
    }

    #[test]
    fn tso_goal_is_about_a_millisecond_of_data() {
        // 100 Mbit/s = 12.5 MB/s; >>10 = 12207 bytes = 8 segments of 1448.
        assert_eq!(tso_segs_goal(Bandwidth::from_mbps(100), 1448), 8);
        assert_eq!(tso_segs_goal(Bandwidth::from_mbps(10), 1448), 2, "floor of 2 segments");
        assert_eq!(tso_segs_goal(Bandwidth::from_bps(1_000_000), 1448), 1, "1 below 1.2 Mbit/s");
        assert_eq!(quantization_budget(35, 2, false), 42);
        assert_eq!(quantization_budget(35, 2, true), 44);
    }
}
