//! Micro-burst detection (seed 003, Trickle §5.2, after Blanton & Allman): "a burst is a
//! sequence of four or more data packets with inter-arrival time less or equal to 1
//! millisecond" — counted in packets, not bytes, as the prior studies do. Both limits are
//! options (`burst_gap`, `burst_min_packets`). Retransmissions are data packets too and count.
//! The tracker is a few integers per flow direction; it allocates only when a burst ends.

use crate::flv::FrameType;

/// A finished burst.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Burst {
    pub start_ns: u64,
    pub end_ns: u64,
    pub packets: u32,
    pub bytes: u64,
    /// Sequence range covered (stream offsets), to find later retransmissions inside it.
    pub seq_lo: u64,
    pub seq_hi: u64,
    /// Frame type of the burst's first packet (seed 000 Fig. 6).
    pub frame: FrameType,
}

/// Running burst state for one direction.
#[derive(Clone, Copy, Debug, Default)]
pub struct BurstTracker {
    cur: Option<Burst>,
}

impl BurstTracker {
    /// Feed one data packet; returns the burst it closed, if that run qualified.
    #[inline]
    pub fn on_data(
        &mut self,
        t: u64,
        len: u32,
        seq_lo: u64,
        seq_hi: u64,
        frame: FrameType,
        gap_ns: u64,
        min_pkts: u32,
    ) -> Option<Burst> {
        let mut done = None;
        match &mut self.cur {
            Some(b) if t.saturating_sub(b.end_ns) <= gap_ns => {
                b.end_ns = t;
                b.packets += 1;
                b.bytes += len as u64;
                b.seq_lo = b.seq_lo.min(seq_lo);
                b.seq_hi = b.seq_hi.max(seq_hi);
                return None;
            }
            Some(b) => {
                if b.packets >= min_pkts {
                    done = Some(*b);
                }
            }
            None => {}
        }
        self.cur = Some(Burst { start_ns: t, end_ns: t, packets: 1, bytes: len as u64, seq_lo, seq_hi, frame });
        done
    }

    /// End of flow: the pending run, if it qualifies.
    pub fn finish(&mut self, min_pkts: u32) -> Option<Burst> {
        self.cur.take().filter(|b| b.packets >= min_pkts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const MS: u64 = 1_000_000;

    fn feed(times: &[u64]) -> Vec<Burst> {
        let mut t = BurstTracker::default();
        let mut out = vec![];
        for (i, &x) in times.iter().enumerate() {
            if let Some(b) = t.on_data(x, 100, i as u64 * 100, i as u64 * 100 + 100, FrameType::Unknown, MS, 4) {
                out.push(b);
            }
        }
        out.extend(t.finish(4));
        out
    }

    #[test]
    fn four_packets_within_one_ms_each_make_a_burst() {
        let b = feed(&[0, MS, 2 * MS, 3 * MS]);
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].packets, 4);
    }

    #[test]
    fn three_packets_are_not_a_burst() {
        assert!(feed(&[0, 10, 20]).is_empty());
    }

    #[test]
    fn gap_over_one_ms_splits_runs() {
        let b = feed(&[0, 10, 20, 30, 30 + MS + 1, 40 + MS + 1, 50 + MS + 1, 60 + MS + 1, 70 + MS + 1]);
        assert_eq!(b.iter().map(|b| b.packets).collect::<Vec<_>>(), vec![4, 5]);
    }
}
