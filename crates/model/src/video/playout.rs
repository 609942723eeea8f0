//! The playout buffer and playback clock of a segmented player: what is buffered (media seconds
//! and bytes), where the playhead is, when playback starts, and every stall (start, end).
//!
//! Model (seed 004 §IV, seed 002 §V-B, dash.js/hls.js behaviour at segment granularity):
//! - a segment is playable once it has arrived completely (seed 004 plays whole segments; a
//!   player's media source accepts whole fragments);
//! - playback starts when the buffer holds `startup_threshold` of media (seed 004: the first
//!   segment; the startup time is "the time needed to receive the first segment");
//! - media plays at 1 s per s; when the playhead reaches the end of the buffer while more segments
//!   are coming, a stall starts (a segment that arrives at that very instant continues playback
//!   without one: no zero-length stalls); it ends when the buffer holds `rebuffer_threshold` again (or the
//!   last segment arrived). Reaching the end after the last segment ends playback, not a stall;
//! - the playhead jumps over media the player chose to skip (catching up with the live edge), which
//!   is not a stall.
//!
//! Stalls are found lazily: [`Playout::advance`] replays the clock from the last update to `now`,
//! so a caller that only calls on arrivals still gets exact stall start times.
//!
//! Units: media positions are `Duration`s from the start of the stream (segment k starts at k·d),
//! wall times are [`Time`].

use std::collections::VecDeque;
use std::time::Duration;

use crate::units::Time;

/// Where playback is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlayState {
    /// Waiting for the startup threshold.
    Startup,
    Playing,
    /// The buffer ran dry with more media to come.
    Stalled,
    /// The last segment has been played.
    Ended,
}

/// One interruption of playback after it started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stall {
    pub start: Time,
    /// `None` while the stall lasts.
    pub end: Option<Time>,
    /// Media position at which playback froze.
    pub media_position: Duration,
}

impl Stall {
    /// Duration, counting an open stall up to `now`.
    pub fn duration(&self, now: Time) -> Duration {
        self.end.unwrap_or(now).saturating_since(self.start)
    }
}

/// A downloaded segment waiting in (or being played out of) the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct BufferedSegment {
    segment: u64,
    media_start: Duration,
    media_end: Duration,
    bytes: u64,
}

/// Playout buffer and playback clock.
#[derive(Clone, Debug)]
pub struct Playout {
    startup_threshold: Duration,
    rebuffer_threshold: Duration,
    queue: VecDeque<BufferedSegment>,
    /// Media position of the playhead at `last_update`.
    playhead: Duration,
    last_update: Time,
    state: PlayState,
    /// When playback first started.
    started_at: Option<Time>,
    /// When playback ended (the last segment played out).
    ended_at: Option<Time>,
    stalls: Vec<Stall>,
    /// (segment, wall time its first frame was shown).
    play_starts: Vec<(u64, Time)>,
    /// Media skipped by jumps (catch-up to live).
    skipped: Duration,
    /// False once the caller said no more segments will be appended.
    more_to_come: bool,
}

impl Playout {
    pub fn new(startup_threshold: Duration, rebuffer_threshold: Duration) -> Playout {
        Playout {
            startup_threshold,
            rebuffer_threshold,
            queue: VecDeque::new(),
            playhead: Duration::ZERO,
            last_update: Time::ZERO,
            state: PlayState::Startup,
            started_at: None,
            ended_at: None,
            stalls: Vec::new(),
            play_starts: Vec::new(),
            skipped: Duration::ZERO,
            more_to_come: true,
        }
    }

    pub fn state(&self) -> PlayState {
        self.state
    }
    pub fn started_at(&self) -> Option<Time> {
        self.started_at
    }
    /// When the last segment finished playing.
    pub fn ended_at(&self) -> Option<Time> {
        self.ended_at
    }
    pub fn stalls(&self) -> &[Stall] {
        &self.stalls
    }
    /// (segment, wall time its playback started), in playback order.
    pub fn play_starts(&self) -> &[(u64, Time)] {
        &self.play_starts
    }
    /// Media skipped by catch-up jumps.
    pub fn skipped(&self) -> Duration {
        self.skipped
    }

    /// Media position of the playhead at `now` (projected without changing state).
    pub fn media_position(&self, now: Time) -> Duration {
        if self.state != PlayState::Playing {
            return self.playhead;
        }
        let end = self.contiguous_end();
        (self.playhead + now.saturating_since(self.last_update)).min(end)
    }

    /// Media buffered ahead of the playhead at `now` (projected).
    pub fn buffer_level(&self, now: Time) -> Duration {
        let pos = self.media_position(now);
        self.queue.iter().map(|s| s.media_end.saturating_sub(s.media_start.max(pos))).sum()
    }

    /// Bytes buffered ahead of the playhead at `now`; a partly played segment counts pro rata.
    pub fn buffer_bytes(&self, now: Time) -> u64 {
        let pos = self.media_position(now);
        self.queue
            .iter()
            .map(|s| {
                let len = (s.media_end - s.media_start).as_nanos();
                let left = s.media_end.saturating_sub(s.media_start.max(pos)).as_nanos();
                (s.bytes as u128 * left).checked_div(len).unwrap_or(0) as u64
            })
            .sum()
    }

    /// Tell the playout that nothing more will be appended (the last segment is in or the player
    /// gave up); reaching the end of the buffer then ends playback instead of stalling.
    pub fn no_more_segments(&mut self, now: Time) {
        self.advance(now);
        self.more_to_come = false;
        if self.state == PlayState::Stalled {
            self.close_stall(now);
            self.state = PlayState::Ended;
            self.ended_at = Some(now);
        } else if self.state == PlayState::Startup {
            self.maybe_start(now);
        }
    }

    /// Replay the playback clock up to `now`: move the playhead, record segment play starts, start
    /// a stall where the buffer ran dry.
    pub fn advance(&mut self, now: Time) {
        while self.state == PlayState::Playing && self.last_update < now {
            self.jump_gap();
            let remaining = self.contiguous_end().saturating_sub(self.playhead);
            let dt = now.saturating_since(self.last_update);
            // Reaching the end of the buffer exactly at `now` is not yet a stall: a segment
            // appended at this same instant continues playback seamlessly. The stall, if any,
            // is recorded (from this instant) by the next advance past it.
            if dt <= remaining {
                self.move_playhead(dt);
                break;
            }
            self.move_playhead(remaining);
            if self.jump_gap() {
                continue;
            }
            if self.more_to_come {
                self.state = PlayState::Stalled;
                self.stalls.push(Stall { start: self.last_update, end: None, media_position: self.playhead });
            } else {
                self.state = PlayState::Ended;
                self.ended_at = Some(self.last_update);
            }
        }
        if self.state != PlayState::Playing && self.last_update < now {
            self.last_update = now;
        }
    }

    /// A segment arrived completely at `now`. Call [`Playout::advance`]`(now)` first (the player
    /// does) so that a stall that began before the arrival is on record.
    pub fn append(&mut self, now: Time, segment: u64, media_start: Duration, media_duration: Duration, bytes: u64) {
        self.advance(now);
        if self.queue.is_empty() && self.started_at.is_none() {
            self.playhead = media_start;
        }
        self.queue.push_back(BufferedSegment { segment, media_start, media_end: media_start + media_duration, bytes });
        match self.state {
            PlayState::Startup => self.maybe_start(now),
            PlayState::Stalled => {
                self.jump_gap();
                if self.buffer_level(now) >= self.rebuffer_threshold || !self.more_to_come {
                    self.close_stall(now);
                    self.state = PlayState::Playing;
                    self.last_update = now;
                    self.mark_play_starts(now);
                }
            }
            // Arriving at the instant the playhead reached it: it starts playing now.
            PlayState::Playing => self.mark_play_starts(now),
            PlayState::Ended => {}
        }
    }

    fn maybe_start(&mut self, now: Time) {
        let level = self.buffer_level(now);
        if !self.queue.is_empty() && (level >= self.startup_threshold || !self.more_to_come) {
            self.state = PlayState::Playing;
            self.started_at = Some(now);
            self.last_update = now;
            self.mark_play_starts(now);
        }
    }

    fn close_stall(&mut self, now: Time) {
        if let Some(s) = self.stalls.last_mut() {
            if s.end.is_none() {
                s.end = Some(now);
            }
        }
    }

    /// End of the buffered media that is contiguous with the playhead.
    fn contiguous_end(&self) -> Duration {
        let mut end = self.playhead;
        for s in &self.queue {
            if s.media_start > end {
                break;
            }
            end = end.max(s.media_end);
        }
        end
    }

    /// If the playhead sits at a hole before the next buffered segment (media skipped to catch
    /// up), jump over it. Returns true if it jumped.
    fn jump_gap(&mut self) -> bool {
        self.drop_played();
        match self.queue.front() {
            Some(front) if front.media_start > self.playhead => {
                self.skipped += front.media_start - self.playhead;
                self.playhead = front.media_start;
                let t = self.last_update;
                self.mark_play_starts(t);
                true
            }
            _ => false,
        }
    }

    fn move_playhead(&mut self, dt: Duration) {
        let from = self.playhead;
        let t_from = self.last_update;
        self.playhead += dt;
        self.last_update += dt;
        let starting: Vec<(u64, Time)> = self
            .queue
            .iter()
            .filter(|s| s.media_start > from && s.media_start <= self.playhead)
            .map(|s| (s.segment, t_from + (s.media_start - from)))
            .collect();
        for (segment, at) in starting {
            self.record_play_start(segment, at);
        }
        self.drop_played();
    }

    /// Record play start for segments that begin exactly at the playhead (start or resume).
    fn mark_play_starts(&mut self, now: Time) {
        let at_playhead = self.queue.iter().find(|s| s.media_start == self.playhead).map(|s| s.segment);
        if let Some(segment) = at_playhead {
            self.record_play_start(segment, now);
        }
    }

    /// Segments play in increasing order, so a segment already recorded is the last one recorded.
    fn record_play_start(&mut self, segment: u64, at: Time) {
        if self.play_starts.last().is_none_or(|&(k, _)| k < segment) {
            self.play_starts.push((segment, at));
        }
    }

    fn drop_played(&mut self) {
        while self.queue.front().is_some_and(|s| s.media_end <= self.playhead) {
            self.queue.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: Duration = Duration::from_secs(2);

    fn ms(t: u64) -> Time {
        Time::from_millis(t)
    }

    #[test]
    fn playback_starts_at_the_threshold_and_drains_one_second_per_second() {
        let mut p = Playout::new(D, D);
        p.append(ms(500), 0, Duration::ZERO, D, 1000);
        assert_eq!((p.state(), p.started_at()), (PlayState::Playing, Some(ms(500))));
        assert_eq!(p.buffer_level(ms(1000)), Duration::from_millis(1500));
        assert_eq!(p.buffer_bytes(ms(1000)), 750);
    }

    #[test]
    fn a_late_segment_makes_one_stall_from_buffer_empty_to_its_arrival() {
        let mut p = Playout::new(D, D);
        p.append(ms(0), 0, Duration::ZERO, D, 1);
        p.append(ms(3500), 1, D, D, 1); // buffer empty at 2.0 s, arrival 3.5 s
        assert_eq!(p.stalls(), &[Stall { start: ms(2000), end: Some(ms(3500)), media_position: D }]);
        assert_eq!(p.play_starts(), &[(0, ms(0)), (1, ms(3500))]);
    }

    #[test]
    fn a_segment_arriving_at_the_instant_the_buffer_empties_causes_no_stall() {
        // A one-segment buffer: segment 1 lands exactly when segment 0 has played out. Playback
        // never stops, so there is no stall (not even one of zero length); the player's own
        // wake-up at the empty instant (advance first, then append) must not make one either.
        let mut p = Playout::new(D, D);
        p.append(ms(0), 0, Duration::ZERO, D, 1);
        p.advance(ms(2000));
        p.append(ms(2000), 1, D, D, 1);
        assert_eq!((p.state(), p.stalls().len()), (PlayState::Playing, 0));
        assert_eq!(p.play_starts(), &[(0, ms(0)), (1, ms(2000))]);
        // One nanosecond later is a real stall, from the instant the buffer ran dry.
        p.append(ms(4000) + Duration::from_nanos(1), 2, D * 2, D, 1);
        assert_eq!(p.stalls(), &[Stall { start: ms(4000), end: Some(ms(4000) + Duration::from_nanos(1)), media_position: D * 2 }]);
    }

    #[test]
    fn running_out_after_the_last_segment_ends_playback_without_a_stall() {
        let mut p = Playout::new(D, D);
        p.append(ms(0), 0, Duration::ZERO, D, 1);
        p.no_more_segments(ms(100));
        p.advance(ms(5000));
        assert_eq!((p.state(), p.stalls().len()), (PlayState::Ended, 0));
    }

    #[test]
    fn skipped_media_is_jumped_over_not_stalled_on() {
        let mut p = Playout::new(D, D);
        p.append(ms(0), 0, Duration::ZERO, D, 1);
        p.append(ms(1000), 3, D * 3, D, 1); // segments 1 and 2 skipped
        p.advance(ms(3000));
        assert_eq!(p.stalls().len(), 0);
        assert_eq!(p.skipped(), D * 2);
        assert_eq!(p.play_starts(), &[(0, ms(0)), (3, ms(2000))]);
        assert_eq!(p.media_position(ms(3000)), D * 3 + Duration::from_secs(1));
    }
}
