//! Test helpers: an origin on a background runtime, a temporary media root, and a raw HTTP/1.1
//! client (raw so a test can send any request-target byte for byte).
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tcpvideo_origin::{serve, ClampControl, DeliveryRules, Origin, ServedRoot};

/// A directory tree for one test, removed on drop: `root/` is served, `secret.txt` sits beside it.
pub struct MediaTree {
    pub base: PathBuf,
}

pub const SECRET: &str = "SECRET-OUTSIDE-THE-ROOT";

impl MediaTree {
    pub fn new(name: &str) -> MediaTree {
        let base = std::env::temp_dir().join(format!("tcpvideo-origin-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("root/hls")).unwrap();
        std::fs::create_dir_all(base.join("outside")).unwrap();
        std::fs::write(base.join("secret.txt"), SECRET).unwrap();
        std::fs::write(base.join("outside/secret.txt"), SECRET).unwrap();
        std::fs::write(base.join("root/hls/index.m3u8"), "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\nseg0.ts\n").unwrap();
        let seg: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(base.join("root/hls/seg0.ts"), &seg).unwrap();
        std::fs::write(base.join("root/manifest.mpd"), "<MPD/>").unwrap();
        std::os::unix::fs::symlink(base.join("secret.txt"), base.join("root/leak.txt")).unwrap();
        std::os::unix::fs::symlink(base.join("outside"), base.join("root/linkdir")).unwrap();
        MediaTree { base }
    }

    pub fn root(&self) -> PathBuf {
        self.base.join("root")
    }

    pub fn write(&self, rel: &str, bytes: &[u8]) {
        std::fs::write(self.root().join(rel), bytes).unwrap();
    }
}

impl Drop for MediaTree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

/// A running origin; stops (gracefully) on drop.
pub struct RunningOrigin {
    pub addr: SocketAddr,
    pub origin: Arc<Origin>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

pub fn start(root: &Path, rules: DeliveryRules, configure: impl FnOnce(&mut Origin)) -> RunningOrigin {
    let mut origin = Origin::new(ServedRoot::new(root).unwrap(), rules, ClampControl::PacingFallback);
    origin.drain = Duration::from_millis(200);
    configure(&mut origin);
    let origin = Arc::new(origin);
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let o = origin.clone();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            addr_tx.send(listener.local_addr().unwrap()).unwrap();
            serve(o, listener, async move {
                let _ = stop_rx.await;
            })
            .await;
        });
    });
    let addr = addr_rx.recv().unwrap();
    RunningOrigin { addr, origin, stop: Some(stop_tx), thread: Some(thread) }
}

impl Drop for RunningOrigin {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One parsed response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// Send `request` (a full request head) on `stream` and read one response; `head_only` for HEAD.
#[track_caller]
pub fn exchange(stream: &mut TcpStream, request: &str, head_only: bool) -> Reply {
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        let n = stream.read(&mut byte).unwrap();
        assert!(n == 1, "connection closed before the response head ended: {:?}", String::from_utf8_lossy(&buf));
        buf.push(byte[0]);
    }
    let head = String::from_utf8(buf).unwrap();
    let mut lines = head.split("\r\n");
    let status: u16 = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .filter(|l| !l.is_empty())
        .map(|l| l.split_once(':').map(|(k, v)| (k.trim().to_string(), v.trim().to_string())).unwrap())
        .collect();
    let mut reply = Reply { status, headers, body: Vec::new() };
    if !head_only {
        let len: usize = reply.header("content-length").map_or(0, |v| v.parse().unwrap());
        reply.body = vec![0u8; len];
        stream.read_exact(&mut reply.body).unwrap();
    }
    reply
}

/// GET `target` on a fresh connection.
#[track_caller]
pub fn get(addr: SocketAddr, target: &str, extra_headers: &str) -> Reply {
    let mut s = TcpStream::connect(addr).unwrap();
    exchange(&mut s, &format!("GET {target} HTTP/1.1\r\nHost: origin\r\n{extra_headers}\r\n"), false)
}
