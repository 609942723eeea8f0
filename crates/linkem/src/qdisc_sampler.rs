//! Sampling a qdisc's backlog every millisecond over rtnetlink: the bottleneck queue of
//! tcpvideo's real-Linux runs (python/tcpvideo/linux_dumbbell.py).
//!
//! A Linux qdisc keeps its queue length (packets, `qlen`) and backlog (bytes) and counts drops and
//! overlimits (include/uapi/linux/gen_stats.h `struct gnet_stats_queue`), but reports neither a
//! time average nor a maximum. `tc -s qdisc show` prints the counters once per process start
//! (milliseconds each); this sampler asks the kernel directly, in a loop on its own thread:
//!
//! * an RTM_GETQDISC dump request (NLM_F_DUMP, `struct tcmsg` with the interface index) on a
//!   NETLINK_ROUTE socket created inside the qdisc's network namespace (`netns::enter`);
//! * of the RTM_NEWQDISC replies, the one for that interface whose parent is TC_H_ROOT; its
//!   TCA_STATS2 nest holds TCA_STATS_BASIC (bytes, packets sent) and TCA_STATS_QUEUE (qlen,
//!   backlog, drops, requeues, overlimits) — the numbers `tc -s` prints (net/sched/sch_api.c
//!   `tc_fill_qdisc`);
//! * samples are taken at absolute times start + k * interval (clock_nanosleep TIMER_ABSTIME on
//!   CLOCK_MONOTONIC, timer slack 1 us); the time actually read after each reply is stored with
//!   the sample, so a late sample (a loaded machine) is visible and a time-weighted mean can use
//!   the real spacing. A sample costs one netlink round trip (~10-30 us of CPU).
//!
//! For tbf, `qlen` counts the packets waiting in its inner bfifo (the packet being handed to the
//! device has left it), i.e. the "packets waiting" that ns-3's PacketsInQueue and tcpvideo's
//! queue length report.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::netns;

// include/uapi/linux/{netlink,rtnetlink,pkt_sched,gen_stats}.h
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_DUMP: u16 = 0x300;
const RTM_NEWQDISC: u16 = 36;
const RTM_GETQDISC: u16 = 38;
const TC_H_ROOT: u32 = 0xFFFF_FFFF;
const TCA_STATS2: u16 = 7;
const TCA_STATS_BASIC: u16 = 1;
const TCA_STATS_QUEUE: u16 = 3;
const NLA_TYPE_MASK: u16 = 0x3fff;

#[derive(Default, Clone, Copy, Debug)]
pub struct Sample {
    /// CLOCK_MONOTONIC time the reply was read, ns.
    pub t_ns: u64,
    /// packets waiting
    pub qlen: u32,
    /// bytes waiting
    pub backlog: u32,
    /// cumulative counters of the qdisc
    pub drops: u32,
    pub overlimits: u32,
    pub requeues: u32,
    pub bytes: u64,
    pub packets: u32,
}

fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_ne_bytes([b[o], b[o + 1]])
}
fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_ne_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}
fn u64_at(b: &[u8], o: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[o..o + 8]);
    u64::from_ne_bytes(x)
}

/// Iterate over the rtattrs in `b`: (type without flags, payload).
fn attrs(b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    let mut off = 0usize;
    std::iter::from_fn(move || {
        if off + 4 > b.len() {
            return None;
        }
        let len = u16_at(b, off) as usize;
        let ty = u16_at(b, off + 2) & NLA_TYPE_MASK;
        if len < 4 || off + len > b.len() {
            return None;
        }
        let payload = &b[off + 4..off + len];
        off += (len + 3) & !3;
        Some((ty, payload))
    })
}

/// A NETLINK_ROUTE socket asking for one interface's root qdisc statistics.
pub struct QdiscReader {
    fd: i32,
    ifindex: i32,
    seq: u32,
    buf: Vec<u8>,
}

impl QdiscReader {
    /// Open in the calling thread's namespace.
    pub fn open(ifname: &str) -> io::Result<Self> {
        let c = std::ffi::CString::new(ifname)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in name"))?;
        // SAFETY: plain syscalls with valid arguments.
        unsafe {
            let ifindex = libc::if_nametoindex(c.as_ptr());
            if ifindex == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("no interface {ifname}"),
                ));
            }
            let fd = libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::NETLINK_ROUTE,
            );
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(QdiscReader {
                fd,
                ifindex: ifindex as i32,
                seq: 0,
                buf: vec![0u8; 65536],
            })
        }
    }

    pub fn sample(&mut self) -> io::Result<Sample> {
        self.seq = self.seq.wrapping_add(1);
        // nlmsghdr (16) + tcmsg (20)
        let mut req = [0u8; 36];
        req[0..4].copy_from_slice(&36u32.to_ne_bytes());
        req[4..6].copy_from_slice(&RTM_GETQDISC.to_ne_bytes());
        req[6..8].copy_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
        req[8..12].copy_from_slice(&self.seq.to_ne_bytes());
        req[20..24].copy_from_slice(&self.ifindex.to_ne_bytes()); // tcm_ifindex
                                                                  // SAFETY: sending our 36-byte buffer on our socket (kernel address by default).
        let mut sa: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        sa.nl_family = libc::AF_NETLINK as u16;
        let r = unsafe {
            libc::sendto(
                self.fd,
                req.as_ptr() as *const libc::c_void,
                req.len(),
                0,
                &sa as *const libc::sockaddr_nl as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_nl>() as u32,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut found: Option<Sample> = None;
        loop {
            // SAFETY: receiving into our buffer.
            let n = unsafe {
                libc::recv(
                    self.fd,
                    self.buf.as_mut_ptr() as *mut libc::c_void,
                    self.buf.len(),
                    0,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            let b = &self.buf[..n as usize];
            let mut off = 0usize;
            let mut done = false;
            while off + 16 <= b.len() {
                let len = u32_at(b, off) as usize;
                let ty = u16_at(b, off + 4);
                let seq = u32_at(b, off + 8);
                if len < 16 || off + len > b.len() {
                    break;
                }
                let msg = &b[off..off + len];
                off += (len + 3) & !3;
                if seq != self.seq {
                    continue; // a late reply to an earlier request
                }
                match ty {
                    NLMSG_DONE => done = true,
                    NLMSG_ERROR => {
                        let code = if msg.len() >= 20 {
                            u32_at(msg, 16) as i32
                        } else {
                            0
                        };
                        if code != 0 {
                            return Err(io::Error::from_raw_os_error(-code));
                        }
                        done = true;
                    }
                    RTM_NEWQDISC if msg.len() >= 36 => {
                        let ifindex = u32_at(msg, 20) as i32;
                        let parent = u32_at(msg, 28);
                        if ifindex == self.ifindex && parent == TC_H_ROOT {
                            found = Some(parse_stats(&msg[36..]));
                        }
                    }
                    _ => {}
                }
            }
            if done {
                break;
            }
        }
        let mut s = found.ok_or_else(|| {
            io::Error::new(io::ErrorKind::NotFound, "no root qdisc on the interface")
        })?;
        s.t_ns = now_ns();
        Ok(s)
    }
}

impl Drop for QdiscReader {
    fn drop(&mut self) {
        // SAFETY: our socket, closed once.
        unsafe { libc::close(self.fd) };
    }
}

fn parse_stats(a: &[u8]) -> Sample {
    let mut s = Sample::default();
    for (ty, p) in attrs(a) {
        if ty != TCA_STATS2 {
            continue;
        }
        for (ty2, q) in attrs(p) {
            match ty2 {
                TCA_STATS_BASIC if q.len() >= 12 => {
                    s.bytes = u64_at(q, 0);
                    s.packets = u32_at(q, 8);
                }
                TCA_STATS_QUEUE if q.len() >= 20 => {
                    s.qlen = u32_at(q, 0);
                    s.backlog = u32_at(q, 4);
                    s.drops = u32_at(q, 8);
                    s.requeues = u32_at(q, 12);
                    s.overlimits = u32_at(q, 16);
                }
                _ => {}
            }
        }
    }
    s
}

fn sleep_until(t_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (t_ns / 1_000_000_000) as _,
        tv_nsec: (t_ns % 1_000_000_000) as _,
    };
    // SAFETY: valid timespec; EINTR just ends the sleep early (the next sample is then early).
    unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    };
}

/// The samples, and why sampling ended early (None: stopped).
pub type Outcome = (Vec<Sample>, Option<String>);

/// One sample of `ifname`'s root qdisc now, in namespace file `netns` (None: ours).
pub fn sample_once(ifname: &str, netns: Option<&str>) -> io::Result<Sample> {
    let ifname = ifname.to_string();
    netns::run_in(netns.map(str::to_string), move || {
        QdiscReader::open(&ifname)?.sample()
    })
}

/// A sampling thread: `start` returns once the first sample succeeded, `stop` returns them all.
pub struct QdiscSampler {
    ifname: String,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<Outcome, String>>>,
}

impl QdiscSampler {
    /// Sample `ifname` in namespace file `netns` every `interval` on a native thread.
    pub fn start(
        ifname: &str,
        netns: Option<&str>,
        interval: std::time::Duration,
    ) -> Result<QdiscSampler, String> {
        let interval = interval.as_nanos() as u64;
        if !(10_000..=10_000_000_000).contains(&interval) {
            return Err("interval must be within [10 us, 10 s]".into());
        }
        let stop = Arc::new(AtomicBool::new(false));
        let (name, ns, stop2) = (ifname.to_string(), netns.map(str::to_string), stop.clone());
        let (tx, rx) = std::sync::mpsc::channel::<Result<(), String>>();
        let h = std::thread::Builder::new()
            .name("tcpvideo-qdisc-sampler".into())
            .spawn(move || -> Result<Outcome, String> {
                let setup = (|| -> io::Result<QdiscReader> {
                    if let Some(p) = ns.as_deref() {
                        netns::enter(p)?;
                    }
                    // SAFETY: prctl on this thread.
                    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
                    QdiscReader::open(&name)
                })();
                let mut rd = match setup {
                    Ok(r) => r,
                    Err(e) => {
                        let _ = tx.send(Err(e.to_string()));
                        return Err(e.to_string());
                    }
                };
                let mut out: Vec<Sample> = Vec::with_capacity(1 << 17);
                match rd.sample() {
                    Ok(s) => out.push(s),
                    Err(e) => {
                        let _ = tx.send(Err(e.to_string()));
                        return Err(e.to_string());
                    }
                }
                let _ = tx.send(Ok(()));
                let t0 = out[0].t_ns;
                let mut k = 1u64;
                while !stop2.load(Ordering::Relaxed) {
                    let target = t0 + k * interval;
                    let now = now_ns();
                    if target > now {
                        sleep_until(target);
                    } else {
                        // fell behind (a loaded machine): skip the missed slots, keep the grid
                        k = (now - t0) / interval;
                    }
                    k += 1;
                    match rd.sample() {
                        Ok(s) => out.push(s),
                        Err(e) => return Ok((out, Some(e.to_string()))),
                    }
                }
                Ok((out, None))
            })
            .map_err(|e| e.to_string())?;
        match rx
            .recv()
            .unwrap_or_else(|_| Err("sampler thread ended".into()))
        {
            Ok(()) => Ok(QdiscSampler {
                ifname: ifname.to_string(),
                stop,
                thread: Some(h),
            }),
            Err(e) => {
                let _ = h.join();
                Err(format!("qdisc sampler on {ifname}: {e}"))
            }
        }
    }

    /// Stop and return every sample, with why sampling ended early (None: stopped).
    pub fn stop(mut self) -> Result<Outcome, String> {
        self.stop.store(true, Ordering::Relaxed);
        let h = self.thread.take().ok_or("not running")?;
        h.join()
            .unwrap_or_else(|_| Err("sampler thread panicked".into()))
            .map_err(|e| format!("qdisc sampler on {}: {e}", self.ifname))
    }
}

impl Drop for QdiscSampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.thread.take() {
            let _ = h.join();
        }
    }
}
