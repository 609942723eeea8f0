//! The fetch task writing segment chunks straight to waiting receivers' sockets (`conn_socket`),
//! on loopback against the scripted source: a receiver that stops reading is handed back to its
//! connection task and still gets every byte in order; a keep-alive connection serves several
//! direct responses back to back with correct framing.

mod common;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn sha(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).into()
}

/// Read one response with a Content-Length from a keep-alive connection: (status, body).
async fn read_response(stream: &mut TcpStream) -> (u16, Vec<u8>) {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        assert_eq!(stream.read(&mut byte).await.unwrap(), 1, "connection closed inside the head: {buf:?}");
        buf.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&buf).to_string();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap()))
        .expect("a Content-Length");
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).await.unwrap();
    (status, body)
}

async fn send_get(stream: &mut TcpStream, path: &str) {
    stream.write_all(format!("GET {path} HTTP/1.1\r\nHost: edge\r\n\r\n").as_bytes()).await.unwrap();
}

/// Hold the source's segment bodies until `direct` readers in all have registered for direct
/// writes at the edge (their heads flushed, nothing received yet), then let one body through.
async fn release_when_registered(edge: &RunningEdge, gate: &tokio::sync::Semaphore, direct: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while edge.edge.metrics.direct_readers.load(Ordering::Relaxed) < direct && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    gate.add_permits(1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_that_stops_reading_is_handed_back_and_still_gets_every_byte_in_order() {
    // 16 MB: more than loopback's send plus receive buffers hold, so the direct write must stop.
    let len = 16 << 20;
    let source = Source::start(5, len, 0).await;
    let edge = start_edge_on_own_runtime(&source, |c| c.body_idle_timeout = Duration::from_secs(20)).await;
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    *source.state.body_gate.lock().unwrap() = Some(gate.clone());
    let mut slow = TcpStream::connect(edge.addr).await.unwrap();
    send_get(&mut slow, "/live/seg5.ts").await;
    let fast = tokio::spawn(async move { get(edge.addr, "/live/seg5.ts", &[]).await });
    release_when_registered(&edge, &gate, 2).await;
    let fast = fast.await.unwrap();
    assert!(fast.complete);
    let expected = sha(&segment_body(5, len));
    assert_eq!(sha(&fast.body), expected);
    assert_eq!(edge.edge.metrics.direct_readers.load(Ordering::Relaxed), 2, "both waiters should have gone direct");
    assert!(edge.edge.metrics.direct_handbacks.load(Ordering::Relaxed) >= 1, "the non-reading waiter was never handed back");
    // Only now does the slow receiver read: the rest comes from its connection task.
    let (status, body) = read_response(&mut slow).await;
    assert_eq!(status, 200);
    assert_eq!(sha(&body), expected, "the slow receiver's body is not the source's");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keep_alive_connection_gets_direct_responses_back_to_back_with_correct_framing() {
    let len = 300_000;
    let source = Source::start(9, len, 0).await;
    let edge = start_edge_on_own_runtime(&source, |_| {}).await;
    let mut conn = TcpStream::connect(edge.addr).await.unwrap();
    for (i, n) in [7u64, 8, 9].into_iter().enumerate() {
        // A fresh gate each time (the source returns its permit, so an opened gate stays open).
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        *source.state.body_gate.lock().unwrap() = Some(gate.clone());
        send_get(&mut conn, &format!("/live/seg{n}.ts")).await;
        release_when_registered(&edge, &gate, i as u64 + 1).await;
        let (status, body) = read_response(&mut conn).await;
        assert_eq!(status, 200);
        assert_eq!(sha(&body), sha(&segment_body(n, len)), "seg{n}: wrong bytes on the kept-alive connection");
    }
    assert_eq!(edge.edge.metrics.direct_readers.load(Ordering::Relaxed), 3);
    // A cached copy on the same connection afterwards goes through hyper as before.
    send_get(&mut conn, "/live/seg8.ts").await;
    let (status, body) = read_response(&mut conn).await;
    assert_eq!((status, sha(&body)), (200, sha(&segment_body(8, len))));
}
