//! Per-stream receiver groups (ETHLE §III-C).
//!
//! The hold x of a stream depends only on its backhaul (inequality 2), so one x serves every
//! receiver that needs holding; whether a receiver needs it depends on its own RAN (inequality 1).
//! The edge therefore keeps, per stream, a hold-0 group and a hold-x group, and serves each group
//! its own version of the playlist. Rules from the paper:
//! - a new receiver is placed by [`super::hold::decide`] with its current th_ran;
//! - the edge re-evaluates on every request ("request-driven"); a hold-0 receiver whose RAN worsens
//!   moves to hold-x;
//! - a hold-x receiver never moves back to hold-0: that would skip x segments of its playback;
//! - a receiver whose RAN fails constraint (3) is redirected (301) and is no longer the edge's.
//!
//! A hold-x receiver whose RAN later fails (3) stays in hold-x: it is already playing from the
//! edge, and a redirect would move it forward by x segments (the paper does not say; this is our
//! reading, chosen for the same no-skip reason as the one-way rule).

use std::collections::BTreeMap;

use super::hold::{decide, HoldDecision, HoldInputs};
use crate::units::Bandwidth;

/// The group a receiver is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    Hold0,
    /// Held back by the stream's x; `assured` false if the operator cap limited x.
    HoldX {
        x: u32,
        assured: bool,
    },
    Redirected,
}

/// One live stream's groups at one edge. Receivers are identified by the caller (a client id).
#[derive(Clone, Debug)]
pub struct StreamPolicy {
    /// The stream-level inputs (segment size and length, bitrate, th_bh, cap); th_ran is per call.
    stream: HoldInputs,
    receivers: BTreeMap<u64, Group>,
}

impl StreamPolicy {
    /// `stream.ran_throughput` is ignored: each request brings its receiver's th_ran.
    pub fn new(stream: HoldInputs) -> StreamPolicy {
        StreamPolicy {
            stream,
            receivers: BTreeMap::new(),
        }
    }

    /// The stream's x for receivers that need holding (inequality 2 under the cap).
    pub fn stream_hold(&self) -> HoldDecision {
        // Any th_ran above the bitrate that fails (1) gives the stream's x; infinity never fails (3).
        let needing = HoldInputs {
            ran_throughput: Bandwidth::from_bps(u64::MAX),
            ..self.stream
        };
        match decide(&needing) {
            HoldDecision::Hold0 => {
                // Even an infinitely fast RAN passes (1): the backhaul alone is fast enough, and a
                // receiver that fails (1) can only do so through its RAN, where holding one segment
                // gives the backhaul a whole extra segment time.
                HoldDecision::HoldX {
                    x: 1,
                    assured: true,
                }
            }
            other => other,
        }
    }

    /// A request from `receiver` whose current radio throughput is `ran`: its group afterwards.
    pub fn on_request(&mut self, receiver: u64, ran: Bandwidth) -> Group {
        let now = decide(&HoldInputs {
            ran_throughput: ran,
            ..self.stream
        });
        let next = match (self.receivers.get(&receiver).copied(), now) {
            // One-way rules: hold-x and redirected receivers stay where they are.
            (Some(g @ Group::HoldX { .. }), _) | (Some(g @ Group::Redirected), _) => g,
            (_, HoldDecision::Hold0) => Group::Hold0,
            (_, HoldDecision::Redirect) => Group::Redirected,
            (_, HoldDecision::HoldX { .. }) => match self.stream_hold() {
                HoldDecision::HoldX { x, assured } => Group::HoldX { x, assured },
                // stream_hold never answers Hold0 or Redirect (see there).
                HoldDecision::Hold0 | HoldDecision::Redirect => Group::HoldX {
                    x: 1,
                    assured: true,
                },
            },
        };
        self.receivers.insert(receiver, next);
        next
    }

    /// The group of a receiver seen before, if any.
    pub fn group_of(&self, receiver: u64) -> Option<Group> {
        self.receivers.get(&receiver).copied()
    }

    /// Receivers per group: (hold-0, hold-x, redirected).
    pub fn counts(&self) -> (usize, usize, usize) {
        self.receivers
            .values()
            .fold((0, 0, 0), |(a, b, c), g| match g {
                Group::Hold0 => (a + 1, b, c),
                Group::HoldX { .. } => (a, b + 1, c),
                Group::Redirected => (a, b, c + 1),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// 15 Mbit/s, 2 s segments of 3.7 MB over a 20 Mbit/s backhaul (US West in Table III):
    /// 1.48 s on the backhaul, so hold-0 needs th_ran ≥ 29.6 Mbit / 0.52 s = 56.9 Mbit/s.
    fn us_west_15m_2s() -> StreamPolicy {
        StreamPolicy::new(HoldInputs {
            segment_bytes: 3_700_000,
            segment_length: Duration::from_secs(2),
            bitrate: Bandwidth::from_mbps(15),
            backhaul_throughput: Bandwidth::from_mbps(20),
            ran_throughput: Bandwidth::ZERO,
            max_hold: None,
        })
    }

    #[test]
    fn fast_ran_joins_hold0_and_slow_ran_joins_hold_x() {
        let mut p = us_west_15m_2s();
        assert_eq!(p.on_request(1, Bandwidth::from_mbps(100)), Group::Hold0);
        assert_eq!(
            p.on_request(2, Bandwidth::from_mbps(40)),
            Group::HoldX {
                x: 1,
                assured: true
            }
        );
        assert_eq!(p.counts(), (1, 1, 0));
    }

    #[test]
    fn hold0_receiver_moves_to_hold_x_when_its_ran_worsens_and_never_back() {
        let mut p = us_west_15m_2s();
        assert_eq!(p.on_request(7, Bandwidth::from_mbps(100)), Group::Hold0);
        assert_eq!(
            p.on_request(7, Bandwidth::from_mbps(40)),
            Group::HoldX {
                x: 1,
                assured: true
            }
        );
        assert_eq!(
            p.on_request(7, Bandwidth::from_mbps(100)),
            Group::HoldX {
                x: 1,
                assured: true
            }
        );
    }

    #[test]
    fn ran_below_the_bitrate_is_redirected_and_stays_redirected() {
        let mut p = us_west_15m_2s();
        assert_eq!(p.on_request(3, Bandwidth::from_mbps(10)), Group::Redirected);
        assert_eq!(
            p.on_request(3, Bandwidth::from_mbps(100)),
            Group::Redirected
        );
        assert_eq!(p.counts(), (0, 0, 1));
    }

    #[test]
    fn hold_x_receiver_whose_ran_collapses_is_not_redirected() {
        let mut p = us_west_15m_2s();
        p.on_request(4, Bandwidth::from_mbps(40));
        assert_eq!(
            p.on_request(4, Bandwidth::from_mbps(5)),
            Group::HoldX {
                x: 1,
                assured: true
            }
        );
    }

    #[test]
    fn every_hold_x_receiver_of_a_stream_gets_the_same_x() {
        // 12.2 MB (50 Mbit/s, 2 s) over 21.2 Mbit/s (India): 97.6/21.2 = 4.6 s → x = 3 for all.
        let mut p = StreamPolicy::new(HoldInputs {
            segment_bytes: 12_200_000,
            segment_length: Duration::from_secs(2),
            bitrate: Bandwidth::from_mbps(50),
            backhaul_throughput: Bandwidth::from_bps(21_200_000),
            ran_throughput: Bandwidth::ZERO,
            max_hold: None,
        });
        for (id, ran) in [(1, 60), (2, 90), (3, 500)] {
            assert_eq!(
                p.on_request(id, Bandwidth::from_mbps(ran)),
                Group::HoldX {
                    x: 3,
                    assured: true
                }
            );
        }
    }
}
