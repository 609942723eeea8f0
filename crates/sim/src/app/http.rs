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
    request_pieces(method, path).concat()
}

/// The length of [`request_head`]`(method, path)`, without writing it (a run without captures
/// needs only the byte count; formatting every head was ~2 % of an onoff run).
pub fn request_head_len(method: &str, path: &str) -> usize {
    request_pieces(method, path).iter().map(|p| p.len()).sum()
}

/// The request head in pieces: the one definition both the text and its length come from.
fn request_pieces<'a>(method: &'a str, path: &'a str) -> [&'a str; 8] {
    [method, " ", path, " HTTP/1.1\r\nHost: ", HOST, "\r\nUser-Agent: ", USER_AGENT, "\r\nAccept: */*\r\n\r\n"]
}

/// A `200 OK` response head.
pub fn response_head(content_type: &str, content_length: u64, live_playlist: bool) -> String {
    let mut digits = [0u8; 20];
    response_pieces(content_type, decimal(content_length, &mut digits), live_playlist).concat()
}

/// The length of [`response_head`]`(..)`, without writing it.
pub fn response_head_len(content_type: &str, content_length: u64, live_playlist: bool) -> usize {
    let mut digits = [0u8; 20];
    response_pieces(content_type, decimal(content_length, &mut digits), live_playlist).iter().map(|p| p.len()).sum()
}

/// The response head in pieces: the one definition both the text and its length come from.
fn response_pieces<'a>(content_type: &'a str, content_length: &'a str, live_playlist: bool) -> [&'a str; 7] {
    let cache = if live_playlist { "Cache-Control: max-age=1\r\n" } else { "" };
    [
        "HTTP/1.1 200 OK\r\nServer: tcpvideo-sim-origin\r\nContent-Type: ",
        content_type,
        "\r\nContent-Length: ",
        content_length,
        "\r\n",
        cache,
        "Connection: keep-alive\r\n\r\n",
    ]
}

/// `n` in decimal, written into the end of `buf`.
fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &str {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    std::str::from_utf8(&buf[i..]).expect("ASCII digits")
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
        assert!(response_head("application/vnd.apple.mpegurl", 10, true).contains("Cache-Control: max-age=1"));
    }

    #[test]
    fn head_lengths_equal_the_lengths_of_the_heads_written() {
        for (m, p) in [("GET", "/q0/index.m3u8"), ("HEAD", "/q5/123456.ts"), ("GET", "/manifest.mpd")] {
            assert_eq!(request_head_len(m, p), request_head(m, p).len());
        }
        for n in [0, 7, 10, 99, 125_000, 1_000_000, u64::MAX] {
            for live in [false, true] {
                let h = response_head("video/mp2t", n, live);
                assert_eq!(response_head_len("video/mp2t", n, live), h.len());
                assert!(h.contains(&format!("\r\nContent-Length: {n}\r\n")));
            }
        }
    }

    #[test]
    fn heads_are_byte_for_byte_the_documented_text() {
        assert_eq!(
            request_head("GET", "/q1/5.ts"),
            "GET /q1/5.ts HTTP/1.1\r\nHost: origin.tcpvideo.test\r\nUser-Agent: tcpvideo-sim-player/0.1\r\nAccept: */*\r\n\r\n"
        );
        assert_eq!(
            response_head("application/vnd.apple.mpegurl", 301, true),
            "HTTP/1.1 200 OK\r\nServer: tcpvideo-sim-origin\r\nContent-Type: application/vnd.apple.mpegurl\r\nContent-Length: 301\r\nCache-Control: max-age=1\r\nConnection: keep-alive\r\n\r\n"
        );
    }
}
