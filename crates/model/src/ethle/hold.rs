//! How many segments the edge holds back for one receiver (ETHLE §III-B, inequalities 1–3).
//!
//! - Inequality (1), hold-0: s_seg/th_bh + s_seg/th_ran ≤ l_seg. The segment crosses the backhaul
//!   and then the RAN within one segment time, so splitting the path is enough.
//! - Constraint (3): th_ran > b_seg. Otherwise no holding helps (the RAN itself is too slow), and
//!   the edge falls back to an HTTP 301 redirect to the source (the paper's first option; its
//!   second, edge transcoding, is out of scope).
//! - Inequality (2): the smallest x ≥ 1 with s_seg/(th_bh·x) ≤ l_seg, i.e. x = ⌈s_seg/(th_bh·l_seg)⌉:
//!   x parallel backhaul downloads deliver x segments per segment time.
//! - The operator's cap on x (§III-B: "an upper limit on the value of x to prevent excessive
//!   number of parallel TCP connections"): x is cut to the cap and the decision says QoE is not
//!   assured.
//!
//! The paper evaluates (1) before (3); since b_seg ≈ s_seg/l_seg, (1) fails whenever (3) does, so
//! the order only matters for streams whose segments are larger than bitrate × length (VBR).
//! Sizes are bytes, rates bits per second, durations `Duration` (no bare seconds at the boundary).

use std::time::Duration;

use crate::units::Bandwidth;

/// What the edge knows about one stream and one receiver when it decides.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HoldInputs {
    /// s_seg: size of a segment of the stream (CBR: all segments about the same).
    pub segment_bytes: u64,
    /// l_seg: media duration of a segment.
    pub segment_length: Duration,
    /// b_seg: the stream's bitrate (BANDWIDTH of the playlist, or size ÷ duration).
    pub bitrate: Bandwidth,
    /// th_bh: the modeled (or measured) backhaul throughput of one segment download.
    pub backhaul_throughput: Bandwidth,
    /// th_ran: the receiver's expected radio throughput (from the operator's RNIS).
    pub ran_throughput: Bandwidth,
    /// Operator's upper limit on x (parallel upstream connections); `None` = no limit.
    pub max_hold: Option<u32>,
}

/// The edge's decision for one receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HoldDecision {
    /// Inequality (1) holds: proxy without holding anything.
    Hold0,
    /// Hold back the newest `x` segments. `assured` is false when the operator's cap cut x below
    /// what inequality (2) asks for (the receiver may then stall).
    HoldX { x: u32, assured: bool },
    /// Constraint (3) fails (th_ran ≤ b_seg): send 301 to the source, no holding.
    Redirect,
}

impl HoldDecision {
    /// Segments held back from this receiver's playlists (0 for hold-0 and redirect).
    pub fn held_segments(self) -> u32 {
        match self {
            HoldDecision::HoldX { x, .. } => x,
            HoldDecision::Hold0 | HoldDecision::Redirect => 0,
        }
    }
}

/// Seconds to move `bytes` at `rate` (infinite at rate zero); used only inside the inequalities.
fn transfer_secs(bytes: u64, rate: Bandwidth) -> f64 {
    if rate.bits_per_sec == 0 {
        return f64::INFINITY;
    }
    bytes as f64 * 8.0 / rate.bits_per_sec as f64
}

/// Inequality (1): does splitting the path alone deliver each segment within its duration?
pub fn hold0_suffices(inputs: &HoldInputs) -> bool {
    let total = transfer_secs(inputs.segment_bytes, inputs.backhaul_throughput)
        + transfer_secs(inputs.segment_bytes, inputs.ran_throughput);
    total <= inputs.segment_length.as_secs_f64()
}

/// Inequality (2): the smallest x ≥ 1 with s_seg / (th_bh · x) ≤ l_seg; `None` when th_bh is zero.
pub fn minimal_hold(
    segment_bytes: u64,
    segment_length: Duration,
    backhaul: Bandwidth,
) -> Option<u32> {
    let download = transfer_secs(segment_bytes, backhaul);
    let length = segment_length.as_secs_f64();
    if !download.is_finite() || length <= 0.0 {
        return None;
    }
    // A relative slack of 1e-12 keeps exact ties (download = k·length) at k, as "≤" intends,
    // despite the rounding of the division.
    let x = (download / length * (1.0 - 1e-12)).ceil().max(1.0);
    Some(x.min(u32::MAX as f64) as u32)
}

/// The paper's two-step decision (§III-B) with the 301 fallback and the operator cap.
pub fn decide(inputs: &HoldInputs) -> HoldDecision {
    if hold0_suffices(inputs) {
        return HoldDecision::Hold0;
    }
    if inputs.ran_throughput <= inputs.bitrate {
        return HoldDecision::Redirect;
    }
    let wanted = minimal_hold(
        inputs.segment_bytes,
        inputs.segment_length,
        inputs.backhaul_throughput,
    )
    .unwrap_or(u32::MAX);
    match inputs.max_hold {
        Some(cap) if wanted > cap => HoldDecision::HoldX {
            x: cap,
            assured: false,
        },
        _ => HoldDecision::HoldX {
            x: wanted,
            assured: true,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(segment_mb: f64, length_s: u64, bh_mbps: u64, ran_mbps: u64) -> HoldInputs {
        HoldInputs {
            segment_bytes: (segment_mb * 1e6) as u64,
            segment_length: Duration::from_secs(length_s),
            bitrate: Bandwidth::from_mbps(15),
            backhaul_throughput: Bandwidth::from_mbps(bh_mbps),
            ran_throughput: Bandwidth::from_mbps(ran_mbps),
            max_hold: None,
        }
    }

    #[test]
    fn hold0_when_backhaul_plus_ran_time_fits_in_one_segment() {
        // 3 MB: 24 Mbit / 40 Mbit/s = 0.6 s backhaul + 24/60 = 0.4 s RAN = 1.0 s ≤ 2 s.
        assert_eq!(decide(&inputs(3.0, 2, 40, 60)), HoldDecision::Hold0);
    }

    #[test]
    fn exact_tie_in_inequality_one_is_still_hold0() {
        // 24 Mbit / 24 Mbit/s = 1 s + 24 Mbit / 24 Mbit/s = 1 s = exactly 2 s.
        assert_eq!(decide(&inputs(3.0, 2, 24, 24)), HoldDecision::Hold0);
    }

    #[test]
    fn hold_x_is_the_ceiling_of_download_time_over_segment_length() {
        // 3.7 MB at 11.7 Mbit/s: 29.6/11.7 = 2.53 s for a 2 s segment → x = 2 (Japan, Table III).
        let mut i = inputs(3.7, 2, 0, 50);
        i.backhaul_throughput = Bandwidth::from_bps(11_700_000);
        assert_eq!(
            decide(&i),
            HoldDecision::HoldX {
                x: 2,
                assured: true
            }
        );
        // 2.53 s / 1 s segments would need 3.
        i.segment_length = Duration::from_secs(1);
        assert_eq!(
            decide(&i),
            HoldDecision::HoldX {
                x: 3,
                assured: true
            }
        );
    }

    #[test]
    fn a_download_of_exactly_k_segment_times_holds_k_not_k_plus_one() {
        // 4 MB = 32 Mbit at 8 Mbit/s = 4.0 s = 2 × 2 s.
        assert_eq!(
            minimal_hold(4_000_000, Duration::from_secs(2), Bandwidth::from_mbps(8)),
            Some(2)
        );
        assert_eq!(
            minimal_hold(4_000_001, Duration::from_secs(2), Bandwidth::from_mbps(8)),
            Some(3)
        );
    }

    #[test]
    fn ran_slower_than_the_bitrate_redirects_to_the_source() {
        // th_ran = 15 Mbit/s is not > b_seg = 15 Mbit/s (constraint 3 is strict).
        assert_eq!(decide(&inputs(3.7, 2, 10, 15)), HoldDecision::Redirect);
    }

    #[test]
    fn operator_cap_cuts_x_and_says_qoe_is_not_assured() {
        let mut i = inputs(12.2, 2, 20, 80); // 97.6 Mbit / 20 = 4.88 s → x = 3
        assert_eq!(
            decide(&i),
            HoldDecision::HoldX {
                x: 3,
                assured: true
            }
        );
        i.max_hold = Some(2);
        assert_eq!(
            decide(&i),
            HoldDecision::HoldX {
                x: 2,
                assured: false
            }
        );
        i.max_hold = Some(3);
        assert_eq!(
            decide(&i),
            HoldDecision::HoldX {
                x: 3,
                assured: true
            }
        );
    }

    #[test]
    fn zero_backhaul_throughput_cannot_be_held_away() {
        let i = inputs(3.7, 2, 0, 50);
        assert_eq!(
            minimal_hold(i.segment_bytes, i.segment_length, i.backhaul_throughput),
            None
        );
        assert_eq!(
            decide(&HoldInputs {
                max_hold: Some(4),
                ..i
            }),
            HoldDecision::HoldX {
                x: 4,
                assured: false
            }
        );
    }
}
