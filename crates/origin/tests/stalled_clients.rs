//! 500 clients that request a large file and never read: the origin's memory stays bounded.
//!
//! The bound stated in `server.rs`: bodies go from the page cache to the socket by sendfile(2),
//! so a stalled connection holds no body bytes in user memory, only its request-head buffer (at
//! most 8 KiB) and its task's state (a few KiB). This test allows 32 KiB per stalled connection
//! (16 MB for 500; measured 8 KiB, against 75 KiB when bodies went through hyper's buffers) of
//! growth in the process's resident set, measured after every connection has had its first bytes written.
//! The origin runs with a 64 KiB SO_SNDBUF (`--sndbuf-kib 64`) so the kernel's share stays
//! small too; without it Linux autotunes each stalled socket's buffer to ~2.6 MB of kernel memory
//! on loopback (tcp_wmem[2] = 4 MB), which `tcp_mem` bounds, not the origin.
//! (Its own binary: RSS is per process, and other tests must not run beside it.)

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::os::fd::FromRawFd;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::{start, MediaTree};
use tcpvideo_origin::DeliveryRules;

const CLIENTS: usize = 500;
const BOUND_PER_CONNECTION: u64 = 32 * 1024;

fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).unwrap().trim().trim_end_matches("kB").trim().parse().unwrap();
    kb * 1024
}

/// A client socket with a 4 KiB receive buffer (so the kernel does not soak up megabytes per
/// connection and the origin's own buffers are what fills).
fn small_window_client(addr: std::net::SocketAddr) -> TcpStream {
    let std::net::SocketAddr::V4(v4) = addr else { panic!("IPv4 expected") };
    // SAFETY: plain socket calls on a fd we own from here on.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0);
        let size: libc::c_int = 4096;
        libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, &size as *const _ as *const libc::c_void, 4);
        let sa = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: v4.port().to_be(),
            sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(v4.ip().octets()) },
            sin_zero: [0; 8],
        };
        let rc = libc::connect(fd, &sa as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_in>() as u32);
        assert_eq!(rc, 0, "connect: {}", std::io::Error::last_os_error());
        TcpStream::from_raw_fd(fd)
    }
}

#[test]
fn five_hundred_stalled_clients_grow_memory_by_less_than_32_kib_each() {
    // SAFETY: raising our own soft fd limit to the hard limit.
    unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        lim.rlim_cur = lim.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
    }
    let tree = MediaTree::new("stalled");
    let big: Vec<u8> = (0..2_000_000u32).map(|i| (i % 241) as u8).collect();
    tree.write("big.mp4", &big);
    drop(big);
    let o = start(&tree.root(), DeliveryRules::bulk(), |o| o.send_buffer_bytes = Some(64 * 1024));
    // Warm up the runtime and allocator with a few full downloads.
    for _ in 0..3 {
        let _ = common::get(o.addr, "/hls/seg0.ts", "");
    }
    let before = rss_bytes();
    let mut clients = Vec::with_capacity(CLIENTS);
    for _ in 0..CLIENTS {
        let mut c = small_window_client(o.addr);
        c.write_all(b"GET /big.mp4 HTTP/1.1\r\nHost: o\r\n\r\n").unwrap();
        clients.push(c);
    }
    // Wait until every response is under way and blocked (bytes handed over stop growing).
    let t0 = Instant::now();
    let mut last = 0;
    loop {
        std::thread::sleep(Duration::from_millis(300));
        let now = o.origin.metrics.body_bytes.load(Ordering::Relaxed);
        let open = o.origin.metrics.connections_open.load(Ordering::Relaxed);
        if (now == last && open as usize >= CLIENTS) || t0.elapsed() > Duration::from_secs(20) {
            break;
        }
        last = now;
    }
    let grown = rss_bytes().saturating_sub(before);
    let per = grown / CLIENTS as u64;
    eprintln!(
        "500 stalled clients: RSS +{:.1} MB ({} KiB per connection), {} body bytes handed over",
        grown as f64 / 1e6,
        per / 1024,
        last
    );
    assert_eq!(o.origin.metrics.connections_open.load(Ordering::Relaxed), CLIENTS as u64);
    assert!(per < BOUND_PER_CONNECTION, "RSS grew {} KiB per stalled connection", per / 1024);
    // And nothing was sent in full to anyone: they are really stalled.
    assert!(last < CLIENTS as u64 * 2_000_000 / 2, "{last}");
    drop(clients);
}
