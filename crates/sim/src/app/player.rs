//! The player app: the client side of one video connection, driving the model's
//! [`Player`](tcpvideo_model::video::Player) with real HTTP requests.
//!
//! On connect it GETs the playlist (HLS media playlist or DASH MPD), then follows the player's
//! actions: a `WaitUntil` becomes a wake-up, `ProbeSizes` becomes one HEAD per quality (pipelined,
//! RFC 9112 §9.3; seed 004 §V: "finds the sizes of the next segment using a HTTP HEAD request"),
//! `Fetch` a GET of the segment — preceded, with `playlist = "every_segment"`, by a pipelined GET
//! of the playlist, as a live HLS client that reloads its playlist. Responses are read as the
//! reader consumes bytes; the segment's first byte, body bytes and last byte are reported to the
//! player at the time the application reads them.
//!
//! Connections (`connection = "per_segment"`): each segment gets its own TCP connection — its HEAD
//! probes, its GET and (with `playlist = "every_segment"`) the playlist reload before it go on a
//! connection opened for that segment, which the client closes (FIN) once it has read the segment's
//! response. The first connection also carries the initial playlist GET. When the player asks for
//! the next segment, the action waits in `pending` while the simulation opens the new connection
//! (`wants_connection`); the player's request time is the moment it decided, so the handshake is
//! part of the download time, as a browser's XHR timing includes the connect. Heads still say
//! `Connection: keep-alive` (the client simply closes; the origin follows with its FIN).
//!
//! Deviation: the player joins (picks its first segment) at the client's arrival, not when the
//! playlist response arrives one RTT later; a segment that becomes available within that RTT is
//! not the one it starts with.

use std::sync::Arc;

use tcpvideo_model::video::{Player, PlayerAction};
use tcpvideo_model::Time;

use super::http::{self, Ask, HttpWire, RequestDesc};
use super::origin::VideoSite;
use crate::payload::{ChunkData, SharedPayloads};
use crate::tcp::TcpEndpoint;

/// When the client fetches the playlist.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlaylistRefresh {
    /// Once, at the start (seed 004: "check the MPD only in the beginning").
    Once,
    /// Before every segment (pipelined with the segment's GET).
    EverySegment,
}

/// A segment that finished downloading, for the simulation to annotate with TCP state.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Completed {
    pub segment: u64,
    pub at: Time,
}

/// The client side of one video connection.
pub struct PlayerApp {
    pub player: Player,
    refresh: PlaylistRefresh,
    /// Request bytes not yet accepted by the socket.
    unsent: u64,
    /// Bytes of the request stream written so far.
    written: u64,
    /// Bytes of the front response already read.
    front_read: u64,
    /// HEAD probes outstanding: (segment, sizes per quality, answers still missing).
    probe: Option<(u64, Vec<u64>, usize)>,
    /// A wake-up is scheduled at this time.
    pub wake_at: Option<Time>,
    pub requests_sent: u64,
    connected: bool,
    /// A new connection for every segment (else one persistent connection).
    per_segment: bool,
    /// The segment the current connection was opened for (per-segment mode).
    conn_segment: Option<u64>,
    /// An action waiting for the connection opened for it.
    pending: Option<PlayerAction>,
    /// The simulation should open a new connection (per-segment mode).
    pub wants_connection: bool,
    /// The simulation should close the current connection (its segment has been read).
    pub wants_close: bool,
    /// The playlist was asked for (once per client).
    playlist_asked: bool,
}

impl PlayerApp {
    pub fn new(player: Player, refresh: PlaylistRefresh, per_segment: bool) -> PlayerApp {
        PlayerApp {
            player,
            refresh,
            unsent: 0,
            written: 0,
            front_read: 0,
            probe: None,
            wake_at: None,
            requests_sent: 0,
            connected: false,
            per_segment,
            conn_segment: None,
            pending: None,
            wants_connection: false,
            wants_close: false,
            playlist_asked: false,
        }
    }

    /// The client arrives (before its connection is up).
    pub fn join(&mut self, now: Time) {
        self.player.join(now);
    }

    fn request(&mut self, ask: Ask, head_only: bool, site: &VideoSite, wire: &mut HttpWire, conn: u32, book: Option<&SharedPayloads>) {
        let (method, path) = (if head_only { "HEAD" } else { "GET" }, site.path(ask));
        let len = match book {
            Some(b) => {
                let text = http::request_head(method, &path);
                let len = text.len() as u64;
                b.lock().expect("payload book").append(conn, 0, self.written, len, ChunkData::Text(Arc::from(text.into_bytes())));
                len
            }
            // Without a capture only the length travels.
            None => http::request_head_len(method, &path) as u64,
        };
        self.written += len;
        self.unsent += len;
        self.requests_sent += 1;
        wire.requests.push_back(RequestDesc { len, ask, head_only });
    }

    /// The connection is up: ask for the playlist (first connection), send what waited for this
    /// connection, then follow the player.
    pub fn on_connected(
        &mut self,
        now: Time,
        site: &VideoSite,
        wire: &mut HttpWire,
        conn: u32,
        book: Option<&SharedPayloads>,
        ep: &mut TcpEndpoint,
    ) -> Option<Time> {
        self.connected = true;
        if !self.playlist_asked {
            self.playlist_asked = true;
            self.request(Ask::Playlist, false, site, wire, conn, book);
        }
        let wake = match self.pending.take() {
            Some(action) => self.issue(action, site, wire, conn, book),
            None => self.drive(now, site, wire, conn, book),
        };
        self.push(ep);
        wake
    }

    /// A new connection replaces the closed one: its byte streams start at zero.
    pub fn reset_for_new_connection(&mut self) {
        self.unsent = 0;
        self.written = 0;
        self.front_read = 0;
        self.connected = false;
        self.wants_connection = false;
    }

    /// Follow the player's actions at `now`; returns a wake-up time if it must wait.
    pub fn drive(&mut self, now: Time, site: &VideoSite, wire: &mut HttpWire, conn: u32, book: Option<&SharedPayloads>) -> Option<Time> {
        if !self.connected || self.probe.is_some() || self.pending.is_some() {
            return None;
        }
        let action = self.player.next_action(now);
        let segment = match action {
            PlayerAction::ProbeSizes { segment } => Some(segment),
            PlayerAction::Fetch(req) => Some(req.segment),
            _ => None,
        };
        if let (true, Some(s)) = (self.per_segment, segment) {
            if self.conn_segment.is_some_and(|c| c != s) {
                // This segment needs its own connection: wait for it.
                self.pending = Some(action);
                self.wants_connection = true;
                self.connected = false;
                return None;
            }
        }
        self.issue(action, site, wire, conn, book)
    }

    /// Write the requests of `action` on the current connection.
    fn issue(
        &mut self,
        action: PlayerAction,
        site: &VideoSite,
        wire: &mut HttpWire,
        conn: u32,
        book: Option<&SharedPayloads>,
    ) -> Option<Time> {
        match action {
            PlayerAction::ProbeSizes { segment } => self.conn_segment = Some(segment),
            PlayerAction::Fetch(req) => self.conn_segment = Some(req.segment),
            _ => {}
        }
        match action {
            PlayerAction::WaitUntil(t) => Some(t),
            PlayerAction::ProbeSizes { segment } => {
                let n = site.content.ladder().len();
                for quality in 0..n {
                    self.request(Ask::SizeProbe { segment, quality }, true, site, wire, conn, book);
                }
                self.probe = Some((segment, vec![0; n], n));
                None
            }
            PlayerAction::Fetch(req) => {
                if self.refresh == PlaylistRefresh::EverySegment {
                    self.request(Ask::Playlist, false, site, wire, conn, book);
                }
                self.request(Ask::Segment { segment: req.segment, quality: req.quality }, false, site, wire, conn, book);
                None
            }
            PlayerAction::Downloading | PlayerAction::Finished => None,
        }
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

    /// The application read `n` response bytes at `now`. Completed segments are appended to
    /// `done`; returns true if a response completed (the caller then drives the player).
    pub fn on_read(&mut self, now: Time, mut n: u64, wire: &mut HttpWire, done: &mut Vec<Completed>) -> bool {
        let mut completed_any = false;
        while n > 0 {
            let Some(resp) = wire.responses.front().copied() else {
                break;
            };
            let total = resp.head_len + resp.body_len;
            let take = n.min(total - self.front_read);
            let before = self.front_read;
            self.front_read += take;
            n -= take;
            if let Ask::Segment { .. } = resp.ask {
                if before == 0 {
                    self.player.on_first_byte(now);
                }
                let body_before = before.saturating_sub(resp.head_len);
                let body_now = self.front_read.saturating_sub(resp.head_len);
                if body_now > body_before && self.front_read < total {
                    // per packet: count only; the player syncs on its next decision (cheaper)
                    self.player.count_bytes(now, body_now - body_before);
                }
            }
            if self.front_read < total {
                break;
            }
            wire.responses.pop_front();
            self.front_read = 0;
            completed_any = true;
            match resp.ask {
                Ask::Playlist => {}
                Ask::SizeProbe { segment, quality } => {
                    if let Some((s, sizes, missing)) = &mut self.probe {
                        if *s == segment && quality < sizes.len() {
                            sizes[quality] = resp.content_length;
                            *missing -= 1;
                            if *missing == 0 {
                                let (s, sizes, _) = self.probe.take().expect("probe");
                                self.player.on_segment_sizes(now, s, &sizes);
                            }
                        }
                    }
                }
                Ask::Segment { segment, .. } => {
                    self.player.on_segment_done(now);
                    done.push(Completed { segment, at: now });
                    if self.per_segment && wire.responses.is_empty() {
                        self.wants_close = true;
                    }
                }
            }
        }
        completed_any
    }
}
