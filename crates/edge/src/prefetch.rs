//! Which held segments the edge fetches ahead (ETHLE §III-A, Figs. 3 and 4).
//!
//! The edge stays x segments ahead of the *most advanced* receiver of a stream: when a hold-x
//! receiver is served up to sequence n (a playlist ending at n, or a request for segment n), the
//! segments n+1 ..= n+x that the source already lists are fetched, all at once (up to x parallel
//! connections: the catch-up of Fig. 3). Once the edge is ahead, each later step asks for one new
//! segment, which is the single connection that keeps the lead. Segments already cached or being
//! fetched are skipped by the fetcher, so asking again is free.
//!
//! Start-up (not in the paper, which measured a warm edge): a *new* receiver's first segment is
//! not among the held ones. hls.js starts `liveSyncDurationCount` target durations (default 3 in
//! hls.js 1.7.4, `src/config.ts`) behind the end of the playlist it was served
//! (`LatencyController.liveSyncPosition`: the end, plus the playlist's age, minus 3 target
//! durations), which lands in the segment 2 or 3 behind the served edge depending on how the
//! real segment durations round against the target duration. On a receiver's first playlist the
//! edge therefore also fetches the served edge − 3 ..= the served edge, so a cold edge's first
//! segment is already on its way (one RAN round trip plus the player's parse earlier) when the
//! player asks, and the segments it plays next are too.

/// Sequence numbers to prefetch after serving up to `served_up_to`, holding `x`, when the source
/// lists segments up to `newest_listed`.
pub fn held_segments_to_fetch(served_up_to: u64, x: u32, newest_listed: u64) -> std::ops::RangeInclusive<u64> {
    let first = served_up_to.saturating_add(1);
    let last = served_up_to.saturating_add(x as u64).min(newest_listed);
    first..=last
}

/// hls.js's default `liveSyncDurationCount` (hls.js 1.7.4): how many target durations behind the
/// end of its first playlist a new player starts.
pub const HLS_JS_LIVE_SYNC_SEGMENTS: u64 = 3;

/// Sequence numbers a new receiver served a playlist ending at `served_edge` starts with:
/// `served_edge − 3 ..= served_edge`, not before the oldest listed segment.
pub fn startup_segments_to_fetch(served_edge: u64, oldest_listed: u64) -> std::ops::RangeInclusive<u64> {
    served_edge.saturating_sub(HLS_JS_LIVE_SYNC_SEGMENTS).max(oldest_listed)..=served_edge
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_receiver_at_14_holding_two_makes_the_edge_fetch_15_and_16() {
        // The paper's Fig. 3: segment 14 requested, 15 and 16 held and downloaded in parallel.
        assert_eq!(held_segments_to_fetch(14, 2, 16).collect::<Vec<_>>(), [15, 16]);
    }

    #[test]
    fn nothing_beyond_what_the_source_lists_is_fetched() {
        assert_eq!(held_segments_to_fetch(14, 3, 15).collect::<Vec<_>>(), [15]);
        assert_eq!(held_segments_to_fetch(16, 2, 16).count(), 0);
    }

    #[test]
    fn hold_zero_fetches_nothing_ahead() {
        assert_eq!(held_segments_to_fetch(14, 0, 20).count(), 0);
    }

    #[test]
    fn a_new_receiver_served_up_to_28_starts_somewhere_in_25_to_28() {
        assert_eq!(startup_segments_to_fetch(28, 23).collect::<Vec<_>>(), [25, 26, 27, 28]);
    }

    #[test]
    fn start_up_prefetch_stays_inside_the_listed_window() {
        assert_eq!(startup_segments_to_fetch(28, 27).collect::<Vec<_>>(), [27, 28]);
        assert_eq!(startup_segments_to_fetch(1, 0).collect::<Vec<_>>(), [0, 1]);
    }
}
