//! The sock_ops program really holds a socket's cwnd at the clamp the origin writes into its map,
//! and lifting the clamp lets it grow again (root only; without root or BPF it says why and
//! passes, as the repository's other root tests skip). Its own binary: loading moves the whole
//! test process into the program's cgroup.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;

use tcpvideo_origin::socket_control::SocketHandle;
use tcpvideo_origin::ClampProgram;

/// Write `bytes` to `s`, returning the largest snd_cwnd seen after the first MiB.
fn push(s: &mut TcpStream, bytes: usize) -> u32 {
    let handle = SocketHandle { fd: s.as_raw_fd() };
    let chunk = vec![7u8; 64 * 1024];
    let mut max_cwnd = 0;
    for i in 0..bytes / chunk.len() {
        s.write_all(&chunk).unwrap();
        if i >= 16 {
            max_cwnd = max_cwnd.max(handle.tcp_info().unwrap().snd_cwnd_packets);
        }
    }
    max_cwnd
}

#[test]
fn the_sock_ops_program_holds_a_real_sockets_cwnd_at_the_clamp_in_its_map() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root");
        return;
    }
    let program = match ClampProgram::load() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("skipped: {e}");
            return;
        }
    };
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    // CUBIC grows cwnd without bound on a lossless loopback, so only the clamp can hold it. An
    // Ethernet-sized MSS (loopback's is ~64 KiB) keeps the sender cwnd-limited: Linux lowers a
    // cwnd above a new clamp at the next congestion-avoidance step, which a sender that is not
    // cwnd-limited never takes.
    SocketHandle { fd: listener.as_raw_fd() }.set_congestion_control("cubic").unwrap();
    let mss: libc::c_int = 1448;
    // SAFETY: a c_int option on a socket we own.
    let rc =
        unsafe { libc::setsockopt(listener.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_MAXSEG, &mss as *const _ as *const libc::c_void, 4) };
    assert_eq!(rc, 0);
    let addr = listener.local_addr().unwrap();
    let reader = std::thread::spawn(move || {
        let mut c = TcpStream::connect(addr).unwrap();
        let mut buf = vec![0u8; 1 << 20];
        let mut total = 0usize;
        while let Ok(n) = c.read(&mut buf) {
            if n == 0 {
                break;
            }
            total += n;
        }
        total
    });
    let (mut server, _) = listener.accept().unwrap();
    let cookie = SocketHandle { fd: server.as_raw_fd() }.cookie().unwrap();
    program.set(cookie, Some(4)).unwrap();
    let clamped = push(&mut server, 24 << 20);
    program.set(cookie, None).unwrap();
    let lifted = push(&mut server, 24 << 20);
    program.forget(cookie);
    drop(server);
    assert_eq!(reader.join().unwrap(), 48 << 20);
    eprintln!("max cwnd: clamped at 4 → {clamped}, lifted → {lifted}");
    assert!(clamped <= 4, "cwnd {clamped} above the clamp of 4");
    assert!(lifted > 8, "cwnd stayed at {lifted} after the clamp was lifted");
}
