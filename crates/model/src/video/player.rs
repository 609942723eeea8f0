//! A segmented HTTP video player (live or on-demand) as a pure state machine: it decides what to
//! request next and when, keeps the playout buffer ([`super::playout`]), asks its ABR rule for the
//! quality, and measures startup, stalls, liveness and live latency.
//!
//! Calling sequence (a simulator app or a real player, every call timestamped):
//! 1. [`Player::join`]`(now)` — the client arrives (live: picks the newest available segment, or
//!    `live_start_behind` segments before it; on demand: segment 0).
//! 2. loop on [`Player::next_action`]`(now)`:
//!    - [`PlayerAction::WaitUntil`]`(t)`: nothing to send before `t` (segment not yet available,
//!      buffer at its target, the client's request slot, or an ABR delay) — call again at `t`;
//!    - [`PlayerAction::ProbeSizes`]: send HEAD(s) for the segment, then call
//!      [`Player::on_segment_sizes`] and `next_action` again (seed 004 §V);
//!    - [`PlayerAction::Fetch`]: send the GET now;
//!    - [`PlayerAction::Downloading`]: a download is in flight; wait for its completion;
//!    - [`PlayerAction::Finished`]: every segment was fetched.
//! 3. while downloading: [`Player::on_first_byte`], [`Player::on_bytes`] (optional, for
//!    byte-level series), then [`Player::on_segment_done`] when the last byte arrived.
//! 4. any time: [`Player::buffer_level`], [`Player::buffer_bytes`], [`Player::live_latency`]
//!    for time series; [`Player::qoe`] and [`Player::segments`] at the end.
//!
//! Definitions:
//! - startup time: join → playback start (seed 004: the time to receive the first segment, after
//!   which playout begins; seed 002 "initial startup delay");
//! - stall: playback stopped with more media to come, from buffer-empty to resume ([`super::playout`]);
//! - live latency (seed 002 §V-B): how far playback is behind the source's production, `now −
//!   (t0 + media position)`; it grows by exactly the stall time;
//! - liveness (seed 004 §IV): availability of a segment minus the time it starts playing ("a
//!   liveness of −4 s means that a client will play the last segment 4 s after the segment has been
//!   made available"), reported for the last segment played; `liveness = d − live latency`.
//!   (Seed 004 §V also calls one segment duration "the best achievable liveness": that is the
//!   latency view of the same quantity. We report both, named apart.)
//! - buffer target in segments (seed 004: 1, 5, 15): the player requests the next segment while
//!   the buffered media is below `target · d` (dash.js's stable-buffer rule), one download at a time.
//! - catching up (config): [`CatchUp::Never`] plays every segment, so each stall adds to the
//!   latency for good (seed 004); [`CatchUp::JumpToLive`] skips, after a stall, to the newest
//!   available segment (minus `live_start_behind`), as live players that seek to the live edge.

use std::time::Duration;

use super::abr::estimator::SegmentEwma;
use super::abr::{AbrContext, AbrRule, DownloadSample, SwitchReason};
use super::content::Content;
use super::error::VideoError;
use super::live::LiveSource;
use super::playout::{PlayState, Playout, Stall};
use super::request_timing::RequestTiming;
use crate::units::{Bandwidth, Time};

/// Live or on demand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Availability {
    /// Every segment available from time zero.
    OnDemand,
    /// Segments appear on the live source's clock.
    Live(LiveSource),
}

/// What the player does about the latency a stall added.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CatchUp {
    /// Play every segment; latency only grows (seed 004).
    Never,
    /// After a stall, skip to the live edge.
    JumpToLive,
}

/// Player configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct PlayerConfig {
    /// Buffer target in segments (seed 004: 1, 5 or 15). At least 1.
    pub buffer_target_segments: u32,
    /// Media needed before playback starts (default: one segment, seed 004).
    pub startup_threshold: Duration,
    /// Media needed to resume after a stall (default: one segment).
    pub rebuffer_threshold: Duration,
    pub catch_up: CatchUp,
    pub request_timing: RequestTiming,
    /// Live: how many segments behind the newest available one to start (0 = newest, seed 004 §IV).
    /// Seed 004 §V-C: with a buffer of B segments "a client cannot request the most recent segment
    /// when it joins ... but has to request an older segment to fill its buffer": B − 1 does that.
    pub live_start_behind: u64,
    /// Weight of the previous estimate in the player's throughput EWMA given to rules in
    /// [`AbrContext::throughput`] (seed 004: 0.1).
    pub ewma_alpha: f64,
}

impl PlayerConfig {
    /// Seed 004's client: one-segment buffer, start after one segment, no catch-up, requests as
    /// soon as available, newest segment first.
    pub fn seed004(segment_duration: Duration) -> PlayerConfig {
        PlayerConfig {
            buffer_target_segments: 1,
            startup_threshold: segment_duration,
            rebuffer_threshold: segment_duration,
            catch_up: CatchUp::Never,
            request_timing: RequestTiming::AsSoonAsAvailable,
            live_start_behind: 0,
            ewma_alpha: super::abr::estimator::SEED004_ALPHA,
        }
    }

    /// Buffer target as media time.
    pub fn buffer_target(&self, segment_duration: Duration) -> Duration {
        segment_duration * self.buffer_target_segments
    }

    /// Reject a configuration the player cannot run, naming the key.
    pub fn validate(&self, segment_duration: Duration) -> Result<(), VideoError> {
        let target = self.buffer_target(segment_duration);
        if self.buffer_target_segments == 0 || target < segment_duration {
            return Err(VideoError::BufferTooSmall {
                key: "client.buffer_segments".into(),
                buffer_s: target.as_secs_f64(),
                segment_s: segment_duration.as_secs_f64(),
            });
        }
        // Without playback the player fills the buffer exactly to its target (it fetches while
        // below it, whole segments), so a larger threshold would wait forever.
        if self.startup_threshold > target {
            return Err(VideoError::invalid(
                "client.startup_threshold",
                format!("{} s can never be buffered with a buffer of {} s", self.startup_threshold.as_secs_f64(), target.as_secs_f64()),
            ));
        }
        if self.rebuffer_threshold > target {
            return Err(VideoError::invalid(
                "client.rebuffer_threshold",
                format!("{} s can never be buffered with a buffer of {} s", self.rebuffer_threshold.as_secs_f64(), target.as_secs_f64()),
            ));
        }
        if !(0.0..=1.0).contains(&self.ewma_alpha) {
            return Err(VideoError::invalid("client.ewma_alpha", format!("must be in [0, 1], got {}", self.ewma_alpha)));
        }
        Ok(())
    }
}

/// What the caller should do next.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PlayerAction {
    /// Nothing to send before this time; call [`Player::next_action`] again then.
    WaitUntil(Time),
    /// Probe the sizes of `segment` (seed 004's HEAD: one HEAD per quality, pipelined on the
    /// connection, each Content-Length one size), then call [`Player::on_segment_sizes`] with the
    /// sizes of every quality, lowest first.
    ProbeSizes { segment: u64 },
    /// Send this GET now.
    Fetch(FetchRequest),
    /// A download is in flight.
    Downloading,
    /// Every segment has been fetched (or the player has not joined yet).
    Finished,
}

/// A segment request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FetchRequest {
    pub segment: u64,
    pub quality: usize,
    /// Size of the response body the player expects.
    pub bytes: u64,
    pub reason: SwitchReason,
}

/// One segment as the player fetched and played it (a row of the per-segment table).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SegmentRecord {
    pub segment: u64,
    pub quality: usize,
    pub bytes: u64,
    pub reason: SwitchReason,
    /// When the segment became available at the source (zero on demand).
    pub available: Time,
    pub requested: Time,
    pub first_byte: Option<Time>,
    pub done: Option<Time>,
    /// Bytes received so far (from [`Player::on_bytes`]; set to `bytes` when done).
    pub bytes_received: u64,
    /// When playback reached this segment: its play start, or the start of the stall it caused.
    pub needed_at: Option<Time>,
    /// When it started playing.
    pub play_start: Option<Time>,
}

impl SegmentRecord {
    /// Request to last byte.
    pub fn download_time(&self) -> Option<Duration> {
        self.done.map(|d| d.saturating_since(self.requested))
    }
    /// True if it was complete when playback needed it (`None` while unknown).
    pub fn deadline_met(&self) -> Option<bool> {
        match (self.done, self.needed_at) {
            (Some(done), Some(needed)) => Some(done <= needed),
            _ => None,
        }
    }
}

/// Per-client quality of experience, named as the literature names it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Qoe {
    /// Join → playback start.
    pub startup_time: Option<Duration>,
    pub stall_count: usize,
    pub stall_total: Duration,
    /// Seed 004 liveness of the last segment played, seconds (≤ 0 unless the source is ahead).
    pub liveness_s: Option<f64>,
    /// Seed 002 live latency at the time asked.
    pub live_latency: Option<Duration>,
    /// Mean nominal bitrate of the segments fetched.
    pub mean_bitrate: Bandwidth,
    /// Quality changes between consecutive segments.
    pub switches: usize,
    /// Body bytes of all segments fetched.
    pub bytes: u64,
    pub segments: usize,
    /// Media skipped by catch-up jumps.
    pub skipped: Duration,
}

/// A player.
pub struct Player {
    content: Content,
    availability: Availability,
    abr: Box<dyn AbrRule>,
    config: PlayerConfig,
    playout: Playout,
    estimator: SegmentEwma,
    joined_at: Option<Time>,
    next_segment: u64,
    /// Sizes probed for `next_segment`.
    probed_sizes: Option<(u64, Vec<u64>)>,
    /// A decision waiting for its ABR delay: (segment, request, not before).
    delayed: Option<(u64, FetchRequest, Time)>,
    downloading: bool,
    records: Vec<SegmentRecord>,
    /// Stall count already reported to the ABR rule.
    stalls_seen: usize,
    /// Stall count already answered by a catch-up jump.
    jumped_after_stalls: usize,
    /// A segment playback stalled on before it was even requested: (segment, stall start).
    needed_before_request: Option<(u64, Time)>,
}

impl Player {
    /// A player for `content`; fails on an invalid configuration (one line naming the key).
    pub fn new(content: Content, availability: Availability, abr: Box<dyn AbrRule>, config: PlayerConfig) -> Result<Player, VideoError> {
        config.validate(content.segment_duration())?;
        if let Availability::Live(src) = availability {
            if src.segment_duration != content.segment_duration() {
                return Err(VideoError::invalid("video.segment_duration", "live source and content disagree on the segment duration"));
            }
        }
        let playout = Playout::new(config.startup_threshold, config.rebuffer_threshold);
        let estimator = SegmentEwma::new(config.ewma_alpha);
        Ok(Player {
            content,
            availability,
            abr,
            config,
            playout,
            estimator,
            joined_at: None,
            next_segment: 0,
            probed_sizes: None,
            delayed: None,
            downloading: false,
            records: Vec::new(),
            stalls_seen: 0,
            jumped_after_stalls: 0,
            needed_before_request: None,
        })
    }

    pub fn content(&self) -> &Content {
        &self.content
    }
    pub fn config(&self) -> &PlayerConfig {
        &self.config
    }
    pub fn abr_name(&self) -> &'static str {
        self.abr.name()
    }

    /// The client arrives at `now`.
    pub fn join(&mut self, now: Time) {
        self.joined_at = Some(now);
        self.next_segment = match self.availability {
            Availability::OnDemand => 0,
            Availability::Live(src) => src.newest_available(now).map_or(0, |newest| newest.saturating_sub(self.config.live_start_behind)),
        };
        self.playout.advance(now);
    }

    /// When `segment` is (or was) available.
    pub fn available_at(&self, segment: u64) -> Time {
        match self.availability {
            Availability::OnDemand => Time::ZERO,
            Availability::Live(src) => src.available_at(segment),
        }
    }

    /// What to do at `now` (see the calling sequence in the module doc).
    pub fn next_action(&mut self, now: Time) -> PlayerAction {
        self.sync(now);
        if self.joined_at.is_none() {
            return PlayerAction::Finished;
        }
        if self.downloading {
            return PlayerAction::Downloading;
        }
        self.catch_up_if_needed(now);
        if self.next_segment >= self.content.segment_count() {
            return PlayerAction::Finished;
        }
        if let Some((segment, request, not_before)) = self.delayed {
            if segment == self.next_segment {
                if now < not_before {
                    return PlayerAction::WaitUntil(not_before);
                }
                self.delayed = None;
                return self.start_fetch(now, request);
            }
            self.delayed = None;
        }
        let ready = self.earliest_request_time(now);
        if ready > now {
            return PlayerAction::WaitUntil(ready);
        }
        let segment = self.next_segment;
        let sizes_known = self.probed_sizes.as_ref().is_some_and(|(s, _)| *s == segment);
        if self.abr.wants_segment_sizes() && !sizes_known {
            return PlayerAction::ProbeSizes { segment };
        }
        let decision = {
            let sizes = self.probed_sizes.as_ref().filter(|(s, _)| *s == segment).map(|(_, v)| v.as_slice());
            let ctx = AbrContext {
                now,
                segment,
                segments_downloaded: self.records.len() as u64,
                ladder: self.content.ladder(),
                segment_duration: self.content.segment_duration(),
                buffer_level: self.playout.buffer_level(now),
                buffer_target: self.config.buffer_target(self.content.segment_duration()),
                throughput: self.estimator.estimate(),
                last_quality: self.records.last().map(|r| r.quality),
                segment_sizes: sizes,
            };
            self.abr.decide(&ctx)
        };
        let quality = decision.quality.min(self.content.ladder().top());
        let bytes = self.content.segment_bytes(segment, quality).unwrap_or(0);
        let request = FetchRequest { segment, quality, bytes, reason: decision.reason };
        if !decision.delay.is_zero() {
            let not_before = now + decision.delay;
            self.delayed = Some((segment, request, not_before));
            return PlayerAction::WaitUntil(not_before);
        }
        self.start_fetch(now, request)
    }

    /// The sizes of `segment` in every quality arrived (HEAD responses' Content-Length).
    pub fn on_segment_sizes(&mut self, now: Time, segment: u64, sizes: &[u64]) {
        self.sync(now);
        self.probed_sizes = Some((segment, sizes.to_vec()));
    }

    /// The first byte of the current segment's response arrived.
    pub fn on_first_byte(&mut self, now: Time) {
        self.sync(now);
        if let Some(r) = self.current_mut() {
            r.first_byte.get_or_insert(now);
        }
    }

    /// `bytes` more body bytes of the current segment arrived.
    pub fn on_bytes(&mut self, now: Time, bytes: u64) {
        self.sync(now);
        if let Some(r) = self.current_mut() {
            r.first_byte.get_or_insert(now);
            r.bytes_received += bytes;
        }
    }

    /// [`Player::on_bytes`] without bringing playback up to `now`, for a caller that reports every
    /// delivered packet (the simulator's player app) and always syncs before it reads the player
    /// ([`Player::advance`] before samples and reports). The deferred sync gives the same state:
    /// advancing playback to t₁ and then to t₂ equals advancing it to t₂, and the byte count
    /// touches nothing `sync` reads. Readers that take `&self` (`qoe`, `stalls`, `play_state`)
    /// see playback as of the last sync.
    pub fn count_bytes(&mut self, now: Time, bytes: u64) {
        if let Some(r) = self.current_mut() {
            r.first_byte.get_or_insert(now);
            r.bytes_received += bytes;
        }
    }

    /// The current segment's last byte arrived at `now`; returns its record.
    pub fn on_segment_done(&mut self, now: Time) -> Option<SegmentRecord> {
        self.sync(now);
        if !self.downloading {
            return None;
        }
        self.downloading = false;
        let d = self.content.segment_duration();
        let r = self.records.last_mut()?;
        r.done = Some(now);
        r.first_byte.get_or_insert(now);
        r.bytes_received = r.bytes;
        let (segment, bytes, quality, requested) = (r.segment, r.bytes, r.quality, r.requested);
        self.estimator.on_sample(bytes, now.saturating_since(requested));
        let buffer_before = self.playout.buffer_level(now);
        self.abr.on_download(&DownloadSample { requested, done: now, bytes, quality, buffer_level: buffer_before });
        self.playout.append(now, segment, d * segment as u32, d, bytes);
        if segment + 1 >= self.content.segment_count() {
            self.playout.no_more_segments(now);
        }
        self.sync(now);
        self.records.last().copied()
    }

    /// Bring playback up to `now` (also done by every other call).
    pub fn advance(&mut self, now: Time) {
        self.sync(now);
    }

    /// Media buffered at `now`.
    pub fn buffer_level(&self, now: Time) -> Duration {
        self.playout.buffer_level(now)
    }

    /// Bytes buffered at `now`.
    pub fn buffer_bytes(&self, now: Time) -> u64 {
        self.playout.buffer_bytes(now)
    }

    pub fn play_state(&self) -> PlayState {
        self.playout.state()
    }

    pub fn stalls(&self) -> &[Stall] {
        self.playout.stalls()
    }

    pub fn segments(&self) -> &[SegmentRecord] {
        &self.records
    }

    /// Seed 002 live latency at `now`: `now − (t0 + media position)`; `None` on demand or before
    /// playback started. Ask it for the present (a time series samples as it goes): `now` earlier
    /// than the last call is answered from the current playhead.
    pub fn live_latency(&self, now: Time) -> Option<Duration> {
        let Availability::Live(src) = self.availability else {
            return None;
        };
        self.playout.started_at()?;
        // after the end, the latency is frozen at its value when the last frame played
        let at = self.playout.ended_at().map_or(now, |end| end.min(now));
        Some(at.saturating_since(src.t0 + self.playout.media_position(at)))
    }

    /// Seed 004 liveness of the last segment that started playing: availability − play start.
    pub fn liveness_s(&self) -> Option<f64> {
        let Availability::Live(_) = self.availability else {
            return None;
        };
        let &(segment, play_start) = self.playout.play_starts().last()?;
        Some(self.available_at(segment).as_secs_f64() - play_start.as_secs_f64())
    }

    /// QoE summary as of `now`.
    pub fn qoe(&self, now: Time) -> Qoe {
        let stalls = self.playout.stalls();
        let n = self.records.len();
        let mean_bps = if n == 0 {
            0
        } else {
            self.records.iter().map(|r| self.content.ladder().bitrate(r.quality).bits_per_sec).sum::<u64>() / n as u64
        };
        Qoe {
            startup_time: self.joined_at.zip(self.playout.started_at()).map(|(j, s)| s.saturating_since(j)),
            stall_count: stalls.len(),
            stall_total: stalls.iter().map(|s| s.duration(now)).sum(),
            liveness_s: self.liveness_s(),
            live_latency: self.live_latency(now),
            mean_bitrate: Bandwidth::from_bps(mean_bps),
            switches: self.records.windows(2).filter(|w| w[0].quality != w[1].quality).count(),
            bytes: self.records.iter().filter(|r| r.done.is_some()).map(|r| r.bytes).sum(),
            segments: n,
            skipped: self.playout.skipped(),
        }
    }

    /// Earliest time the next request may go out: buffer below target and the segment's slot.
    fn earliest_request_time(&self, now: Time) -> Time {
        let target = self.config.buffer_target(self.content.segment_duration());
        let level = self.playout.buffer_level(now);
        let buffer_ready = if level < target || self.config.request_timing.ignores_buffer() {
            now
        } else if self.playout.state() == PlayState::Playing {
            // the level falls 1 s per s; strictly below the target one nanosecond later
            now + (level - target) + Duration::from_nanos(1)
        } else {
            // not playing with a full buffer cannot happen (thresholds ≤ target, validate());
            // a segment duration later is a safe retry
            now + self.content.segment_duration()
        };
        let slot = match self.availability {
            Availability::OnDemand => now,
            Availability::Live(src) => {
                let previous = self.records.last().map(|r| r.requested);
                self.config.request_timing.next_request_time(
                    now,
                    src.available_at(self.next_segment),
                    previous,
                    src.t0,
                    src.segment_duration,
                )
            }
        };
        buffer_ready.max(slot)
    }

    fn start_fetch(&mut self, now: Time, request: FetchRequest) -> PlayerAction {
        self.records.push(SegmentRecord {
            segment: request.segment,
            quality: request.quality,
            bytes: request.bytes,
            reason: request.reason,
            available: self.available_at(request.segment),
            requested: now,
            first_byte: None,
            done: None,
            bytes_received: 0,
            needed_at: self.needed_before_request.take().filter(|&(k, _)| k == request.segment).map(|(_, at)| at),
            play_start: None,
        });
        self.downloading = true;
        self.next_segment = request.segment + 1;
        self.probed_sizes = None;
        PlayerAction::Fetch(request)
    }

    fn current_mut(&mut self) -> Option<&mut SegmentRecord> {
        if self.downloading {
            self.records.last_mut()
        } else {
            None
        }
    }

    fn catch_up_if_needed(&mut self, now: Time) {
        let (CatchUp::JumpToLive, Availability::Live(src)) = (self.config.catch_up, self.availability) else {
            return;
        };
        if self.playout.stalls().len() <= self.jumped_after_stalls {
            return;
        }
        if let Some(newest) = src.newest_available(now) {
            let target = newest.saturating_sub(self.config.live_start_behind);
            if target > self.next_segment {
                self.next_segment = target;
            }
        }
        self.jumped_after_stalls = self.playout.stalls().len();
    }

    /// Advance playback, tell the ABR rule about new stalls, fill in play starts and needed-at times.
    fn sync(&mut self, now: Time) {
        self.playout.advance(now);
        let stalls = self.playout.stalls();
        while self.stalls_seen < stalls.len() {
            let s = stalls[self.stalls_seen];
            self.abr.on_stall(s.start);
            // playback froze at the start of the segment it waited for (requested or not yet)
            let d_ns = self.content.segment_duration().as_nanos().max(1);
            let waited_for = (s.media_position.as_nanos() / d_ns) as u64;
            match self.records.iter_mut().rev().find(|r| r.segment == waited_for) {
                Some(r) => {
                    r.needed_at.get_or_insert(s.start);
                }
                None => self.needed_before_request = Some((waited_for, s.start)),
            }
            self.stalls_seen += 1;
        }
        for &(segment, at) in self.playout.play_starts().iter().rev() {
            let Some(r) = self.records.iter_mut().rev().find(|r| r.segment == segment) else {
                continue;
            };
            if r.play_start.is_some() {
                break;
            }
            r.play_start = Some(at);
            r.needed_at.get_or_insert(at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::video::abr::fixed::Fixed;
    use crate::video::abr::throughput::ThroughputRule;
    use crate::video::content::Ladder;

    const D: Duration = Duration::from_secs(2);

    fn ms(t: u64) -> Time {
        Time::from_millis(t)
    }

    fn live_player(segments: u64, config: PlayerConfig) -> Player {
        let content = Content::cbr(Ladder::seed004(), D, segments).unwrap();
        let live = LiveSource::new(Time::ZERO, D, segments, 5).unwrap();
        Player::new(content, Availability::Live(live), Box::new(Fixed { quality: 1 }), config).unwrap()
    }

    /// Drive the player as an app would: probes answer at once, segment `k` downloads in
    /// `download(k)`; stops when the player is finished or at `until`.
    #[track_caller]
    fn drive(p: &mut Player, join: Time, until: Time, download: impl Fn(u64) -> Duration) {
        p.join(join);
        let mut now = join;
        while now < until {
            match p.next_action(now) {
                PlayerAction::WaitUntil(t) => now = t,
                PlayerAction::ProbeSizes { segment } => {
                    let sizes = p.content().segment_sizes(segment).unwrap().to_vec();
                    p.on_segment_sizes(now, segment, &sizes);
                }
                PlayerAction::Fetch(req) => {
                    p.on_first_byte(now);
                    now += download(req.segment);
                    p.on_bytes(now, req.bytes);
                    p.on_segment_done(now).expect("a download was in flight");
                }
                PlayerAction::Downloading => panic!("drive() completes every download itself"),
                PlayerAction::Finished => break,
            }
        }
        p.advance(until);
    }

    /// Same downloads, bytes reported in 100 packets each: syncing at every packet (`on_bytes`)
    /// and counting only (`count_bytes`, syncing at the next decision) end in the same segment
    /// records, stalls and QoE — also when playback stalls in the middle of a download.
    #[test]
    fn counting_bytes_per_packet_without_syncing_ends_in_the_same_player_state() {
        let run = |sync_per_packet: bool| {
            let mut p = live_player(6, PlayerConfig::seed004(D));
            p.join(ms(2000));
            let mut now = ms(2000);
            while now < ms(30_000) {
                match p.next_action(now) {
                    PlayerAction::WaitUntil(t) => now = t,
                    PlayerAction::ProbeSizes { segment } => {
                        let sizes = p.content().segment_sizes(segment).unwrap().to_vec();
                        p.on_segment_sizes(now, segment, &sizes);
                    }
                    PlayerAction::Fetch(req) => {
                        p.on_first_byte(now);
                        // segment 2 takes 3 s: playback runs dry half-way through it
                        let step = Duration::from_millis(if req.segment == 2 { 30 } else { 4 });
                        for _ in 0..100 {
                            now += step;
                            if sync_per_packet {
                                p.on_bytes(now, req.bytes / 100);
                            } else {
                                p.count_bytes(now, req.bytes / 100);
                            }
                        }
                        p.on_segment_done(now).expect("a download was in flight");
                    }
                    PlayerAction::Downloading => unreachable!(),
                    PlayerAction::Finished => break,
                }
            }
            p.advance(ms(30_000));
            p
        };
        let (synced, counted) = (run(true), run(false));
        assert_eq!(synced.stalls().len(), 1, "the scenario must stall mid-download");
        assert_eq!(counted.stalls(), synced.stalls());
        assert_eq!(counted.segments(), synced.segments());
        assert_eq!(counted.qoe(ms(30_000)), synced.qoe(ms(30_000)));
    }

    /// Live, d = 2 s, t0 = 0, one-segment buffer, join at 2.0 s (segment 0 just available).
    /// Segment 0 downloads in 0.5 s → playback starts at 2.5 s. Segment 1 is available at 4.0 s
    /// and requested then; playback reaches it at 4.5 s (its deadline).
    /// - on time (0.3 s, done 4.3 s): no stall; segment 2 (available 6.0 s) plays at 6.5 s →
    ///   liveness 6.0 − 6.5 = −0.5 s;
    /// - late (2.0 s, done 6.0 s = deadline + 1.5 s): one stall 4.5 → 6.0 s; segment 2 plays at
    ///   8.0 s → liveness −2.0 s: exactly 1.5 s worse, and the live latency 1.5 s larger.
    #[test]
    fn a_segment_arriving_1_5_s_after_its_deadline_adds_one_stall_of_1_5_s_and_1_5_s_of_liveness() {
        let run = |late: bool, until: Time| {
            let mut p = live_player(3, PlayerConfig::seed004(D));
            drive(&mut p, ms(2000), until, |k| match k {
                0 => Duration::from_millis(500),
                1 if late => Duration::from_millis(2000),
                1 => Duration::from_millis(300),
                _ => Duration::from_millis(200),
            });
            p
        };
        let on_time = run(false, ms(20_000));
        let late = run(true, ms(20_000));

        assert_eq!(on_time.stalls().len(), 0);
        assert_eq!(on_time.liveness_s(), Some(-0.5));
        assert_eq!(late.stalls(), &[Stall { start: ms(4500), end: Some(ms(6000)), media_position: D }]);
        let q = late.qoe(ms(20_000));
        assert_eq!((q.stall_count, q.stall_total), (1, Duration::from_millis(1500)));
        assert_eq!(late.liveness_s(), Some(-2.0));
        assert_eq!(on_time.liveness_s().unwrap() - late.liveness_s().unwrap(), 1.5);
        // mid-stream at 7 s: late plays media 3.0 s (latency 4.0 s), on time 4.5 s (2.5 s)
        let at = ms(7000);
        let (late_7, on_time_7) = (run(true, at).live_latency(at).unwrap(), run(false, at).live_latency(at).unwrap());
        assert_eq!((late_7, on_time_7), (Duration::from_secs(4), Duration::from_millis(2500)));
        let seg1 = late.segments()[1];
        assert_eq!((seg1.needed_at, seg1.deadline_met()), (Some(ms(4500)), Some(false)));
        assert_eq!(on_time.segments()[1].deadline_met(), Some(true));
        assert_eq!(q.startup_time, Some(Duration::from_millis(500)));
    }

    /// On demand, buffer target 5 segments (10 s), every download 0.5 s. After segment k−1 is
    /// done at 0.5·k s (playback started at 0.5 s) the buffer holds 2k − (0.5k − 0.5) = 1.5k + 0.5 s:
    /// below 10 s up to k = 6, so segments 0–6 go back to back (segment 6 done at 3.5 s, buffer
    /// 11 s). Segment 7 waits until the buffer falls below 10 s: 14 − (t − 0.5) < 10 → t > 4.5 s.
    #[test]
    fn the_player_fetches_while_the_buffer_is_below_its_target_and_then_waits() {
        let content = Content::cbr(Ladder::seed004(), D, 20).unwrap();
        let config = PlayerConfig { buffer_target_segments: 5, ..PlayerConfig::seed004(D) };
        let mut p = Player::new(content, Availability::OnDemand, Box::new(Fixed { quality: 0 }), config).unwrap();
        drive(&mut p, Time::ZERO, ms(60_000), |_| Duration::from_millis(500));
        let requested: Vec<Time> = p.segments().iter().take(8).map(|r| r.requested).collect();
        assert_eq!(&requested[..7], &[ms(0), ms(500), ms(1000), ms(1500), ms(2000), ms(2500), ms(3000)]);
        assert_eq!(requested[7], ms(4500) + Duration::from_nanos(1));
        assert_eq!(p.qoe(ms(60_000)).stall_count, 0);
        assert_eq!(p.play_state(), PlayState::Ended);
    }

    #[test]
    fn a_distributed_client_requests_at_its_phase_after_availability() {
        let config =
            PlayerConfig { request_timing: RequestTiming::Distributed { phase: Duration::from_millis(700) }, ..PlayerConfig::seed004(D) };
        let mut p = live_player(4, config);
        drive(&mut p, ms(2100), ms(20_000), |_| Duration::from_millis(100));
        let requested: Vec<Time> = p.segments().iter().map(|r| r.requested).collect();
        // slots at 0.7 + 2n s. Join at 2.1 s: segment 0 (available 2.0 s) waits for the slot
        // 2.7 s; segments 1, 2, 3 (available 4, 6, 8 s) go at 4.7, 6.7, 8.7 s
        assert_eq!(requested, vec![ms(2700), ms(4700), ms(6700), ms(8700)]);
    }

    /// Buffer of 5 segments, joining at 10.1 s 4 segments behind (segments 0–4 exist; it starts
    /// at 0), downloads of 100 ms. Distributed (not-before slot): every segment it wants is long
    /// available, so it fetches back to back until its buffer reaches the target. Clocked: one
    /// request per period at its phase (0.1 s: slots 10.1, 12.1, 14.1 s), whatever its buffer.
    #[test]
    fn a_clocked_client_behind_the_live_edge_requests_once_per_period_whatever_its_buffer() {
        let run = |request_timing: RequestTiming| {
            let config = PlayerConfig { request_timing, buffer_target_segments: 5, live_start_behind: 4, ..PlayerConfig::seed004(D) };
            let mut p = live_player(20, config);
            drive(&mut p, ms(10_100), ms(15_000), |_| Duration::from_millis(100));
            p.segments().iter().map(|r| r.requested).take(3).collect::<Vec<_>>()
        };
        let phase = Duration::from_millis(100);
        assert_eq!(run(RequestTiming::Distributed { phase }), vec![ms(10_100), ms(10_200), ms(10_300)]);
        assert_eq!(run(RequestTiming::Clocked { phase }), vec![ms(10_100), ms(12_100), ms(14_100)]);
    }

    /// Segment 1 takes 7 s (requested 4.0 s, done 11.0 s; stall 4.5 → 11.0 s). At 11.0 s the
    /// newest segment is 4 (available 10.0 s). Never: plays 2, 3, … and stays 6.5 s more behind:
    /// latency at 13.5 s = 13.5 − 4.5 (media) = 9.0 s. JumpToLive: fetches 4 next, plays segment 1
    /// from 11 to 13 s, jumps to media 8 s: latency at 13.5 s = 13.5 − 8.5 = 5.0 s, 4 s skipped.
    #[test]
    fn catching_up_after_a_stall_jumps_to_the_live_edge_only_when_configured() {
        let run = |catch_up: CatchUp| {
            let mut p = live_player(8, PlayerConfig { catch_up, ..PlayerConfig::seed004(D) });
            drive(&mut p, ms(2000), ms(13_500), |k| if k == 1 { Duration::from_secs(7) } else { Duration::from_millis(200) });
            p
        };
        let never = run(CatchUp::Never);
        let jump = run(CatchUp::JumpToLive);
        assert_eq!(never.segments().iter().map(|r| r.segment).take(3).collect::<Vec<_>>(), vec![0, 1, 2]);
        assert_eq!(jump.segments().iter().map(|r| r.segment).take(3).collect::<Vec<_>>(), vec![0, 1, 4]);
        assert_eq!(never.live_latency(ms(13_500)), Some(Duration::from_secs(9)));
        assert_eq!(jump.live_latency(ms(13_500)), Some(Duration::from_secs(5)));
        assert_eq!(jump.qoe(ms(13_500)).skipped, Duration::from_secs(4));
        assert_eq!((never.stalls().len(), jump.stalls().len()), (1, 1));
    }

    #[test]
    fn seed004_client_probes_sizes_then_fetches_the_first_segment_at_the_lowest_quality() {
        let content = Content::cbr(Ladder::seed004(), D, 10).unwrap();
        let live = LiveSource::new(Time::ZERO, D, 10, 5).unwrap();
        let mut p = Player::new(content, Availability::Live(live), Box::new(ThroughputRule::seed004()), PlayerConfig::seed004(D)).unwrap();
        p.join(ms(3000));
        assert_eq!(p.next_action(ms(3000)), PlayerAction::ProbeSizes { segment: 0 });
        p.on_segment_sizes(ms(3050), 0, &[62_500, 125_000, 187_500, 250_000, 375_000, 750_000]);
        let PlayerAction::Fetch(req) = p.next_action(ms(3050)) else { panic!("expected a fetch") };
        assert_eq!((req.segment, req.quality, req.bytes), (0, 0, 62_500));
        assert_eq!(p.next_action(ms(3060)), PlayerAction::Downloading);
    }

    #[test]
    fn a_buffer_smaller_than_one_segment_is_one_line_naming_the_key() {
        let content = Content::cbr(Ladder::seed004(), D, 10).unwrap();
        let config = PlayerConfig { buffer_target_segments: 0, ..PlayerConfig::seed004(D) };
        let err = Player::new(content, Availability::OnDemand, Box::new(Fixed { quality: 0 }), config).err().unwrap();
        assert_eq!(err.to_string(), "client.buffer_segments: buffer of 0 s is smaller than one segment (2 s)");
    }

    /// A test double that asks for a fixed delay before every request and counts its calls.
    struct DelayingRule {
        delay: Duration,
        decisions: u32,
    }

    impl AbrRule for DelayingRule {
        fn name(&self) -> &'static str {
            "delaying"
        }
        fn decide(&mut self, _ctx: &AbrContext) -> crate::video::abr::SwitchRequest {
            self.decisions += 1;
            crate::video::abr::SwitchRequest { quality: 2, reason: SwitchReason::Fixed, delay: self.delay }
        }
    }

    #[test]
    fn an_abr_delay_postpones_the_request_and_keeps_the_decision() {
        let content = Content::cbr(Ladder::seed004(), D, 3).unwrap();
        let rule = DelayingRule { delay: Duration::from_millis(300), decisions: 0 };
        let mut p = Player::new(content, Availability::OnDemand, Box::new(rule), PlayerConfig::seed004(D)).unwrap();
        p.join(ms(0));
        assert_eq!(p.next_action(ms(0)), PlayerAction::WaitUntil(ms(300)));
        assert_eq!(p.next_action(ms(100)), PlayerAction::WaitUntil(ms(300)));
        let PlayerAction::Fetch(req) = p.next_action(ms(300)) else { panic!("expected the delayed fetch") };
        assert_eq!((req.segment, req.quality), (0, 2));
    }

    /// A 3 s ABR delay before every request, downloads of 0.1 s, live d = 2 s, join at 2.0 s:
    /// segment 0 goes at 5.0 s, done 5.1 s, playback starts. Segment 1 is decided at 5.1 s + 1 ns
    /// (buffer below 2 s), delayed to 8.1 s + 1 ns, but playback needs it at 7.1 s: a stall that
    /// starts before the request exists, and the segment's deadline is still 7.1 s (missed).
    #[test]
    fn a_stall_before_the_request_is_sent_still_counts_against_that_segment() {
        let content = Content::cbr(Ladder::seed004(), D, 3).unwrap();
        let live = LiveSource::new(Time::ZERO, D, 3, 5).unwrap();
        let rule = DelayingRule { delay: Duration::from_secs(3), decisions: 0 };
        let mut p = Player::new(content, Availability::Live(live), Box::new(rule), PlayerConfig::seed004(D)).unwrap();
        drive(&mut p, ms(2000), ms(30_000), |_| Duration::from_millis(100));
        let seg1 = p.segments()[1];
        assert_eq!(seg1.requested, ms(8100) + Duration::from_nanos(1));
        assert_eq!((seg1.needed_at, seg1.deadline_met()), (Some(ms(7100)), Some(false)));
        assert_eq!(p.stalls()[0].start, ms(7100));
    }

    /// Invariants on random download times (seeded): with no catch-up, the live latency at the end
    /// equals the latency at playback start plus the total stall time, to the nanosecond; the
    /// buffer never exceeds target + one segment; same seed, same run.
    #[test]
    fn latency_grows_by_exactly_the_stall_time_on_random_download_sequences() {
        use crate::video::abr::throughput::ThroughputRule;
        use crate::video::vbr::VbrModel;
        use rand::{Rng, SeedableRng};

        let run = |seed: u64| {
            let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
            let content = Content::vbr(Ladder::seed004(), D, 60, &VbrModel::default(), &mut rng).unwrap();
            let live = LiveSource::new(ms(500), D, 60, 5).unwrap();
            let config = PlayerConfig { buffer_target_segments: 3, ..PlayerConfig::seed004(D) };
            let mut p = Player::new(content, Availability::Live(live), Box::new(ThroughputRule::seed004()), config).unwrap();
            let times: Vec<Duration> = (0..60).map(|_| Duration::from_millis(rng.gen_range(50..4000))).collect();
            let mut max_buffer = Duration::ZERO;
            p.join(ms(3100));
            let mut now = ms(3100);
            loop {
                max_buffer = max_buffer.max(p.buffer_level(now));
                match p.next_action(now) {
                    PlayerAction::WaitUntil(t) => now = t,
                    PlayerAction::ProbeSizes { segment } => {
                        let sizes = p.content().segment_sizes(segment).unwrap().to_vec();
                        p.on_segment_sizes(now, segment, &sizes);
                    }
                    PlayerAction::Fetch(req) => {
                        now += times[req.segment as usize];
                        p.on_segment_done(now);
                        max_buffer = max_buffer.max(p.buffer_level(now));
                    }
                    PlayerAction::Downloading => unreachable!(),
                    PlayerAction::Finished => break,
                }
            }
            p.advance(now + Duration::from_secs(300));
            (p, max_buffer)
        };
        let (p, max_buffer) = run(11);
        let end = ms(1_000_000);
        let q = p.qoe(end);
        assert!(q.stall_count > 0, "the script should stall at least once");
        let first = p.segments()[0];
        let start_latency = first.play_start.unwrap().saturating_since(ms(500) + D * first.segment as u32);
        assert_eq!(q.live_latency.unwrap(), start_latency + q.stall_total);
        assert!(max_buffer <= D * 4, "buffer {max_buffer:?}");
        let (again, _) = run(11);
        assert_eq!(format!("{:?}", again.segments()), format!("{:?}", p.segments()));
        let (other, _) = run(12);
        assert_ne!(format!("{:?}", other.segments()), format!("{:?}", p.segments()));
    }

    #[test]
    fn a_startup_threshold_above_the_buffer_target_is_rejected_by_key() {
        let content = Content::cbr(Ladder::seed004(), D, 10).unwrap();
        let config = PlayerConfig { startup_threshold: D * 2, ..PlayerConfig::seed004(D) };
        let err = Player::new(content, Availability::OnDemand, Box::new(Fixed { quality: 0 }), config).err().unwrap();
        assert_eq!(err.to_string(), "client.startup_threshold: 4 s can never be buffered with a buffer of 2 s");
    }
}
