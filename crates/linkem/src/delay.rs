//! Propagation delay and jitter of one link direction, after the bottleneck.
//!
//! A packet that leaves the bottleneck at `t` is due at the far end at `t + delay + j`, where `j`
//! is drawn uniformly from [-jitter, +jitter] with the link's seeded generator (so the same
//! packet sequence gets the same draws). Two rules keep it a link and not a reorderer:
//! * never before `t` (a negative total delay is clamped to 0);
//! * never before the previous packet of the same lane: jitter delays packets, it does not swap
//!   them. netem reorders with jitter unless a rate is set (tc-netem(8), "jitter ... causes
//!   reordering"); a real serial link does not, and reordering is a separate effect to ask for.
//!
//! Lanes: packets are kept in FIFO lanes, one per distinct delay. The default lane holds every
//! packet; a table can give packets with a given IPv4 address (source or destination) their own
//! delay — the per-client access delays of seed 004's dumbbell behind one shared bottleneck, as
//! python/tcpvideo/linux_dumbbell.py uses it. Each lane is time-ordered by construction, so the
//! next packet due is the smallest lane head (a few lanes: a linear scan beats a heap).

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use rand::Rng;
use rand_pcg::Pcg64;
use tcpvideo_model::Time;

/// Which IPv4 address of a packet selects its lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddressKey {
    Source,
    Destination,
}

/// Per-address delays: packets whose `key` address is in `delays` get that delay.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AddressDelays {
    pub key: Option<AddressKey>,
    pub delays: HashMap<u32, Duration>,
}

struct Held<H> {
    handle: H,
    len: u32,
    due: Time,
}

struct Lane<H> {
    delay: Duration,
    q: VecDeque<Held<H>>,
    last_due: Time,
}

/// The delay stage of one direction.
pub struct DelayStage<H> {
    lanes: Vec<Lane<H>>,
    by_addr: HashMap<u32, usize>,
    key: Option<AddressKey>,
    /// Half-width of the uniform jitter.
    jitter: Duration,
    rng: Pcg64,
    held: u64,
}

impl<H: Copy> DelayStage<H> {
    pub fn new(delay: Duration, jitter: Duration, table: &AddressDelays, rng: Pcg64) -> Self {
        let mut lanes = vec![Lane {
            delay,
            q: VecDeque::with_capacity(1024),
            last_due: Time::ZERO,
        }];
        let mut by_addr = HashMap::with_capacity(table.delays.len());
        for (&addr, &d) in &table.delays {
            let i = match lanes.iter().position(|l| l.delay == d) {
                Some(i) => i,
                None => {
                    lanes.push(Lane {
                        delay: d,
                        q: VecDeque::with_capacity(1024),
                        last_due: Time::ZERO,
                    });
                    lanes.len() - 1
                }
            };
            by_addr.insert(addr, i);
        }
        DelayStage {
            lanes,
            by_addr,
            key: table.key,
            jitter,
            rng,
            held: 0,
        }
    }

    /// The lane of a packet, from its bytes (IPv4 header); 0 (the default) for anything else.
    pub fn lane_for(&self, pkt: &[u8]) -> u16 {
        let Some(key) = self.key else { return 0 };
        if pkt.len() < 20 || pkt[0] >> 4 != 4 {
            return 0;
        }
        let off = match key {
            AddressKey::Source => 12,
            AddressKey::Destination => 16,
        };
        let a = u32::from_be_bytes([pkt[off], pkt[off + 1], pkt[off + 2], pkt[off + 3]]);
        self.by_addr.get(&a).map_or(0, |&i| i as u16)
    }

    /// A packet leaves the bottleneck at `left`; it is due at the far end later.
    pub fn push(&mut self, left: Time, lane: u16, handle: H, len: u32) {
        let jitter_ns = self.jitter.as_nanos() as i64;
        let j = if jitter_ns > 0 {
            self.rng.gen_range(-jitter_ns..=jitter_ns)
        } else {
            0
        };
        let l = &mut self.lanes[lane as usize];
        let nominal = left.0 as i64 + l.delay.as_nanos() as i64 + j;
        let due = Time((nominal.max(left.0 as i64)) as u64).max(l.last_due);
        l.last_due = due;
        l.q.push_back(Held { handle, len, due });
        self.held += 1;
    }

    /// The earliest due time held.
    pub fn next_due(&self) -> Option<Time> {
        self.lanes
            .iter()
            .filter_map(|l| l.q.front().map(|h| h.due))
            .min()
    }

    /// Remove the earliest packet if it is due by `now`: (handle, len, due).
    pub fn pop_due(&mut self, now: Time) -> Option<(H, u32, Time)> {
        let mut best: Option<(Time, usize)> = None;
        for (i, l) in self.lanes.iter().enumerate() {
            if let Some(h) = l.q.front() {
                if h.due <= now && best.is_none_or(|(d, _)| h.due < d) {
                    best = Some((h.due, i));
                }
            }
        }
        let (_, i) = best?;
        let h = self.lanes[i].q.pop_front().expect("lane head exists");
        self.held -= 1;
        Some((h.handle, h.len, h.due))
    }

    /// Packets held (on the "wire").
    pub fn held(&self) -> u64 {
        self.held
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tcpvideo_sim::engine::sub_rng;

    fn ipv4(src: [u8; 4], dst: [u8; 4]) -> [u8; 20] {
        let mut p = [0u8; 20];
        p[0] = 0x45;
        p[12..16].copy_from_slice(&src);
        p[16..20].copy_from_slice(&dst);
        p
    }

    #[test]
    fn a_packet_is_due_after_the_configured_delay() {
        let mut d = DelayStage::new(
            Duration::from_millis(10),
            Duration::ZERO,
            &AddressDelays::default(),
            sub_rng(1, 1),
        );
        d.push(Time::from_millis(5), 0, 1u32, 100);
        assert_eq!(d.next_due(), Some(Time::from_millis(15)));
        assert_eq!(d.pop_due(Time::from_millis(14)), None);
        assert_eq!(
            d.pop_due(Time::from_millis(15)),
            Some((1, 100, Time::from_millis(15)))
        );
    }

    #[test]
    fn jitter_never_reorders_packets_and_stays_within_its_bounds() {
        let mut d = DelayStage::new(
            Duration::from_millis(10),
            Duration::from_millis(5),
            &AddressDelays::default(),
            sub_rng(3, 9),
        );
        // packets 0.1 ms apart (closer than the jitter: many are held behind their predecessor),
        // then 20 ms apart (the whole jitter range shows)
        let sent = |i: u32| {
            if i < 1000 {
                100_000 * i as u64
            } else {
                100_000_000 + 20_000_000 * (i as u64 - 1000)
            }
        };
        for i in 0..2000u32 {
            d.push(Time(sent(i)), 0, i, 100);
        }
        let mut prev = 0;
        let mut spread = (u64::MAX, 0);
        for i in 0..2000u32 {
            let (h, _, due) = d.pop_due(Time::MAX).unwrap();
            assert_eq!(h, i, "packets leave in order");
            let extra = due.0 - sent(i);
            assert!(due.0 >= prev);
            // a packet held behind its predecessor is still due before that one's upper bound
            assert!((5_000_000..=15_000_000).contains(&extra), "delay {extra}");
            if i >= 1000 {
                spread = (spread.0.min(extra), spread.1.max(extra));
            }
            prev = due.0;
        }
        assert!(
            spread.0 < 6_000_000 && spread.1 > 14_000_000,
            "jitter is drawn over its range: {spread:?}"
        );
    }

    #[test]
    fn the_same_seed_gives_the_same_jitter() {
        let run = |seed| {
            let mut d = DelayStage::new(
                Duration::from_millis(1),
                Duration::from_micros(500),
                &AddressDelays::default(),
                sub_rng(seed, 1),
            );
            (0..50u32)
                .map(|i| {
                    d.push(Time::from_millis(i as u64), 0, i, 1);
                    d.pop_due(Time::MAX).unwrap().2
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(run(4), run(4));
        assert_ne!(run(4), run(5));
    }

    #[test]
    fn an_address_table_gives_a_client_its_own_delay() {
        let mut t = AddressDelays {
            key: Some(AddressKey::Destination),
            delays: HashMap::new(),
        };
        t.delays
            .insert(u32::from_be_bytes([10, 0, 0, 7]), Duration::from_millis(30));
        let d: DelayStage<u32> =
            DelayStage::new(Duration::from_millis(10), Duration::ZERO, &t, sub_rng(1, 1));
        let to7 = ipv4([10, 0, 0, 1], [10, 0, 0, 7]);
        let to8 = ipv4([10, 0, 0, 1], [10, 0, 0, 8]);
        let mut d = d;
        d.push(Time::ZERO, d.lane_for(&to7), 7, 20);
        d.push(Time::ZERO, d.lane_for(&to8), 8, 20);
        d.push(Time::ZERO, d.lane_for(&[0x60; 40]), 6, 40); // IPv6: default lane
        assert_eq!(d.pop_due(Time::MAX), Some((8, 20, Time::from_millis(10))));
        assert_eq!(d.pop_due(Time::MAX), Some((6, 40, Time::from_millis(10))));
        assert_eq!(d.pop_due(Time::MAX), Some((7, 20, Time::from_millis(30))));
    }
}
