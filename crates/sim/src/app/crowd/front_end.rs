//! The front-end server of seed 000 (Fig. 1) and its connections: publishers push HTTP-FLV,
//! the front-end relays each channel's frames to the channel's subscribers over HTTP-FLV.
//!
//! - A publisher writes its request head, the FLV header, onMetaData and the AVC sequence header
//!   when connected, then every 40 ms slot's frames ([`super::frames`]) until it stops
//!   (`stream_for`); then it goes silent, as a phone whose user walked away (`end = "silence"`,
//!   the default), or closes its connection, as a user pressing stop (`end = "fin"`). During an
//!   encoder pause (`pauses`: the app in the background, the camera re-initialising, a radio
//!   outage that the phone's encoder waits out) it produces no frames (issue 16: the seed's upload
//!   stalls are mostly "normal" — gaps without a hole — which a publisher sending a voice frame
//!   every 40 ms never has).
//! - The front-end reads upload bytes as they arrive; each tag whose last byte has been read joins
//!   the channel's frame log at that moment, so an upload stall delays every subscriber of the
//!   channel (seed §2.3: "about 40 % of TCP stalls in upload leads to no data transferring to
//!   subscribers").
//! - "Servers send keep-alive packets when clients do not upload data and terminate the flows if
//!   there is no data from client for 20 s" (§1.2): the server socket's TCP keep-alive (idle 5 s,
//!   configured in the flow's `tcp` keys) sends the probes; [`FrontEnd::idle_close_due`] closes
//!   an upload 20 s after its last data.
//! - A subscriber sends one GET; the front-end answers with a chunked HTTP-FLV body that starts
//!   with the header tags and the channel's current group of pictures (from its latest I frame,
//!   the usual GOP cache of live servers, so a player can decode at once), then every new frame.
//!   The viewer leaves (FIN) after `stream_for`; slow viewers are the flow's `reader` keys.
//!
//! Every byte written is described in the run's payload book (when pcaps are recorded), and each
//! tag's stream range and frame kind is kept per connection and direction ([`WireSpan`]): the
//! ground truth that frame attribution is scored against.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rand_pcg::Pcg64;
use tcpvideo_model::Time;

use super::flv_wire::{self, TagKind, WireTag};
use super::frames::{Frame, FrameSource, SLOT};
use crate::payload::{ChunkData, SharedPayloads};
use crate::tcp::TcpEndpoint;

/// A front-end closes an upload this long after its last data (seed §1.2).
pub const UPLOAD_IDLE_CLOSE: Duration = Duration::from_secs(20);

/// Stream offsets of one FLV tag and what it carries: `start` is its tag header (for the file
/// header, its "FLV" signature), `end` the end of its HTTP chunk. A byte belongs to the last tag
/// that started at or before it — the FLV reading of the stream (the PreviousTagSize and the
/// chunk framing before the next tag header belong to the tag before), as the analyzer's frame
/// index reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WireSpan {
    pub start: u64,
    pub end: u64,
    pub kind: TagKind,
}

/// One direction's byte stream as the application writes it.
#[derive(Clone, Debug, Default)]
pub struct StreamOut {
    /// Bytes written so far (the next byte's stream offset).
    pub written: u64,
    /// Written bytes the socket has not accepted yet.
    pub unsent: u64,
    pub spans: Vec<WireSpan>,
}

impl StreamOut {
    fn text(&mut self, book: Option<&SharedPayloads>, conn: u32, dir: usize, t: &[u8]) {
        if let Some(b) = book {
            b.lock().expect("payload book").append(conn, dir, self.written, t.len() as u64, ChunkData::Text(Arc::from(t)));
        }
        self.written += t.len() as u64;
        self.unsent += t.len() as u64;
    }

    fn tag(&mut self, book: Option<&SharedPayloads>, conn: u32, dir: usize, kind: TagKind, w: &WireTag) {
        // The tag's span begins at its HTTP chunk-size line: that line frames this tag's chunk
        // (RFC 9112 §7.1), so a segment starting with it carries this frame (issue 16, session
        // 10: spans began at the FLV tag header, and every frame's first segment of an
        // app-limited sender was typed as the frame before it).
        let start = self.written;
        self.text(book, conn, dir, &w.prefix);
        self.written += w.zeros;
        self.unsent += w.zeros;
        self.text(book, conn, dir, &w.suffix);
        self.spans.push(WireSpan { start, end: self.written, kind });
    }

    fn header_tags(&mut self, book: Option<&SharedPayloads>, conn: u32, dir: usize) {
        let chunk = flv_wire::header_chunk();
        let start = self.written + chunk.iter().position(|&b| b == b'\n').map_or(0, |p| p as u64 + 1);
        self.text(book, conn, dir, &chunk);
        self.spans.push(WireSpan { start, end: self.written, kind: TagKind::Meta });
        self.tag(book, conn, dir, TagKind::Meta, &flv_wire::tag(TagKind::Meta, false, 14, 0));
        self.tag(book, conn, dir, TagKind::Meta, &flv_wire::tag(TagKind::Meta, true, 40, 0));
    }

    /// Hand unsent bytes to the socket.
    pub fn push(&mut self, ep: &mut TcpEndpoint) -> bool {
        if self.unsent == 0 {
            return false;
        }
        let n = ep.send(self.unsent);
        self.unsent -= n;
        n > 0
    }
}

/// How a publisher streams: how its upload ends and when its encoder pauses; for both roles,
/// which frame types the connection carries.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PublishStyle {
    /// Close with a FIN after `stream_for` (else go silent until the front-end's idle close).
    pub end_with_fin: bool,
    /// [start, end) from the flow's start, sorted.
    pub pauses: Vec<(Duration, Duration)>,
    /// Only these frame kinds travel on this connection (`crowd.frames`; None: all). Seed 000
    /// §4 proposes "transmit each type of frame in separate connections": a publisher then opens
    /// one upload per type, each running the same encoder and writing only its types, and a
    /// viewer one download per type, to which the front-end relays only those types.
    pub only: Option<Vec<TagKind>>,
    /// Subscriber (`crowd.pacing = "fq"`): the front-end's socket is paced at Linux's
    /// `sk_pacing_rate`, as the fq qdisc paces every TCP socket (module comment of
    /// [`fq_pacing_cap`]); default unpaced, the pfifo_fast / fq_codel default of the seed's era.
    pub fq_pacing: bool,
    /// Publisher (`crowd.audio_offset`): each slot's voice frame is produced and written this
    /// long after the slot's video frame, as its own write (0: in the video frame's write).
    /// Seed 000 §1.1 gives voice its own production ("Frame V [...] production speed of about
    /// 25f/s") and §3.1–3.2 see each voice frame leave on its own ("the server sends out a
    /// frame"; "Frame V experiences no burst packet as its size is less than one packet size";
    /// "when sending frame V, there are often fewer packets in the network"). Audio and video
    /// come from separate capture clocks, so their phase is arbitrary (issue 16, session 10).
    pub audio_offset: Duration,
    /// Subscriber (`crowd.join = "wait_key"`): the stream starts with the channel's next frames,
    /// not its GOP cache; P frames are skipped until the next I frame, voice goes at once —
    /// nginx-rtmp's `wait_key on` (its default, with `interleave off` and `wait_video off`:
    /// `ngx_rtmp_live_av` "skip non-key" applies to video messages only). Default (false): the
    /// GOP cache (SRS, nginx-http-flv `gop_cache on`). Seed 000 does not say which its servers
    /// did (issue 16 session 11: it decides the whole-run I/P loss order).
    pub wait_key: bool,
}

/// The pacing cap that makes the simulated socket pace at its own `sk_pacing_rate` and nothing
/// lower: Linux computes `sk_pacing_rate` for every TCP socket (`tcp_update_pacing_rate`:
/// mss·max(cwnd, packets_out)/SRTT × 200 % in slow start, × 120 % after; the simulator's
/// `pacing_rate`), but only the fq qdisc (or TCP's internal pacing, since 4.13 only for BBR and
/// SO_MAX_PACING_RATE) enforces it. A cap far above any access rate enforces the rate without
/// lowering it. Deviation: fq lets a new flow send `initial_quantum` (10 packets) unpaced; the
/// simulator paces from the first segment.
pub fn fq_pacing_cap() -> tcpvideo_model::Bandwidth {
    tcpvideo_model::Bandwidth::from_mbps(1_000_000)
}

/// Where a new viewer's stream starts in the channel's frame log: its latest I frame (the GOP
/// cache), or with `wait_key` the next frame to arrive.
fn join_cursor(ch: &Channel, wait_key: bool) -> usize {
    if wait_key {
        ch.frames.len()
    } else {
        ch.last_key.unwrap_or(ch.frames.len())
    }
}

/// Whether the front-end relays a channel frame of `kind` to a viewer: its connection carries
/// the kind and, while `awaiting_key` (`crowd.join = "wait_key"` before the first I frame), it is
/// no P frame. An I frame ends the wait, also on a connection that does not carry it.
fn relays(only: &Option<Vec<TagKind>>, awaiting_key: &mut bool, kind: TagKind) -> bool {
    if kind == TagKind::I {
        *awaiting_key = false;
    }
    carries(only, kind) && !(*awaiting_key && kind == TagKind::P)
}

/// Whether a connection restricted to `only` carries frames of `kind` (stream metadata always).
pub fn carries(only: &Option<Vec<TagKind>>, kind: TagKind) -> bool {
    kind == TagKind::Meta || only.as_ref().is_none_or(|v| v.contains(&kind))
}

impl PublishStyle {
    /// From a flow's `crowd` table; errors name the key.
    pub fn of(c: &crate::scenario::CrowdSpec, path: &str) -> Result<PublishStyle, crate::scenario::ScenarioError> {
        let end_with_fin = match c.end.as_deref() {
            None | Some("silence") => false,
            Some("fin") => true,
            Some(other) => return Err(crate::scenario::ScenarioError(format!("{path}.end: {other:?} is not \"silence\" or \"fin\""))),
        };
        let mut pauses = Vec::new();
        for (i, ps) in c.pauses.iter().enumerate() {
            let a = ps.at.duration(&format!("{path}.pauses[{i}].at"))?;
            let d = ps.duration.duration(&format!("{path}.pauses[{i}].duration"))?;
            pauses.push((a, a.saturating_add(d)));
        }
        pauses.sort();
        let only = match c.frames.as_deref() {
            None => None,
            Some(letters) => {
                let mut v = Vec::new();
                for ch in letters.chars() {
                    let k = match ch {
                        'I' => TagKind::I,
                        'P' => TagKind::P,
                        'V' => TagKind::Audio,
                        _ => {
                            return Err(crate::scenario::ScenarioError(format!(
                                "{path}.frames: {letters:?} has {ch:?}; use the letters I, P and V"
                            )))
                        }
                    };
                    if !v.contains(&k) {
                        v.push(k);
                    }
                }
                if v.is_empty() {
                    return Err(crate::scenario::ScenarioError(format!("{path}.frames: empty; use the letters I, P and V")));
                }
                Some(v)
            }
        };
        let fq_pacing = match c.pacing.as_deref() {
            None | Some("none") => false,
            Some("fq") => true,
            Some(other) => return Err(crate::scenario::ScenarioError(format!("{path}.pacing: {other:?} is not \"none\" or \"fq\""))),
        };
        let audio_offset = match &c.audio_offset {
            None => Duration::ZERO,
            Some(q) => q.duration(&format!("{path}.audio_offset"))?,
        };
        if audio_offset >= SLOT {
            return Err(crate::scenario::ScenarioError(format!(
                "{path}.audio_offset: {audio_offset:?} is not below the {SLOT:?} frame slot"
            )));
        }
        let wait_key = match c.join.as_deref() {
            None | Some("gop_cache") => false,
            Some("wait_key") => true,
            Some(other) => {
                return Err(crate::scenario::ScenarioError(format!("{path}.join: {other:?} is not \"gop_cache\" or \"wait_key\"")))
            }
        };
        Ok(PublishStyle { end_with_fin, pauses, only, fq_pacing, audio_offset, wait_key })
    }

    fn paused(&self, since_start: Duration) -> bool {
        self.pauses.iter().any(|&(a, b)| a <= since_start && since_start < b)
    }
}

/// A publisher's connection (both ends).
#[derive(Clone, Debug)]
pub struct Publisher {
    pub channel: u32,
    pub start: Time,
    pub stop_at: Time,
    pub style: PublishStyle,
    /// The publisher closed its connection (`end = "fin"`).
    pub client_closed: bool,
    source: FrameSource,
    next_slot: u64,
    frames: Vec<Frame>,
    /// The current slot's voice frame, due `style.audio_offset` after its video frame.
    pending_audio: Option<Frame>,
    pub up: StreamOut,
    /// Per span of `up`: the frame's body bytes and FLV timestamp (what the front-end relays).
    tag_info: Vec<(u32, u32)>,
    /// Front-end side: upload bytes read, and the next span not yet relayed.
    server_read: u64,
    relayed: usize,
    /// When the front-end last read upload data (None: nothing yet).
    pub last_data_at: Option<Time>,
    pub server_closed: bool,
}

/// A subscriber's connection (both ends).
#[derive(Clone, Debug)]
pub struct Subscriber {
    pub channel: u32,
    pub leave_at: Time,
    request_len: u64,
    server_read: u64,
    started: bool,
    /// Next frame of the channel log to relay.
    cursor: usize,
    /// Frame kinds relayed on this connection (None: all).
    only: Option<Vec<TagKind>>,
    /// The front-end paces this download (`crowd.pacing = "fq"`).
    fq_pacing: bool,
    /// `crowd.join = "wait_key"` and no I frame relayed yet: P frames are skipped.
    awaiting_key: bool,
    pub down: StreamOut,
    pub left: bool,
}

#[derive(Clone, Debug)]
pub enum CrowdFlow {
    Publisher(Box<Publisher>),
    Subscriber(Box<Subscriber>),
}

/// A channel's frame log at the front-end.
#[derive(Clone, Debug, Default)]
struct Channel {
    /// (kind, body bytes, FLV timestamp) of every frame received so far.
    frames: Vec<(TagKind, u32, u32)>,
    last_key: Option<usize>,
    subscribers: Vec<u32>,
}

/// Every crowdlive connection of a run and the front-end's channel state.
#[derive(Debug, Default)]
pub struct FrontEnd {
    pub flows: Vec<Option<CrowdFlow>>,
    channels: BTreeMap<u32, Channel>,
    pub book: Option<SharedPayloads>,
}

impl FrontEnd {
    pub fn add_publisher(&mut self, f: usize, channel: u32, start: Time, stream_for: Duration, rng: Pcg64, style: PublishStyle) {
        self.slot(f);
        self.flows[f] = Some(CrowdFlow::Publisher(Box::new(Publisher {
            channel,
            start,
            stop_at: start + stream_for,
            style,
            client_closed: false,
            source: FrameSource::new(rng),
            next_slot: 0,
            pending_audio: None,
            frames: Vec::new(),
            up: StreamOut::default(),
            tag_info: Vec::new(),
            server_read: 0,
            relayed: 0,
            last_data_at: None,
            server_closed: false,
        })));
    }

    pub fn add_subscriber(&mut self, f: usize, channel: u32, start: Time, stream_for: Duration, style: &PublishStyle) {
        self.slot(f);
        self.flows[f] = Some(CrowdFlow::Subscriber(Box::new(Subscriber {
            channel,
            leave_at: start + stream_for,
            request_len: 0,
            server_read: 0,
            started: false,
            cursor: 0,
            only: style.only.clone(),
            fq_pacing: style.fq_pacing,
            awaiting_key: style.wait_key,
            down: StreamOut::default(),
            left: false,
        })));
    }

    fn slot(&mut self, f: usize) {
        if self.flows.len() <= f {
            self.flows.resize(f + 1, None);
        }
    }

    pub fn is_publisher(&self, f: usize) -> bool {
        matches!(self.flows.get(f), Some(Some(CrowdFlow::Publisher(_))))
    }

    /// The client connected: a publisher writes its head and stream header (returns the time of
    /// its first frame slot); a subscriber writes its GET.
    pub fn client_connected(&mut self, now: Time, f: usize, ep: &mut TcpEndpoint) -> Option<Time> {
        let book = self.book.clone();
        match self.flows[f].as_mut()? {
            CrowdFlow::Publisher(p) => {
                p.up.text(book.as_ref(), f as u32, 0, flv_wire::publish_head(p.channel).as_bytes());
                p.up.header_tags(book.as_ref(), f as u32, 0);
                p.tag_info.extend([(0, 0); 3]);
                p.up.push(ep);
                Some(now)
            }
            CrowdFlow::Subscriber(s) => {
                let head = flv_wire::play_head(s.channel);
                s.request_len = head.len() as u64;
                let mut out = StreamOut::default();
                out.text(book.as_ref(), f as u32, 0, head.as_bytes());
                ep.send(out.written);
                Some(s.leave_at.max(now))
            }
        }
    }

    /// Publisher `f`'s frame slot is due: produce its frames. Returns the next slot's time.
    pub fn publisher_slot(&mut self, now: Time, f: usize, ep: &mut TcpEndpoint) -> Option<Time> {
        let book = self.book.clone();
        let Some(CrowdFlow::Publisher(p)) = self.flows[f].as_mut() else { return None };
        if let Some(fr) = p.pending_audio.take() {
            // The slot's voice frame, `audio_offset` after its video frame: a write of its own.
            p.up.tag(book.as_ref(), f as u32, 0, fr.kind, &flv_wire::tag(fr.kind, false, fr.bytes, fr.ts_ms));
            p.tag_info.push((fr.bytes, fr.ts_ms));
            p.up.push(ep);
            return Some(now + (SLOT - p.style.audio_offset));
        }
        if now >= p.stop_at {
            if p.style.end_with_fin && !p.client_closed {
                p.client_closed = true;
                ep.close();
            }
            return None;
        }
        if p.style.paused(now.saturating_since(p.start)) {
            p.next_slot += 1;
            return Some(now + SLOT);
        }
        let backlog = p.up.unsent + ep.unacked_bytes();
        p.frames.clear();
        p.source.slot(p.next_slot, backlog, &mut p.frames);
        for fr in std::mem::take(&mut p.frames) {
            if !carries(&p.style.only, fr.kind) {
                continue;
            }
            if fr.kind == TagKind::Audio && !p.style.audio_offset.is_zero() {
                p.pending_audio = Some(fr);
                continue;
            }
            p.up.tag(book.as_ref(), f as u32, 0, fr.kind, &flv_wire::tag(fr.kind, false, fr.bytes, fr.ts_ms));
            p.tag_info.push((fr.bytes, fr.ts_ms));
            p.frames.push(fr);
        }
        p.up.push(ep);
        p.next_slot += 1;
        Some(now + if p.pending_audio.is_some() { p.style.audio_offset } else { SLOT })
    }

    /// The client side may write again.
    pub fn client_writable(&mut self, f: usize, ep: &mut TcpEndpoint) -> bool {
        match self.flows[f].as_mut() {
            Some(CrowdFlow::Publisher(p)) => p.up.push(ep),
            _ => false,
        }
    }

    /// The server side may write again.
    pub fn server_writable(&mut self, f: usize, ep: &mut TcpEndpoint) -> bool {
        match self.flows[f].as_mut() {
            Some(CrowdFlow::Subscriber(s)) => s.down.push(ep),
            _ => false,
        }
    }

    /// The front-end read `n` upload bytes of publisher `f` at `now`. Returns the channel's
    /// subscribers to feed if new frames arrived.
    pub fn upload_read(&mut self, now: Time, f: usize, n: u64) -> Vec<u32> {
        let Some(CrowdFlow::Publisher(p)) = self.flows[f].as_mut() else { return Vec::new() };
        if n == 0 {
            return Vec::new();
        }
        p.server_read += n;
        p.last_data_at = Some(now);
        let ch = self.channels.entry(p.channel).or_default();
        let before = ch.frames.len();
        while let Some(sp) = p.up.spans.get(p.relayed) {
            if sp.end > p.server_read {
                break;
            }
            if sp.kind != TagKind::Meta {
                let (bytes, ts) = p.tag_info[p.relayed];
                let fr = (sp.kind, bytes, ts);
                if sp.kind == TagKind::I {
                    ch.last_key = Some(ch.frames.len());
                }
                ch.frames.push(fr);
            }
            p.relayed += 1;
        }
        if ch.frames.len() > before {
            ch.subscribers.clone()
        } else {
            Vec::new()
        }
    }

    /// When the front-end should check publisher `f` for idleness (None: not a publisher or closed).
    pub fn idle_close_due(&self, f: usize) -> Option<Time> {
        match self.flows.get(f)? {
            Some(CrowdFlow::Publisher(p)) if !p.server_closed => p.last_data_at.map(|t| t + UPLOAD_IDLE_CLOSE),
            _ => None,
        }
    }

    /// Close publisher `f`'s upload if it has been idle for 20 s. Returns true if it closed.
    pub fn idle_close(&mut self, now: Time, f: usize, ep: &mut TcpEndpoint) -> bool {
        let due = self.idle_close_due(f);
        let Some(CrowdFlow::Publisher(p)) = self.flows[f].as_mut() else { return false };
        if due.is_some_and(|d| now >= d) {
            p.server_closed = true;
            ep.close();
            return true;
        }
        false
    }

    /// The front-end read `n` request bytes of subscriber `f`: once the GET is complete, start
    /// the response (header tags and the current group of pictures).
    pub fn subscriber_request_read(&mut self, f: usize, n: u64, ep: &mut TcpEndpoint) -> bool {
        let book = self.book.clone();
        let Some(CrowdFlow::Subscriber(s)) = self.flows[f].as_mut() else { return false };
        s.server_read += n;
        if s.started || s.server_read < s.request_len {
            return false;
        }
        s.started = true;
        if s.fq_pacing {
            ep.set_max_pacing_rate(Some(fq_pacing_cap()));
        }
        s.down.text(book.as_ref(), f as u32, 1, flv_wire::PLAY_RESPONSE_HEAD.as_bytes());
        s.down.header_tags(book.as_ref(), f as u32, 1);
        let ch = self.channels.entry(s.channel).or_default();
        ch.subscribers.push(f as u32);
        s.cursor = join_cursor(ch, s.awaiting_key);
        self.feed(f, ep)
    }

    /// Relay the channel's frames subscriber `f` has not had yet.
    pub fn feed(&mut self, f: usize, ep: &mut TcpEndpoint) -> bool {
        let book = self.book.clone();
        let Some(CrowdFlow::Subscriber(s)) = self.flows[f].as_mut() else { return false };
        if !s.started || s.left {
            return false;
        }
        let Some(ch) = self.channels.get(&s.channel) else { return false };
        for &(kind, bytes, ts) in ch.frames[s.cursor..].iter() {
            if relays(&s.only, &mut s.awaiting_key, kind) {
                s.down.tag(book.as_ref(), f as u32, 1, kind, &flv_wire::tag(kind, false, bytes, ts));
            }
        }
        s.cursor = ch.frames.len();
        s.down.push(ep)
    }

    /// Subscriber `f` leaves (its client closes) if its time has come.
    pub fn subscriber_leave(&mut self, now: Time, f: usize, ep: &mut TcpEndpoint) -> bool {
        let Some(CrowdFlow::Subscriber(s)) = self.flows[f].as_mut() else { return false };
        if s.left || now < s.leave_at {
            return false;
        }
        s.left = true;
        if let Some(ch) = self.channels.get_mut(&s.channel) {
            ch.subscribers.retain(|&x| x != f as u32);
        }
        ep.close();
        true
    }

    /// Tag spans of flow `f`: (direction 0 = upload / 1 = download, spans).
    pub fn spans(&self, f: usize) -> Option<(usize, &[WireSpan])> {
        match self.flows.get(f)?.as_ref()? {
            CrowdFlow::Publisher(p) => Some((0, &p.up.spans)),
            CrowdFlow::Subscriber(s) => Some((1, &s.down.spans)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn style_of(frames: &str) -> Result<PublishStyle, crate::scenario::ScenarioError> {
        let c = crate::scenario::CrowdSpec { frames: Some(frames.into()), ..Default::default() };
        PublishStyle::of(&c, "flow[0].crowd")
    }

    #[test]
    fn a_connection_per_frame_type_carries_only_its_letters_and_always_the_metadata() {
        let only = style_of("PV").unwrap().only;
        assert_eq!(only, Some(vec![TagKind::P, TagKind::Audio]));
        assert!(!carries(&only, TagKind::I));
        assert!(carries(&only, TagKind::P) && carries(&only, TagKind::Audio) && carries(&only, TagKind::Meta));
        let all = PublishStyle::of(&crate::scenario::CrowdSpec::default(), "x").unwrap().only;
        assert!([TagKind::I, TagKind::P, TagKind::Audio].iter().all(|&k| carries(&all, k)));
    }

    #[test]
    fn an_unknown_frame_letter_or_an_empty_list_is_one_error_naming_the_key() {
        let e = style_of("IX").unwrap_err().0;
        assert!(e.contains("flow[0].crowd.frames") && e.contains("'X'"), "{e}");
        assert!(style_of("").unwrap_err().0.contains("flow[0].crowd.frames: empty"));
    }

    #[test]
    fn frames_reach_the_channel_log_only_once_their_last_byte_is_read() {
        let mut fe = FrontEnd::default();
        fe.add_publisher(0, 7, Time::ZERO, Duration::from_secs(10), crate::engine::sub_rng(1, 1), PublishStyle::default());
        let Some(CrowdFlow::Publisher(p)) = fe.flows[0].as_mut() else { unreachable!() };
        p.up.header_tags(None, 0, 0);
        p.tag_info.extend([(0, 0); 3]);
        p.up.tag(None, 0, 0, TagKind::I, &flv_wire::tag(TagKind::I, false, 30_000, 0));
        p.tag_info.push((30_000, 0));
        let end = p.up.spans[3].end;
        fe.upload_read(Time::ZERO, 0, end - 1);
        assert!(fe.channels[&7].frames.is_empty(), "one byte short");
        fe.upload_read(Time::ZERO, 0, 1);
        assert_eq!(fe.channels[&7].frames, vec![(TagKind::I, 30_000, 0)]);
        assert_eq!(fe.channels[&7].last_key, Some(0));
    }

    #[test]
    fn a_viewer_joining_with_wait_key_gets_new_frames_voice_at_once_and_p_only_after_the_next_i() {
        let c = crate::scenario::CrowdSpec { join: Some("wait_key".into()), ..Default::default() };
        assert!(PublishStyle::of(&c, "x").unwrap().wait_key);
        assert!(!PublishStyle::of(&crate::scenario::CrowdSpec::default(), "x").unwrap().wait_key);
        let bad = crate::scenario::CrowdSpec { join: Some("gop".into()), ..Default::default() };
        assert!(PublishStyle::of(&bad, "flow[1].crowd").unwrap_err().0.contains("flow[1].crowd.join"));
        let ch = Channel {
            frames: vec![(TagKind::I, 9, 0), (TagKind::P, 9, 40), (TagKind::Audio, 9, 40), (TagKind::P, 9, 80)],
            last_key: Some(0),
            subscribers: vec![],
        };
        assert_eq!(join_cursor(&ch, false), 0, "GOP cache: from the latest I frame");
        assert_eq!(join_cursor(&ch, true), 4, "wait_key: the next frame");
        let mut waiting = true;
        let sent: Vec<TagKind> = [TagKind::P, TagKind::Audio, TagKind::P, TagKind::I, TagKind::P, TagKind::Audio]
            .into_iter()
            .filter(|&k| relays(&None, &mut waiting, k))
            .collect();
        assert_eq!(sent, vec![TagKind::Audio, TagKind::I, TagKind::P, TagKind::Audio]);
        // A P-only connection starts at the first P after the channel's next I.
        let (only, mut waiting) = (Some(vec![TagKind::P]), true);
        let sent: Vec<TagKind> = [TagKind::P, TagKind::I, TagKind::P].into_iter().filter(|&k| relays(&only, &mut waiting, k)).collect();
        assert_eq!(sent, vec![TagKind::P]);
    }
}
