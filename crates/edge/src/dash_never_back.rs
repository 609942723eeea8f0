//! The "never go back" rule for DASH receivers: a receiver moved from hold-0 to hold-x must not
//! be shown a live edge earlier than one it was already shown (the HLS path does the same with
//! `playlist_rewrite::hold_back`'s `shown_up_to`).
//!
//! The held MPD's live edge is the upstream edge E(t) (newest complete segment number) minus the
//! hold h. Never going back means E(t) − h(t) ≥ E(t₀) − h(t₀) for the receiver's previous MPD at
//! t₀, so h(t) ≤ h(t₀) + E(t) − E(t₀): a receiver moved from hold-0 is held back by one more
//! segment per segment time the source advances, until it reaches the stream's x (the receiver
//! waits at its position while the live edge moves on, as ETHLE §III intends).
//!
//! E(t) is read from the MPD itself (number-based templates: `mpd_rewrite::held_segment_urls`'s
//! newest number, ISO/IEC 23009-1 §5.3.9.5.3). Deviation: MPDs without a number-based template
//! (SegmentTimeline, SegmentList) have no E here and are held by the full x at once.

use std::collections::HashMap;

/// What one receiver was last shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShownEdge {
    /// The upstream live edge (segment number) when the MPD was served.
    pub upstream_edge: u64,
    /// Segments the served MPD held back from it.
    pub held: u32,
}

/// The hold a receiver may get now: the stream's `x`, capped so its live edge does not go back.
pub fn allowed_hold(x: u32, previous: Option<ShownEdge>, upstream_edge_now: Option<u64>) -> u32 {
    match (previous, upstream_edge_now) {
        (Some(p), Some(now)) => {
            let advanced = now.saturating_sub(p.upstream_edge);
            (p.held as u64).saturating_add(advanced).min(x as u64) as u32
        }
        _ => x,
    }
}

/// Per-receiver record of the shown live edge, for one stream.
#[derive(Default)]
pub struct ShownEdges {
    by_receiver: HashMap<u64, ShownEdge>,
}

impl ShownEdges {
    /// The hold to serve `receiver` now (stream hold `x`, upstream edge now), recorded as shown.
    /// A hold-0 answer is recorded with `x = 0`.
    pub fn serve(&mut self, receiver: u64, x: u32, upstream_edge_now: Option<u64>) -> u32 {
        let h = allowed_hold(x, self.by_receiver.get(&receiver).copied(), upstream_edge_now);
        match upstream_edge_now {
            Some(e) => {
                self.by_receiver.insert(receiver, ShownEdge { upstream_edge: e, held: h });
            }
            None => {
                self.by_receiver.remove(&receiver);
            }
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_receiver_moved_from_hold_0_is_held_one_more_segment_per_segment_time_up_to_x() {
        let mut shown = ShownEdges::default();
        assert_eq!(shown.serve(7, 0, Some(100)), 0); // hold-0: sees segment 100
        assert_eq!(shown.serve(7, 3, Some(100)), 0); // moved to hold-3, same edge: still 100
        assert_eq!(shown.serve(7, 3, Some(101)), 1); // edge 101, shown 100
        assert_eq!(shown.serve(7, 3, Some(101)), 1); // reload within the segment: stays
        assert_eq!(shown.serve(7, 3, Some(103)), 3); // shown 100 again, then x is reached
        assert_eq!(shown.serve(7, 3, Some(104)), 3); // 101: moves with the stream from now on
    }

    #[test]
    fn the_shown_live_edge_never_decreases_across_a_move() {
        let mut shown = ShownEdges::default();
        let mut last_shown = 0;
        for (edge, x) in [(50u64, 0u32), (50, 4), (51, 4), (51, 4), (52, 4), (55, 4), (56, 4), (58, 4), (60, 2)] {
            let h = shown.serve(1, x, Some(edge));
            let edge_shown = edge - h as u64;
            assert!(edge_shown >= last_shown, "edge {edge} hold {h}: shown {edge_shown} < {last_shown}");
            last_shown = edge_shown;
        }
    }

    #[test]
    fn a_new_receiver_or_an_mpd_without_numbers_gets_the_full_hold_and_others_are_independent() {
        let mut shown = ShownEdges::default();
        assert_eq!(shown.serve(1, 2, Some(10)), 2);
        assert_eq!(shown.serve(2, 0, Some(10)), 0);
        assert_eq!(shown.serve(2, 2, None), 2);
        assert_eq!(shown.serve(1, 2, Some(10)), 2);
    }
}
