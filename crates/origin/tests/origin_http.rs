//! The origin over real loopback connections: root confinement, content types, HEAD, ranges,
//! keep-alive, the connection cap, delivery modes end to end.

mod common;

use std::io::Read;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{exchange, get, start, MediaTree, SECRET};
use tcpvideo_origin::DeliveryRules;

#[test]
fn sixteen_path_traversal_variants_get_403_or_404_and_no_byte_from_outside_the_root() {
    let tree = MediaTree::new("traversal");
    let o = start(&tree.root(), DeliveryRules::bulk(), |_| {});
    let absolute_form = format!("http://{}/../secret.txt", o.addr);
    let variants = [
        "/../secret.txt",
        "/hls/../../secret.txt",
        "/%2e%2e/secret.txt",
        "/%2E%2E/secret.txt",
        "/.%2e/secret.txt",
        "/hls/..%2f..%2fsecret.txt",
        "/hls/%2e%2e%2f%2e%2e%2fsecret.txt",
        "/..%5csecret.txt",
        "/%00/../secret.txt",
        "/./../secret.txt",
        "//etc/passwd",
        "/etc/passwd",
        "/hls/%252e%252e/%252e%252e/secret.txt",
        "/leak.txt",
        "/linkdir/secret.txt",
        absolute_form.as_str(),
    ];
    for v in variants {
        let r = get(o.addr, v, "");
        assert!(r.status == 403 || r.status == 404, "{v}: status {}", r.status);
        assert!(!String::from_utf8_lossy(&r.body).contains(SECRET), "{v}: leaked the secret");
    }
    let refused = o.origin.metrics.paths_refused.load(std::sync::atomic::Ordering::Relaxed);
    assert!(refused >= 10, "only {refused} requests counted as refused paths");
}

#[test]
fn playlists_and_segments_carry_their_media_types_and_head_has_no_body() {
    let tree = MediaTree::new("types");
    let o = start(&tree.root(), DeliveryRules::bulk(), |_| {});
    let r = get(o.addr, "/hls/index.m3u8", "");
    assert_eq!((r.status, r.header("content-type")), (200, Some("application/vnd.apple.mpegurl")));
    assert_eq!(r.body, std::fs::read(tree.root().join("hls/index.m3u8")).unwrap());
    assert_eq!(get(o.addr, "/manifest.mpd", "").header("content-type"), Some("application/dash+xml"));
    let mut s = TcpStream::connect(o.addr).unwrap();
    let h = exchange(&mut s, "HEAD /hls/seg0.ts HTTP/1.1\r\nHost: o\r\n\r\n", true);
    assert_eq!((h.status, h.header("content-type"), h.header("content-length")), (200, Some("video/mp2t"), Some("100000")));
    assert_eq!(h.header("accept-ranges"), Some("bytes"));
    // Keep-alive: the same connection answers again, and nothing of a body was sent after HEAD.
    let g = exchange(&mut s, "GET /hls/index.m3u8 HTTP/1.1\r\nHost: o\r\n\r\n", false);
    assert_eq!(g.status, 200);
    assert!(g.body.starts_with(b"#EXTM3U"));
}

#[test]
fn pipelined_requests_are_answered_in_order_and_connection_close_ends_the_connection() {
    let tree = MediaTree::new("pipeline");
    let o = start(&tree.root(), DeliveryRules::bulk(), |_| {});
    let mut s = TcpStream::connect(o.addr).unwrap();
    use std::io::Write;
    // Three requests in one write: the second a HEAD, the third asks to close.
    s.write_all(
        b"GET /hls/seg0.ts HTTP/1.1\r\nHost: o\r\n\r\nHEAD /hls/index.m3u8 HTTP/1.1\r\nHost: o\r\n\r\nGET /missing HTTP/1.1\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let first = exchange(&mut s, "", false);
    assert_eq!((first.status, first.body.len()), (200, 100_000));
    assert_eq!(first.body, std::fs::read(tree.root().join("hls/seg0.ts")).unwrap());
    let second = exchange(&mut s, "", true);
    assert_eq!((second.status, second.header("content-type")), (200, Some("application/vnd.apple.mpegurl")));
    let third = exchange(&mut s, "", false);
    assert_eq!((third.status, third.header("connection")), (404, Some("close")));
    let mut rest = Vec::new();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert_eq!(s.read_to_end(&mut rest).unwrap(), 0, "bytes after the last answer: {rest:?}");
}

#[test]
fn a_single_range_gets_206_with_exactly_those_bytes() {
    let tree = MediaTree::new("range");
    let o = start(&tree.root(), DeliveryRules::bulk(), |_| {});
    let whole = std::fs::read(tree.root().join("hls/seg0.ts")).unwrap();
    for (range, first, last) in
        [("bytes=100-1099", 100, 1099), ("bytes=99000-", 99000, 99999), ("bytes=-500", 99500, 99999), ("bytes=0-999999", 0, 99999)]
    {
        let r = get(o.addr, "/hls/seg0.ts", &format!("Range: {range}\r\n"));
        assert_eq!(r.status, 206, "{range}");
        assert_eq!(r.header("content-range").unwrap(), format!("bytes {first}-{last}/100000"), "{range}");
        assert_eq!(r.body, whole[first..=last], "{range}");
    }
}

#[test]
fn bad_range_headers_get_416_with_the_length() {
    let tree = MediaTree::new("badrange");
    let o = start(&tree.root(), DeliveryRules::bulk(), |_| {});
    for range in ["bytes=100000-", "bytes=500-100", "bytes=abc-def", "bytes=-0", "bytes=1-2-3"] {
        let r = get(o.addr, "/hls/seg0.ts", &format!("Range: {range}\r\n"));
        assert_eq!(r.status, 416, "{range}");
        assert_eq!(r.header("content-range"), Some("bytes */100000"), "{range}");
    }
}

#[test]
fn other_methods_get_405_and_bad_query_values_a_400_naming_the_key() {
    let tree = MediaTree::new("methods");
    let o = start(&tree.root(), DeliveryRules::bulk(), |_| {});
    let mut s = TcpStream::connect(o.addr).unwrap();
    let r = exchange(&mut s, "DELETE /hls/seg0.ts HTTP/1.1\r\nHost: o\r\n\r\n", false);
    assert_eq!((r.status, r.header("allow")), (405, Some("GET, HEAD")));
    let r = get(o.addr, "/hls/seg0.ts?mode=trickle", "");
    assert_eq!(r.status, 400);
    assert!(String::from_utf8_lossy(&r.body).starts_with("rate_kbps:"), "{:?}", String::from_utf8_lossy(&r.body));
}

#[test]
fn connections_beyond_the_cap_are_closed_at_once() {
    let tree = MediaTree::new("cap");
    let o = start(&tree.root(), DeliveryRules::bulk(), |o| o.max_connections = 2);
    let _a = TcpStream::connect(o.addr).unwrap();
    let _b = TcpStream::connect(o.addr).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let mut c = TcpStream::connect(o.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = [0u8; 16];
    let n = c.read(&mut buf).unwrap_or(0);
    assert_eq!(n, 0, "the third connection was served");
    assert_eq!(o.origin.metrics.connections_refused.load(std::sync::atomic::Ordering::Relaxed), 1);
}

#[test]
fn application_pacing_delivers_after_startup_at_125_percent_of_the_rate() {
    // 400 kB at R = 1.6 Mbit/s with 0 s startup: tokens at 2 Mbit/s, 64 kB blocks → the 7th
    // (last, partial) block is due at 6 × 65 536 × 8 / 2e6 = 1.57 s. Bulk takes milliseconds.
    let tree = MediaTree::new("pacing");
    let body: Vec<u8> = (0..400_000u32).map(|i| (i % 253) as u8).collect();
    tree.write("video.mp4", &body);
    let o = start(&tree.root(), DeliveryRules::bulk(), |_| {});
    let t0 = Instant::now();
    let r = get(o.addr, "/video.mp4?mode=baseline&rate_kbps=1600&startup_s=0", "");
    let took = t0.elapsed();
    assert_eq!(r.body, body);
    assert!(took >= Duration::from_millis(1500) && took < Duration::from_millis(2500), "took {took:?}");
    let t0 = Instant::now();
    assert_eq!(get(o.addr, "/video.mp4", "").body, body);
    assert!(t0.elapsed() < Duration::from_millis(500));
}
