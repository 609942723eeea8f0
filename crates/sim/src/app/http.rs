//! HTTP/1.1 messages on one simulated connection: the text of request and response heads (RFC
//! 9110, RFC 9112), and the queue that tells each side where the other's messages end.
//!
//! Endpoints carry byte counts, not bytes, so each side also learns the other's message
//! boundaries through [`HttpWire`]: the client records every request it writes (length and what it
//! asks for) and the server every response (head and body length, i.e. what the client would read
//! from the status line and `Content-Length`). The bytes themselves go to the run's
//! [`crate::payload::PayloadBook`] when a capture wants them. Requests may be pipelined (RFC 9112
//! §9.3): responses come back in request order.
//!
//! Heads are what a small origin (nginx-like) sends: no `Date` (it would make captures depend on a
//! wall clock; deterministic runs must not), `Content-Type` per RFC 8216 §4 / ISO 23009-1 Annex C,
//! `Content-Length`, `Cache-Control` for live playlists.

use std::collections::VecDeque;

/// What a request asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ask {
    /// The media playlist (HLS) or MPD (DASH).
    Playlist,
    /// HEAD of segment `segment` in `quality` (its Content-Length is the size, seed 004 §V).
    SizeProbe { segment: u64, quality: usize },
    /// GET of a media segment.
    Segment { segment: u64, quality: usize },
}

/// A request as the server will read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestDesc {
    pub len: u64,
    pub ask: Ask,
    pub head_only: bool,
}

/// A response as the client will read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResponseDesc {
    pub head_len: u64,
    /// Body bytes on the wire (0 for HEAD).
    pub body_len: u64,
    /// The Content-Length header's value (a HEAD response announces the GET's body size).
    pub content_length: u64,
    pub ask: Ask,
}

/// Message boundaries in flight on one connection.
#[derive(Clone, Debug, Default)]
pub struct HttpWire {
    /// Requests written by the client, not yet fully read by the server.
    pub requests: VecDeque<RequestDesc>,
    /// Responses written by the server, not yet fully read by the client.
    pub responses: VecDeque<ResponseDesc>,
}

/// Host name the client puts in `Host` (the origin's name in the scenario).
pub const HOST: &str = "origin.tcpvideo.test";
/// The simulated client's User-Agent.
pub const USER_AGENT: &str = "tcpvideo-sim-player/0.1";

/// An HTTP/1.1 request head.
pub fn request_head(method: &str, path: &str) -> String {
    format!("{method} {path} HTTP/1.1\r\nHost: {HOST}\r\nUser-Agent: {USER_AGENT}\r\nAccept: */*\r\n\r\n")
}

/// A `200 OK` response head.
pub fn response_head(content_type: &str, content_length: u64, live_playlist: bool) -> String {
    let cache = if live_playlist {
        "Cache-Control: max-age=1\r\n"
    } else {
        ""
    };
    format!(
        "HTTP/1.1 200 OK\r\nServer: tcpvideo-sim-origin\r\nContent-Type: {content_type}\r\nContent-Length: {content_length}\r\n{cache}Connection: keep-alive\r\n\r\n"
    )
}

/// A `404 Not Found` response head with an empty body.
pub fn not_found_head() -> String {
    "HTTP/1.1 404 Not Found\r\nServer: tcpvideo-sim-origin\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_heads_are_http11_with_host_and_end_in_an_empty_line() {
        let r = request_head("HEAD", "/q3/17.ts");
        assert!(r.starts_with("HEAD /q3/17.ts HTTP/1.1\r\nHost: "));
        assert!(r.ends_with("\r\n\r\n"));
        assert_eq!(r.matches("\r\n\r\n").count(), 1);
    }

    #[test]
    fn response_heads_carry_content_type_and_length() {
        let r = response_head("video/mp2t", 125_000, false);
        assert!(r.starts_with("HTTP/1.1 200 OK\r\n"));
        assert!(r.contains("\r\nContent-Type: video/mp2t\r\n"));
        assert!(r.contains("\r\nContent-Length: 125000\r\n"));
        assert!(!r.contains("Cache-Control"));
        assert!(response_head("application/vnd.apple.mpegurl", 10, true)
            .contains("Cache-Control: max-age=1"));
    }
}
