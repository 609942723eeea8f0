//! The video origin: an HTTP/1.1 server for one live or on-demand stream (HLS or DASH), one
//! instance per connection, all sharing one [`VideoSite`].
//!
//! It answers the paths of `tcpvideo_model::video::playlist::paths`: the media playlist (HLS,
//! RFC 8216 §4.3.3: the live one lists the sliding window as of the moment the request is read) or
//! the MPD (DASH), HEAD and GET of segments (`Content-Length` = the model's size). A live segment
//! not yet available is a `404` (players here never ask for one: they wait for availability).
//! Responses go out in request order (pipelining, RFC 9112 §9.3); the whole response is handed to
//! the socket at once, as nginx does with `sendfile` for a cached segment.
//!
//! The server-side per-flow cwnd clamp (seed 004 §IV-D: 20 segments) is the flow's `cwnd_clamp`,
//! applied to this server's socket by the simulation.

use std::sync::Arc;

use tcpvideo_model::video::playlist::{dash, hls};
use tcpvideo_model::video::{Content, LiveSource};
use tcpvideo_model::Time;

use super::http::{self, Ask, HttpWire, ResponseDesc};
use crate::payload::{ChunkData, MediaFormat, SharedPayloads};
use crate::tcp::TcpEndpoint;

/// HLS or DASH.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamFormat {
    Hls,
    Dash,
}

impl StreamFormat {
    pub fn media(self) -> MediaFormat {
        match self {
            StreamFormat::Hls => MediaFormat::MpegTs,
            StreamFormat::Dash => MediaFormat::Fmp4,
        }
    }
    fn segment_type(self) -> &'static str {
        match self {
            StreamFormat::Hls => "video/mp2t",
            StreamFormat::Dash => "video/iso.segment",
        }
    }
}

/// A response: head text (if asked for), head length, body length, the head's Content-Length,
/// body.
type Response = (Option<String>, u64, u64, u64, Option<ChunkData>);

/// What every connection of the origin serves.
#[derive(Clone, Debug)]
pub struct VideoSite {
    pub content: Content,
    /// `Some` for a live stream.
    pub live: Option<LiveSource>,
    pub format: StreamFormat,
}

impl VideoSite {
    /// The path a request for `ask` uses.
    pub fn path(&self, ask: Ask) -> String {
        use tcpvideo_model::video::playlist::paths::VideoPath;
        let p = match (ask, self.format) {
            (Ask::Playlist, StreamFormat::Hls) => VideoPath::MediaPlaylist { quality: 0 },
            (Ask::Playlist, StreamFormat::Dash) => VideoPath::Mpd,
            (Ask::SizeProbe { segment, quality } | Ask::Segment { segment, quality }, StreamFormat::Hls) => {
                VideoPath::HlsSegment { quality, segment }
            }
            (Ask::SizeProbe { segment, quality } | Ask::Segment { segment, quality }, StreamFormat::Dash) => {
                VideoPath::DashSegment { quality, segment }
            }
        };
        p.to_path()
    }

    /// Head (its text only `with_text`: a run without captures needs only its length), head
    /// length, body length, the head's `Content-Length` (a HEAD announces the GET's size; handed
    /// over so that no size probe parses it back out of the head) and body of the response to
    /// `ask` read at `now`.
    fn respond_with_length(&self, ask: Ask, head_only: bool, now: Time, with_text: bool) -> Response {
        match ask {
            Ask::Playlist => {
                let (text, ctype) = match (self.format, &self.live) {
                    (StreamFormat::Hls, Some(src)) => (hls::live_media_playlist(src, now), "application/vnd.apple.mpegurl"),
                    (StreamFormat::Hls, None) => (hls::vod_media_playlist(&self.content), "application/vnd.apple.mpegurl"),
                    // Epoch 0: the MPD's wall-clock dates are simulation time since 1970-01-01.
                    (StreamFormat::Dash, Some(src)) => (dash::live_mpd(&self.content, src, now, 0), "application/dash+xml"),
                    (StreamFormat::Dash, None) => (dash::vod_mpd(&self.content), "application/dash+xml"),
                };
                let head = http::response_head(ctype, text.len() as u64, self.live.is_some());
                let body = text.into_bytes();
                let len = body.len() as u64;
                (Some(head.clone()).filter(|_| with_text), head.len() as u64, len, len, Some(ChunkData::Text(Arc::from(body))))
            }
            Ask::SizeProbe { segment, quality } | Ask::Segment { segment, quality } => {
                let available = self.live.is_none_or(|src| src.available_at(segment) <= now);
                let Some(bytes) = self.content.segment_bytes(segment, quality).filter(|_| available) else {
                    let head = http::not_found_head();
                    return (Some(head.clone()).filter(|_| with_text), head.len() as u64, 0, 0, None);
                };
                let ctype = self.format.segment_type();
                let (head, head_len) = if with_text {
                    let h = http::response_head(ctype, bytes, false);
                    let n = h.len() as u64;
                    (Some(h), n)
                } else {
                    (None, http::response_head_len(ctype, bytes, false) as u64)
                };
                if head_only {
                    (head, head_len, 0, bytes, None)
                } else {
                    (head, head_len, bytes, bytes, Some(ChunkData::Media(self.format.media())))
                }
            }
        }
    }
}

/// The server side of one connection.
#[derive(Clone, Debug, Default)]
pub struct OriginConn {
    /// Request bytes read and not yet matched to a whole request.
    read_pending: u64,
    /// Response bytes not yet accepted by the socket.
    unsent: u64,
    /// Bytes of the response stream written so far (its next stream offset).
    written: u64,
    pub responses: u64,
}

impl OriginConn {
    /// The server read `n` more request bytes at `now`: answer every request now complete.
    /// Returns true if the socket was touched. (The arguments are the connection's context: the
    /// site, the wire, the connection id and the payload book; grouping them would only rename them.)
    #[allow(clippy::too_many_arguments)]
    pub fn on_read(
        &mut self,
        now: Time,
        n: u64,
        site: &VideoSite,
        wire: &mut HttpWire,
        conn: u32,
        book: Option<&SharedPayloads>,
        ep: &mut TcpEndpoint,
    ) -> bool {
        self.read_pending += n;
        while let Some(req) = wire.requests.front().copied() {
            if self.read_pending < req.len {
                break;
            }
            self.read_pending -= req.len;
            wire.requests.pop_front();
            let (head, head_len, body_len, announced, body) = site.respond_with_length(req.ask, req.head_only, now, book.is_some());
            let content_length = if req.head_only { announced } else { body_len };
            if let Some(b) = book {
                let mut b = b.lock().expect("payload book");
                let head = head.expect("head text is written when a capture wants it");
                b.append(conn, 1, self.written, head_len, ChunkData::Text(Arc::from(head.into_bytes())));
                if let Some(data) = body {
                    b.append(conn, 1, self.written + head_len, body_len, data);
                }
            }
            self.written += head_len + body_len;
            self.unsent += head_len + body_len;
            self.responses += 1;
            wire.responses.push_back(ResponseDesc { head_len, body_len, content_length, ask: req.ask });
        }
        self.push(ep)
    }

    /// Hand unsent response bytes to the socket (also on Writable).
    pub fn push(&mut self, ep: &mut TcpEndpoint) -> bool {
        if self.unsent == 0 {
            return false;
        }
        let n = ep.send(self.unsent);
        self.unsent -= n;
        n > 0
    }
}

/// The Content-Length a head announces (0 if none).
#[cfg(test)]
fn head_content_length(head: &str) -> u64 {
    head.split("\r\n").find_map(|l| l.strip_prefix("Content-Length: ")).and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tcpvideo_model::video::Ladder;

    fn site(live: bool) -> VideoSite {
        let d = Duration::from_secs(2);
        let content = Content::cbr(Ladder::seed004(), d, 30).unwrap();
        let live = live.then(|| LiveSource::new(Time::ZERO, d, 30, 5).unwrap());
        VideoSite { content, live, format: StreamFormat::Hls }
    }

    #[test]
    fn a_head_announces_the_segment_size_and_carries_no_body() {
        let s = site(false);
        let (head, _, body, _, data) = s.respond_with_length(Ask::SizeProbe { segment: 3, quality: 1 }, true, Time::ZERO, true);
        let head = head.unwrap();
        assert_eq!(body, 0);
        assert!(data.is_none());
        // 500 kbit/s × 2 s = 125000 bytes.
        assert_eq!(head_content_length(&head), 125_000);
    }

    #[test]
    fn a_live_segment_is_not_found_before_it_is_available() {
        let s = site(true);
        let ask = Ask::Segment { segment: 2, quality: 0 };
        // Segment 2 is available at t0 + 3·d = 6 s.
        assert!(s.respond_with_length(ask, false, Time::from_secs(5), true).0.unwrap().starts_with("HTTP/1.1 404"));
        let (head, _, body, _, _) = s.respond_with_length(ask, false, Time::from_secs(6), true);
        let head = head.unwrap();
        assert!(head.starts_with("HTTP/1.1 200"));
        assert_eq!(body, 62_500);
    }

    #[test]
    fn the_live_playlist_body_is_the_models_playlist_at_read_time() {
        let s = site(true);
        let (head, _, body, _, data) = s.respond_with_length(Ask::Playlist, false, Time::from_secs(9), true);
        let head = head.unwrap();
        let Some(ChunkData::Text(t)) = data else { panic!("text body") };
        assert_eq!(body as usize, t.len());
        assert_eq!(&t[..], hls::live_media_playlist(s.live.as_ref().unwrap(), Time::from_secs(9)).as_bytes());
        assert_eq!(head_content_length(&head), body);
        assert!(head.contains("application/vnd.apple.mpegurl"));
    }

    #[test]
    fn the_announced_and_head_lengths_are_those_of_the_head_text() {
        // The origin takes a HEAD's Content-Length from `respond_with_length` instead of parsing
        // the head: the two must agree for every kind of response, available or not.
        for live in [false, true] {
            let s = site(live);
            for ask in [Ask::Playlist, Ask::SizeProbe { segment: 4, quality: 2 }, Ask::Segment { segment: 4, quality: 5 }] {
                for head_only in [false, true] {
                    for now in [Time::ZERO, Time::from_secs(30)] {
                        let (head, head_len, _, announced, _) = s.respond_with_length(ask, head_only, now, true);
                        let head = head.unwrap();
                        assert_eq!(announced, head_content_length(&head), "{ask:?} head_only={head_only} live={live} at {now:?}");
                        // Without the text the same length is reported.
                        let (none, len_only, ..) = s.respond_with_length(ask, head_only, now, false);
                        assert!(none.is_none());
                        assert_eq!((head_len, len_only), (head.len() as u64, head.len() as u64));
                    }
                }
            }
        }
    }
}
