//! The ETHLE edge as a simulated node (seed 002 §III): what it holds back, what it fetches from
//! the source and when, and which receiver request it can answer. Pure bookkeeping: the testbed
//! ([`crate::ethle_testbed`]) owns the sockets and calls in with timestamps.
//!
//! The decisions are the real edge's, from the same model code (`tcpvideo_model::ethle`):
//! - on the first playlist request the edge forwards it to the source; when the answer arrives
//!   it takes the backhaul RTT of that upstream connection (the simulator's TCP srtt, the stand-in
//!   for the real edge's TCP_INFO), predicts th_bh with [`BackhaulModel`] (doubling reading, from
//!   one MSS, as the real edge does) and decides x with [`decide`] (inequalities 1–3, operator cap);
//!   or x is forced (the study's hold-0..4 runs);
//! - it then serves playlists that hold back the newest x segments (the receiver sees the source's
//!   production x segment times late) and keeps fetching up to x segments ahead of the most
//!   advanced request, each segment fetched once. How many fetches run at once is [`FetchRule`]:
//!   by default the paper's §III-B and Figs. 3–4 — a requested segment that is not at the edge is
//!   fetched at once, as a reverse proxy's miss ("otherwise, it retrieves the file from the live
//!   source"), and the held segments ahead of the most advanced request over at most x parallel
//!   connections ("it downloads those segments by opening x parallel TCP connections"; Fig. 3
//!   fetches 14, 15 and 16 together for x = 2; Fig. 4 starts 16 and 17 while 15 is still coming);
//!   `FetchRule::AtMostX` caps all fetches at max(x, 1) instead (Eq. 2's th_bh·x alone);
//! - hold-0 is a plain reverse proxy: a segment is fetched when a receiver asks for it.
//!
//! Forwarding: by default the testbed answers a segment request once the whole segment is at
//! the edge (store and forward, `edge_forwarding = "store_and_forward"`): the paper's edge
//! "retrieves the file from the live source over the backhaul and serves it afterwards" (§III-B)
//! and inequality 1 adds the two legs (s/th_bh + s/th_ran). `"cut_through"` relays a segment
//! that is still arriving byte by byte, as `crates/edge` and any streaming reverse proxy do, so
//! the two legs of a hold-0 fetch overlap. Held segments are complete before they are asked for
//! either way.
//! The edge learns a new segment at the moment the source publishes it (as if it polled the
//! source's playlist continuously); the real edge learns it from the playlists it forwards.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use tcpvideo_model::ethle::{decide, BackhaulModel, HoldDecision, HoldInputs, StartupReading};
use tcpvideo_model::video::LiveSource;
use tcpvideo_model::{Bandwidth, Time};

/// How the edge picks x.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum HoldMode {
    /// Hold exactly this many segments (the study's hold-0 … hold-4 runs); the model's choice
    /// is still computed and reported.
    Forced(u32),
    /// The model's choice from the measured backhaul RTT and the receiver's th_ran.
    Model,
}

/// How many upstream fetches the edge runs at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FetchRule {
    /// The paper's (§III-B, Figs. 3–4): a requested segment that is neither at the edge nor
    /// coming is fetched at once (the reverse proxy's miss); held segments — ahead of the most
    /// advanced request when their fetch starts — over at most x connections, which they keep
    /// until they end even once a receiver asks for them (Eq. 2's th_bh·x in steady state). At a
    /// receiver's start that is x + 1 fetches (Fig. 3: 14, 15 and 16 for x = 2).
    RequestedPlusHeld,
    /// At most max(x, 1) fetches of any kind (Eq. 2's x connections; the study's first version).
    AtMostX,
}

/// The receiver and operator context of the decision (§III-A: RNIS th_ran, the operator's cap).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DecisionContext {
    pub ran_throughput: Bandwidth,
    pub max_hold: Option<u32>,
}

/// The stream as the edge reads it from the source's playlist.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StreamInfo {
    pub segment_bytes: u64,
    pub segment_length: Duration,
    pub bitrate: Bandwidth,
}

/// What the model said when the edge decided (for the study's Table III).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HoldChoice {
    pub x: u32,
    pub measured_rtt: Duration,
    /// th_bh predicted by the model (also computed when x is forced, for comparison).
    pub predicted_throughput: Bandwidth,
    /// The model's decision (what `HoldMode::Model` applies).
    pub decision: HoldDecision,
}

/// The edge node's state for one live stream.
#[derive(Clone, Debug)]
pub struct EdgeNode {
    mode: HoldMode,
    context: DecisionContext,
    stream: StreamInfo,
    source: LiveSource,
    mss_bytes: u64,
    fetch_rule: FetchRule,
    pub choice: Option<HoldChoice>,
    /// Segment → when its last byte reached the edge.
    cached: BTreeMap<u64, Time>,
    fetching: BTreeSet<u64>,
    /// The fetches started as held segments (ahead of every request): they occupy the x
    /// connections until they end, even once a receiver asks for them.
    held_fetching: BTreeSet<u64>,
    /// Lowest segment any receiver asked for (nothing older is prefetched).
    first_requested: Option<u64>,
    highest_requested: Option<u64>,
}

impl EdgeNode {
    pub fn new(
        mode: HoldMode,
        context: DecisionContext,
        stream: StreamInfo,
        source: LiveSource,
        mss_bytes: u64,
        fetch_rule: FetchRule,
    ) -> EdgeNode {
        EdgeNode {
            mode,
            context,
            stream,
            source,
            mss_bytes,
            fetch_rule,
            choice: None,
            cached: BTreeMap::new(),
            fetching: BTreeSet::new(),
            held_fetching: BTreeSet::new(),
            first_requested: None,
            highest_requested: None,
        }
    }

    /// The first upstream playlist answer arrived over a connection whose RTT is `rtt`: decide x.
    pub fn decide_hold(&mut self, rtt: Duration) -> HoldChoice {
        let model = BackhaulModel { mss_bytes: self.mss_bytes, rtt, bottleneck: None, reading: StartupReading::DoublingPerRound };
        let predicted = model.predict(self.stream.segment_bytes).throughput;
        let decision = decide(&HoldInputs {
            segment_bytes: self.stream.segment_bytes,
            segment_length: self.stream.segment_length,
            bitrate: self.stream.bitrate,
            backhaul_throughput: predicted,
            ran_throughput: self.context.ran_throughput,
            max_hold: self.context.max_hold,
        });
        let x = match self.mode {
            HoldMode::Forced(x) => x,
            HoldMode::Model => decision.held_segments(),
        };
        let choice = HoldChoice { x, measured_rtt: rtt, predicted_throughput: predicted, decision };
        self.choice = Some(choice);
        choice
    }

    /// Segments held back (0 until decided).
    pub fn x(&self) -> u32 {
        self.choice.map_or(0, |c| c.x)
    }

    /// The source as the edge's receivers see it: every segment x segment times late.
    pub fn held_view(&self) -> LiveSource {
        let mut v = self.source;
        v.t0 += self.stream.segment_length * self.x();
        v
    }

    /// Most upstream fetches the edge runs at once ([`FetchRule`]): x + 1 (the requested segment
    /// and x held ones), or max(x, 1).
    pub fn upstream_connections(&self) -> u32 {
        match self.fetch_rule {
            FetchRule::RequestedPlusHeld => self.x() + 1,
            FetchRule::AtMostX => self.x().max(1),
        }
    }

    /// May a fetch of `segment` start now, given the fetches under way?
    fn may_start(&self, segment: u64) -> bool {
        match self.fetch_rule {
            // a miss (asked for, not coming yet) goes at once; a held one needs one of the x
            FetchRule::RequestedPlusHeld => self.is_asked(segment) || (self.held_fetching.len() as u32) < self.x(),
            FetchRule::AtMostX => (self.fetching.len() as u32) < self.x().max(1),
        }
    }

    fn is_asked(&self, segment: u64) -> bool {
        self.highest_requested.is_some_and(|h| segment <= h)
    }

    /// A receiver asked for `segment`.
    pub fn on_request(&mut self, segment: u64) {
        self.first_requested = Some(self.first_requested.map_or(segment, |f| f.min(segment)));
        self.highest_requested = Some(self.highest_requested.map_or(segment, |h| h.max(segment)));
    }

    pub fn is_cached(&self, segment: u64) -> bool {
        self.cached.contains_key(&segment)
    }

    /// The last byte of `segment` reached the edge at `now`.
    pub fn on_fetched(&mut self, segment: u64, now: Time) {
        self.fetching.remove(&segment);
        self.held_fetching.remove(&segment);
        self.cached.insert(segment, now);
    }

    /// Highest segment the edge wants to have: x ahead of the most advanced request.
    fn fetch_limit(&self) -> Option<u64> {
        Some(self.highest_requested? + self.x() as u64)
    }

    /// The next segment to fetch at `now`, if any is wanted, published and not yet fetched.
    /// Marks it as being fetched.
    pub fn next_fetch(&mut self, now: Time) -> Option<u64> {
        let k = self.next_candidate()?;
        if self.source.available_at(k) > now || !self.may_start(k) {
            return None;
        }
        self.fetching.insert(k);
        if !self.is_asked(k) {
            self.held_fetching.insert(k);
        }
        Some(k)
    }

    /// When the next wanted segment is published, if the edge is waiting for that.
    pub fn next_publication(&self, now: Time) -> Option<Time> {
        let k = self.next_candidate()?;
        let at = self.source.available_at(k);
        (at > now).then_some(at)
    }

    fn next_candidate(&self) -> Option<u64> {
        let limit = self.fetch_limit()?.min(self.source.segment_count.saturating_sub(1));
        let mut k = self.first_requested?;
        while k <= limit {
            if !self.cached.contains_key(&k) && !self.fetching.contains(&k) {
                return Some(k);
            }
            k += 1;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: Duration = Duration::from_secs(2);

    fn edge(mode: HoldMode) -> EdgeNode {
        edge_with(mode, FetchRule::RequestedPlusHeld)
    }

    fn edge_with(mode: HoldMode, rule: FetchRule) -> EdgeNode {
        let stream = StreamInfo { segment_bytes: 3_700_000, segment_length: L, bitrate: Bandwidth::from_mbps(15) };
        let context = DecisionContext { ran_throughput: Bandwidth::from_mbps(56), max_hold: Some(4) };
        EdgeNode::new(mode, context, stream, LiveSource::new(Time::ZERO, L, 100, 6).unwrap(), 1448, rule)
    }

    #[test]
    fn the_model_holds_what_table_three_predicts_for_japan_15m_2s() {
        // 224 ms, 3.7 MB: th_bh ≈ 11.7 Mbit/s < 14.8 → hold-0 fails, x = ⌈2.53 s / 2 s⌉ = 2.
        let mut e = edge(HoldMode::Model);
        let c = e.decide_hold(Duration::from_millis(224));
        assert_eq!(c.x, 2);
        assert!((c.predicted_throughput.as_mbps_f64() - 11.7).abs() < 0.6, "{:?}", c.predicted_throughput);
        // short RTT: hold-0
        let mut e = edge(HoldMode::Model);
        assert_eq!(e.decide_hold(Duration::from_millis(50)).x, 0);
        // forced x is applied, the model's choice still reported
        let mut e = edge(HoldMode::Forced(4));
        let c = e.decide_hold(Duration::from_millis(224));
        assert_eq!((c.x, c.decision.held_segments()), (4, 2));
    }

    #[test]
    fn receivers_see_the_source_x_segment_times_late() {
        let mut e = edge(HoldMode::Forced(3));
        e.decide_hold(Duration::from_millis(300));
        assert_eq!(e.held_view().available_at(10), Time::ZERO + L * 11 + L * 3);
        assert_eq!(e.upstream_connections(), 4);
    }

    #[test]
    fn hold_x_prefetches_up_to_x_past_the_most_advanced_request_once_each() {
        let mut e = edge(HoldMode::Forced(2));
        e.decide_hold(Duration::from_millis(300));
        e.on_request(10);
        let now = Time::from_secs(40); // segments up to 18 published
        let got: Vec<u64> = std::iter::from_fn(|| e.next_fetch(now)).collect();
        assert_eq!(got, vec![10, 11, 12]);
        e.on_fetched(11, now);
        assert_eq!(e.next_fetch(now), None);
        e.on_request(11);
        assert_eq!(e.next_fetch(now), Some(13));
    }

    #[test]
    fn the_first_request_fetches_the_asked_segment_and_x_held_ones_together_as_in_fig_3() {
        // Fig. 3 (x = 2): the receiver asks for 14; the edge fetches 14, 15 and 16 at once.
        let now = Time::from_secs(60); // segments up to 28 published
        let mut e = edge(HoldMode::Forced(2));
        e.decide_hold(Duration::from_millis(300));
        e.on_request(14);
        let got: Vec<u64> = std::iter::from_fn(|| e.next_fetch(now)).collect();
        assert_eq!(got, vec![14, 15, 16]);
        // 15 arrives, the receiver asks for it: one new held fetch (17), 14 and 16 still coming
        e.on_fetched(15, now);
        e.on_request(15);
        assert_eq!(e.next_fetch(now), Some(17));
        assert_eq!(e.next_fetch(now), None, "16 and 17 are the two held fetches");
        // Eq. 2 alone: two at a time, the asked segment included
        let mut e = edge_with(HoldMode::Forced(2), FetchRule::AtMostX);
        e.decide_hold(Duration::from_millis(300));
        e.on_request(14);
        let got: Vec<u64> = std::iter::from_fn(|| e.next_fetch(now)).collect();
        assert_eq!(got, vec![14, 15]);
    }

    #[test]
    fn a_held_fetch_keeps_its_connection_when_the_receiver_asks_for_its_segment() {
        // x = 1, the edge fell behind: held 21 is still coming when the receiver asks for it, so
        // 22 waits for 21's connection (Eq. 2: x connections carry the held segments).
        let now = Time::from_secs(60);
        let mut e = edge(HoldMode::Forced(1));
        e.decide_hold(Duration::from_millis(300));
        e.on_request(20);
        assert_eq!(e.next_fetch(now), Some(20));
        assert_eq!(e.next_fetch(now), Some(21));
        e.on_fetched(20, now);
        e.on_request(21);
        assert_eq!(e.next_fetch(now), None, "21 still holds the one held connection");
        e.on_fetched(21, now);
        assert_eq!(e.next_fetch(now), Some(22));
    }

    #[test]
    fn hold_0_fetches_only_what_was_asked_and_waits_for_publication() {
        let mut e = edge(HoldMode::Forced(0));
        e.decide_hold(Duration::from_millis(300));
        e.on_request(5); // published at 12 s
        assert_eq!(e.next_fetch(Time::from_secs(11)), None);
        assert_eq!(e.next_publication(Time::from_secs(11)), Some(Time::from_secs(12)));
        assert_eq!(e.next_fetch(Time::from_secs(12)), Some(5));
        assert_eq!(e.next_fetch(Time::from_secs(30)), None);
    }
}
