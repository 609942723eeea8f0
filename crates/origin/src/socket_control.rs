//! What the origin reads from and sets on one accepted TCP socket (Linux socket options).
//!
//! - `TCP_INFO` (`tcp_get_info`): `tcpi_rtt` (smoothed RTT, µs), `tcpi_snd_mss`,
//!   `tcpi_bytes_acked` (RFC 4898 tcpEStatsAppHCThruOctetsAcked), `tcpi_snd_cwnd` — Trickle's
//!   Algorithm 1 inputs.
//! - `SO_MAX_PACING_RATE` (bytes/s; enforced by TCP's internal pacing when no fq qdisc is
//!   present, `tcp_needs_internal_pacing`) — the pacing-cap mode and Trickle's fallback.
//! - `SO_COOKIE`: the socket's 64-bit cookie, the key the sock_ops clamp program looks up.
//! - `TCP_CONGESTION`: the `bbr` mode's congestion control.
//!
//! The fd is borrowed from the connection's `TcpStream`, which outlives every response body of
//! that connection (bodies are polled inside the connection's task); a call on a closed fd only
//! returns an error.

use std::os::fd::RawFd;
use std::time::Duration;

use tcpvideo_model::units::Bandwidth;

/// `SO_MAX_PACING_RATE` (asm-generic/socket.h).
const SO_MAX_PACING_RATE: libc::c_int = 47;
/// `SO_COOKIE` (asm-generic/socket.h).
const SO_COOKIE: libc::c_int = 57;

/// The TCP_INFO fields the delivery modes read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpInfoSample {
    pub srtt: Duration,
    pub snd_mss_bytes: u64,
    pub bytes_acked: u64,
    pub snd_cwnd_packets: u32,
    pub total_retrans: u32,
}

/// An accepted socket, by fd.
#[derive(Clone, Copy, Debug)]
pub struct SocketHandle {
    pub fd: RawFd,
}

impl SocketHandle {
    pub fn tcp_info(&self) -> std::io::Result<TcpInfoSample> {
        // SAFETY: tcp_info is plain old data; the kernel writes at most `len` bytes.
        let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
        let rc =
            unsafe { libc::getsockopt(self.fd, libc::IPPROTO_TCP, libc::TCP_INFO, &mut info as *mut _ as *mut libc::c_void, &mut len) };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(TcpInfoSample {
            srtt: Duration::from_micros(info.tcpi_rtt as u64),
            snd_mss_bytes: info.tcpi_snd_mss as u64,
            bytes_acked: info.tcpi_bytes_acked,
            snd_cwnd_packets: info.tcpi_snd_cwnd,
            total_retrans: info.tcpi_total_retrans,
        })
    }

    /// Cap the socket's pacing rate (`None`: lift the cap).
    pub fn set_max_pacing_rate(&self, rate: Option<Bandwidth>) -> std::io::Result<()> {
        // The option takes bytes/s; u64 since Linux 4.20, ~0 means unlimited.
        let value: u64 = rate.map_or(u64::MAX, |r| (r.bits_per_sec / 8).max(1));
        self.set_option(libc::SOL_SOCKET, SO_MAX_PACING_RATE, &value.to_ne_bytes())
    }

    pub fn cookie(&self) -> std::io::Result<u64> {
        let mut cookie: u64 = 0;
        let mut len = 8 as libc::socklen_t;
        // SAFETY: an 8-byte out parameter.
        let rc = unsafe { libc::getsockopt(self.fd, libc::SOL_SOCKET, SO_COOKIE, &mut cookie as *mut u64 as *mut libc::c_void, &mut len) };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(cookie)
    }

    pub fn set_congestion_control(&self, name: &str) -> std::io::Result<()> {
        self.set_option(libc::IPPROTO_TCP, libc::TCP_CONGESTION, name.as_bytes())
    }

    /// Fix the send buffer (the kernel doubles the value for its bookkeeping, `sock_setsockopt`).
    pub fn set_send_buffer(&self, bytes: usize) -> std::io::Result<()> {
        let v = bytes.min(i32::MAX as usize) as libc::c_int;
        self.set_option(libc::SOL_SOCKET, libc::SO_SNDBUF, &v.to_ne_bytes())
    }

    /// TCP_CORK (nginx's `tcp_nopush`): hold partial segments while set; clearing it sends what
    /// is queued at once.
    pub fn set_cork(&self, on: bool) -> std::io::Result<()> {
        let v: libc::c_int = on.into();
        self.set_option(libc::IPPROTO_TCP, libc::TCP_CORK, &v.to_ne_bytes())
    }

    fn set_option(&self, level: libc::c_int, name: libc::c_int, value: &[u8]) -> std::io::Result<()> {
        // SAFETY: value is a valid buffer of the given length.
        let rc = unsafe { libc::setsockopt(self.fd, level, name, value.as_ptr() as *const libc::c_void, value.len() as libc::socklen_t) };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn a_connected_socket_reports_its_mss_and_cookie_and_takes_a_pacing_cap() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        let s = SocketHandle { fd: server.as_raw_fd() };
        let info = s.tcp_info().unwrap();
        assert!(info.snd_mss_bytes > 500, "{info:?}");
        let c = SocketHandle { fd: client.as_raw_fd() };
        assert_ne!(s.cookie().unwrap(), c.cookie().unwrap());
        s.set_max_pacing_rate(Some(Bandwidth::from_mbps(1))).unwrap();
        s.set_max_pacing_rate(None).unwrap();
    }
}
