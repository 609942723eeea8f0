//! The client of a progressive download: sends one GET, reads the response head, and plays the
//! body as it is read (seed 003 §5.4's browser player; seed 001 §VI's VLC).
//!
//! Playback is the model's, not a new one:
//! - [`Playback::Buffer`]: the segmented players' [`Playout`] (buffer in media seconds, startup
//!   and rebuffer thresholds, stalls), fed one `chunk` of media at a time as its last byte is read;
//!   a browser's media element plays data as it is appended, so `chunk` is small (default 1 s).
//!   Rebuffer events are the playout's stalls (§5.4: "the video player stops playing video until
//!   it receives enough packets").
//! - [`Playback::Frames`]: [`FramePlayer`], frame decode deadlines from playback start, picture
//!   discards and underflows (seed 001).
//!
//! Both take "body bytes read at t", so any delivery mode of the server can feed either.
//!
//! Reading: at once by default (the flow's reader). With `progressive.read_ahead` (frame player
//! only) the client is VLC with a bounded playout buffer: once playback has started it reads only
//! up to the end of the frames due within `read_ahead` of the playout clock (frame deadlines from
//! the start, `start + i/fps`: the decoder drains the buffer at the presentation clock), so a full
//! buffer stops reads, the receive buffer fills and TCP's window closes — seed 001's "frames whose
//! playout time is in the future may clog the playout buffer". Before playback starts it reads
//! at once (the network caching fills). Blocked with data waiting, it wakes at the next frame
//! deadline, when the buffer has drained by one frame.

use std::sync::Arc;
use std::time::Duration;

use tcpvideo_model::video::frame_player::{FramePlayer, FramePlayerConfig};
use tcpvideo_model::video::playout::Playout;
use tcpvideo_model::video::{Content, PlayState};
use tcpvideo_model::Time;

use super::http;
use super::progressive::{PlaybackDef, ProgressiveDef, FILE_PATH};
use super::reader::ReadOutcome;
use crate::payload::{ChunkData, SharedPayloads};
use crate::tcp::TcpEndpoint;

/// The buffer player: the playout plus where each chunk of the file ends.
#[derive(Clone, Debug)]
pub struct ChunkedPlayout {
    pub playout: Playout,
    chunk: Duration,
    /// Cumulative end offset (body bytes) of each chunk.
    chunk_ends: Vec<u64>,
    next_chunk: usize,
}

/// How the client plays the body.
#[derive(Clone, Debug)]
pub enum Playback {
    Buffer(ChunkedPlayout),
    Frames(FramePlayer),
}

impl Playback {
    fn new(def: &ProgressiveDef, content: &Content) -> Playback {
        match def.playback {
            PlaybackDef::Buffer { startup_threshold, rebuffer_threshold } => {
                let mut end = 0;
                let chunk_ends = (0..content.segment_count())
                    .map(|k| {
                        end += content.segment_bytes(k, 0).unwrap_or(0);
                        end
                    })
                    .collect();
                Playback::Buffer(ChunkedPlayout {
                    playout: Playout::new(startup_threshold, rebuffer_threshold),
                    chunk: def.chunk,
                    chunk_ends,
                    next_chunk: 0,
                })
            }
            PlaybackDef::Frames { startup_threshold } => Playback::Frames(
                FramePlayer::new(
                    &content.progressive_frames(0),
                    content.frame_rate(),
                    FramePlayerConfig { startup_threshold, ..FramePlayerConfig::default() },
                )
                .expect("frame rate of CBR content is positive"),
            ),
        }
    }

    /// `received` body bytes in total have been read by `now` (`n` of them just now).
    fn on_body(&mut self, now: Time, n: u64, received: u64) {
        match self {
            Playback::Frames(f) => f.on_bytes(now, n),
            Playback::Buffer(b) => {
                while b.next_chunk < b.chunk_ends.len() && b.chunk_ends[b.next_chunk] <= received {
                    let k = b.next_chunk;
                    let bytes = b.chunk_ends[k] - if k == 0 { 0 } else { b.chunk_ends[k - 1] };
                    b.playout.append(now, k as u64, b.chunk * k as u32, b.chunk, bytes);
                    b.next_chunk += 1;
                }
                if b.next_chunk == b.chunk_ends.len() {
                    b.playout.no_more_segments(now);
                }
            }
        }
    }

    /// When playback started.
    pub fn started_at(&self) -> Option<Time> {
        match self {
            Playback::Buffer(b) => b.playout.started_at(),
            Playback::Frames(f) => f.started_at(),
        }
    }

    /// Rebuffering events by `now` (buffer stalls, or frame underflows) and their total time.
    pub fn rebuffers(&mut self, now: Time) -> (u64, Duration) {
        match self {
            Playback::Buffer(b) => {
                b.playout.advance(now);
                let s = b.playout.stalls();
                (s.len() as u64, s.iter().map(|x| x.duration(now)).sum())
            }
            Playback::Frames(f) => {
                let u = f.underflows();
                (u.len() as u64, u.iter().map(|x| x.end.unwrap_or(now).saturating_since(x.start)).sum())
            }
        }
    }

    /// Media buffered ahead of the playhead (buffer player only).
    pub fn buffer_level(&self, now: Time) -> Option<Duration> {
        match self {
            Playback::Buffer(b) => Some(b.playout.buffer_level(now)),
            Playback::Frames(_) => None,
        }
    }

    /// 0 startup, 1 playing, 2 stalled, 3 ended (the `video_buffer` table's codes).
    pub fn state_code(&self) -> u8 {
        match self {
            Playback::Buffer(b) => match b.playout.state() {
                PlayState::Startup => 0,
                PlayState::Playing => 1,
                PlayState::Stalled => 2,
                PlayState::Ended => 3,
            },
            Playback::Frames(f) => u8::from(f.started_at().is_some()),
        }
    }
}

/// The client side of one progressive connection.
#[derive(Clone, Debug)]
pub struct ProgressiveClient {
    pub playback: Playback,
    /// Length of the request head (the server reads this many bytes before answering).
    pub request_len: u64,
    unsent: u64,
    /// Response bytes read (head + body).
    read: u64,
    /// Head length, known to the client from the response it parses.
    head_len: u64,
    pub body_bytes: u64,
    pub first_byte_at: Option<Time>,
    pub body_done_at: Option<Time>,
    /// Bounded reading (`read_ahead`): the bound, each frame's end offset in the body, the frame period.
    read_ahead: Option<(Duration, Vec<u64>, Duration)>,
}

impl ProgressiveClient {
    pub fn new(def: &ProgressiveDef, content: &Content, head_len: u64) -> ProgressiveClient {
        let request_len = http::request_head("GET", FILE_PATH).len() as u64;
        ProgressiveClient {
            playback: Playback::new(def, content),
            request_len,
            unsent: 0,
            read: 0,
            head_len,
            body_bytes: content_bytes(content),
            first_byte_at: None,
            body_done_at: None,
            read_ahead: def.read_ahead.map(|r| {
                let mut end = 0;
                let ends = content
                    .progressive_frames(0)
                    .iter()
                    .map(|s| {
                        end += s;
                        end
                    })
                    .collect();
                (r, ends, Duration::from_nanos(1_000_000_000 / content.frame_rate().max(1) as u64))
            }),
        }
    }

    /// Whether this client reads by its player's buffer (`read_ahead`) instead of the flow's reader.
    pub fn reads_by_player(&self) -> bool {
        self.read_ahead.is_some()
    }

    /// Response bytes the player's buffer admits by `now` (None: no bound yet) and, when that is
    /// less than the whole response, the next frame deadline (the buffer drains by a frame).
    fn read_bound(&self, now: Time) -> Option<(u64, Option<Time>)> {
        let (ahead, ends, period) = self.read_ahead.as_ref()?;
        let start = self.playback.started_at()?;
        let clock = now.saturating_since(start);
        // frames whose deadline is within `ahead` of the playout clock: ceil((clock + ahead)/period)
        let due = (clock + *ahead).as_nanos().div_ceil(period.as_nanos().max(1)) as usize;
        if due >= ends.len() {
            return Some((u64::MAX, None));
        }
        let passed = (clock.as_nanos() / period.as_nanos().max(1)) as u32;
        Some((self.head_len + ends[due.max(1) - 1], Some(start + *period * (passed + 1))))
    }

    /// Read what the playout buffer admits (with `read_ahead`); the caller feeds it to `on_read`.
    pub fn read_by_player(&self, now: Time, ep: &mut TcpEndpoint) -> (u64, ReadOutcome) {
        let avail = ep.readable_bytes();
        if avail == 0 {
            return (0, ReadOutcome::Idle);
        }
        let Some((bound, wake)) = self.read_bound(now) else { return (ep.recv(avail), ReadOutcome::Idle) };
        let room = bound.saturating_sub(self.read);
        let got = if room > 0 { ep.recv(room.min(avail)) } else { 0 };
        match wake {
            Some(t) if ep.readable_bytes() > 0 => (got, ReadOutcome::WakeAt(t)),
            _ => (got, ReadOutcome::Idle),
        }
    }

    /// Connected: write the GET.
    pub fn on_connected(&mut self, conn: u32, book: Option<&SharedPayloads>, ep: &mut TcpEndpoint) -> bool {
        let text = http::request_head("GET", FILE_PATH);
        if let Some(b) = book {
            b.lock().expect("payload book").append(conn, 0, 0, self.request_len, ChunkData::Text(Arc::from(text.into_bytes())));
        }
        self.unsent = self.request_len;
        self.push(ep)
    }

    /// Hand unsent request bytes to the socket (also on Writable).
    pub fn push(&mut self, ep: &mut TcpEndpoint) -> bool {
        if self.unsent == 0 {
            return false;
        }
        let n = ep.send(self.unsent);
        self.unsent -= n;
        n > 0
    }

    /// The application read `n` response bytes at `now`.
    pub fn on_read(&mut self, now: Time, n: u64) {
        if n == 0 {
            return;
        }
        self.first_byte_at.get_or_insert(now);
        let body_before = self.read.saturating_sub(self.head_len);
        self.read += n;
        let body_now = self.read.saturating_sub(self.head_len).min(self.body_bytes);
        if body_now > body_before {
            self.playback.on_body(now, body_now - body_before, body_now);
        }
        if body_now >= self.body_bytes && self.body_done_at.is_none() {
            self.body_done_at = Some(now);
        }
    }
}

fn content_bytes(c: &Content) -> u64 {
    (0..c.segment_count()).filter_map(|k| c.segment_bytes(k, 0)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::progressive::progressive_of;

    fn client(toml_text: &str) -> ProgressiveClient {
        let spec = toml::from_str(toml_text).unwrap();
        let def = progressive_of(Some(&spec), "p").unwrap();
        ProgressiveClient::new(&def, &def.content(), 100)
    }

    #[test]
    fn playback_starts_at_the_threshold_and_a_late_chunk_is_one_rebuffer() {
        // 1 Mbit/s, 1 s chunks of 125 000 bytes; startup after 2 s of media.
        let mut c = client("rate = \"1Mbps\"\nmedia = \"10s\"");
        c.on_read(Time::from_millis(100), 100 + 125_000);
        assert_eq!(c.playback.started_at(), None);
        c.on_read(Time::from_millis(200), 125_000);
        assert_eq!(c.playback.started_at(), Some(Time::from_millis(200)));
        // Chunk 2 only at 5.2 s: the buffer ran dry at 2.2 s; playback resumes when 2 s are buffered.
        c.on_read(Time::from_millis(5200), 250_000);
        let (n, total) = c.playback.rebuffers(Time::from_millis(5200));
        assert_eq!(n, 1);
        assert_eq!(total, Duration::from_secs(3));
    }

    #[test]
    fn a_bounded_reader_admits_the_frames_due_within_read_ahead_of_the_playout_clock() {
        // 1 Mbit/s, 25 fps: 1 s = 25 frames = 125 000 bytes; head 100 bytes; read_ahead 2 s.
        let mut c = client("rate = \"1Mbps\"\nmedia = \"10s\"\nplayback = \"frames\"\nread_ahead = \"2s\"");
        assert!(c.reads_by_player());
        assert_eq!(c.read_bound(Time::ZERO), None, "no bound before playback starts");
        // 1 s of media: playback starts at 0
        c.on_read(Time::ZERO, 100 + 125_000);
        // at 0: frames due by 2 s = 50 frames = 250 000 bytes; blocked until the next deadline (40 ms)
        assert_eq!(c.read_bound(Time::ZERO), Some((100 + 250_000, Some(Time::from_millis(40)))));
        // at 1.01 s: frames due by 3.01 s = ceil(75.25) = 76 frames: three chunks and the fourth's
        // I-frame (125 000 − 24·⌊125 000/29⌋ = 21 560 bytes); next deadline 1.04 s
        assert_eq!(c.read_bound(Time::from_millis(1010)), Some((100 + 375_000 + 21_560, Some(Time::from_millis(1040)))));
        // at 8 s every frame is due within 2 s: no bound left
        assert_eq!(c.read_bound(Time::from_secs(8)), Some((u64::MAX, None)));
    }

    #[test]
    fn a_bounded_reader_holds_at_most_its_playout_buffer_in_bytes_beyond_the_frames_already_due() {
        // Seed 001's POB is bytes (448 packets of 1600 B); the bound is media time. At a CBR rate
        // they are the same buffer: whatever the clock, the body read beyond the frames whose
        // deadline has passed (what the player holds, decoded-but-not-shown plus unread) is at most
        // read_ahead × rate plus one frame's rounding (an I-frame, the largest). 5.24 Mbit/s, POB
        // 1.0944 s = 716 800 bytes.
        let mut c = client(
            "rate = \"5.24Mbps\"\nmedia = \"20s\"\nplayback = \"frames\"\nstartup_threshold = \"1.0944s\"\nread_ahead = \"1.0944s\"",
        );
        let (_, ends, period) = c.read_ahead.clone().unwrap();
        let pob_bytes = 716_800u64;
        let largest_frame = ends.windows(2).map(|w| w[1] - w[0]).max().unwrap().max(ends[0]);
        c.on_read(Time::ZERO, 100 + ends[27]); // 28 frames = 1.12 s of media: playback starts at 0
        assert_eq!(c.playback.started_at(), Some(Time::ZERO));
        let mut held_max = 0;
        for ms in (0..15_000).step_by(7) {
            let now = Time::from_millis(ms);
            let (bound, _) = c.read_bound(now).unwrap();
            if bound == u64::MAX {
                break;
            }
            if bound > c.read {
                let n = bound - c.read;
                c.on_read(now, n); // read everything the buffer admits
            }
            // frames due by now (deadline i·period ≤ now): 0..=⌊now/period⌋, shown or discarded
            let due = (now.saturating_since(Time::ZERO).as_nanos() / period.as_nanos()) as usize + 1;
            let held = c.read - 100 - ends[due.min(ends.len()) - 1];
            held_max = held_max.max(held);
        }
        assert!(held_max <= pob_bytes + largest_frame, "held {held_max} > POB {pob_bytes} + one frame {largest_frame}");
        assert!(held_max + largest_frame >= pob_bytes, "held {held_max}: the reader stopped well short of the POB");
    }

    #[test]
    fn read_ahead_is_refused_with_the_buffer_player_and_below_the_startup_threshold() {
        let spec = toml::from_str("read_ahead = \"2s\"").unwrap();
        let e = progressive_of(Some(&spec), "flow[0].progressive").unwrap_err();
        assert_eq!(e.to_string(), "flow[0].progressive.read_ahead: only with playback \"frames\"");
        let spec = toml::from_str("playback = \"frames\"\nstartup_threshold = \"2s\"\nread_ahead = \"1s\"").unwrap();
        let e = progressive_of(Some(&spec), "p").unwrap_err();
        assert!(e.to_string().starts_with("p.read_ahead: must be at least startup_threshold"), "{e}");
    }

    #[test]
    fn the_frame_player_variant_counts_underflows_from_the_same_bytes() {
        let mut c = client("rate = \"1Mbps\"\nmedia = \"4s\"\nplayback = \"frames\"");
        c.on_read(Time::ZERO, 100 + 125_000); // 1 s of media: the frame player starts
        assert_eq!(c.playback.started_at(), Some(Time::ZERO));
        c.on_read(Time::from_secs(3), 375_000); // the rest arrives 2 s late
        assert!(c.playback.rebuffers(Time::from_secs(3)).0 >= 1);
        assert_eq!(c.body_done_at, Some(Time::from_secs(3)));
    }
}
