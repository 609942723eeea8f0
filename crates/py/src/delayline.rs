//! A user-space delay line between two TUN devices: the "propagation delay" of tcpvideo's
//! real-Linux runs, because this machine's kernel has no netem (shared/anchors/machine.md).
//!
//! What it does. Two TUN file descriptors, A and B (`tun.rs`), usually in two network
//! namespaces. Every IPv4 packet read from A is written to B after a one-way delay chosen by an
//! address of the packet, and the same from B to A with its own table:
//!
//! * A -> B looks up the packet's address `key_a_to_b` ("dst" or "src") in `a_to_b`;
//! * B -> A looks up `key_b_to_a` in `b_to_a`;
//! * an address absent from the table (and any non-IPv4 packet) gets that direction's default.
//!
//! With the clients behind B, keying A -> B by destination and B -> A by source gives each client
//! its own round-trip time, like the per-client access links of seed 004's dumbbell.
//!
//! How. One thread, no locks on the packet path:
//!
//! * packets are kept in *lanes*, one FIFO per distinct delay value per direction. Packets of one
//!   lane leave in arrival order, so a lane is time-ordered by construction and the earliest
//!   packet of all is the smallest lane head (a handful of lanes: a linear scan beats a heap).
//!   Packets of one address never overtake each other (no reordering a real link would not do);
//! * packet bytes live in a pool of fixed 2048-byte slots recycled through a free list: after the
//!   warm-up (the most packets ever held at once) nothing is allocated per packet;
//! * the thread blocks in ppoll(2) on both fds and an eventfd (the stop signal) with a timeout
//!   equal to the time left until the earliest release, in nanoseconds (ppoll takes a timespec;
//!   epoll_wait's millisecond timeout would be too coarse), and with the thread's timer slack set
//!   to 1 us (prctl PR_SET_TIMERSLACK; the default 50 us would delay every wake-up);
//! * the arrival time of a packet is taken when it is read (CLOCK_MONOTONIC), after at most
//!   `READ_BATCH` reads per fd the loop releases what is due, so a burst on one side does not hold
//!   back the other;
//! * optional SCHED_FIFO priority (`rt_priority` > 0, needs root): on a loaded machine the release
//!   time is then set by the timer, not by the CFS scheduler.
//!
//! Measured per direction and returned by `stats()`/`stop()`: packets and bytes forwarded, packets
//! the destination refused (a write error: counted and dropped), the most packets held at once,
//! and the *lateness* of each release (time of the write minus due time): max, mean and a
//! histogram in 10 us buckets up to 10 ms (percentiles). Lateness is what the line adds beyond the
//! configured delay; the kernel's own path (the TUN devices, the stacks) adds a few tens of us
//! more, which a ping through the line shows (bench/cc_vs_linux.py).

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Bytes per packet slot: an MTU-1500 IP packet fits; a read that fills the slot was truncated.
const SLOT: usize = 2048;
/// Reads per fd before the loop looks at due packets again.
const READ_BATCH: usize = 64;
/// Lateness histogram: 10 us buckets, the last one collects everything >= 10 ms.
const LAT_BUCKET_NS: u64 = 10_000;
const LAT_BUCKETS: usize = 1001;

fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Counters of one direction, readable while the line runs.
struct DirStats {
    packets: AtomicU64,
    bytes: AtomicU64,
    write_errors: AtomicU64,
    truncated: AtomicU64,
    non_ipv4: AtomicU64,
    held_max: AtomicU64,
    late_max_ns: AtomicU64,
    late_sum_ns: AtomicU64,
    late_hist: Vec<AtomicU64>,
}

impl DirStats {
    fn new() -> Self {
        let z = || AtomicU64::new(0);
        DirStats {
            packets: z(),
            bytes: z(),
            write_errors: z(),
            truncated: z(),
            non_ipv4: z(),
            held_max: z(),
            late_max_ns: z(),
            late_sum_ns: z(),
            late_hist: (0..LAT_BUCKETS).map(|_| z()).collect(),
        }
    }

    fn percentile_us(&self, q: f64) -> Option<f64> {
        let counts: Vec<u64> = self.late_hist.iter().map(|c| c.load(Relaxed)).collect();
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return None;
        }
        let want = (q * total as f64).ceil().max(1.0) as u64;
        let mut acc = 0;
        for (i, c) in counts.iter().enumerate() {
            acc += c;
            if acc >= want {
                // upper edge of the bucket: a conservative (never optimistic) percentile
                return Some(((i as u64 + 1) * LAT_BUCKET_NS) as f64 / 1e3);
            }
        }
        None
    }

    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        let n = self.packets.load(Relaxed);
        d.set_item("packets", n)?;
        d.set_item("bytes", self.bytes.load(Relaxed))?;
        d.set_item("write_errors", self.write_errors.load(Relaxed))?;
        d.set_item("truncated", self.truncated.load(Relaxed))?;
        d.set_item("non_ipv4", self.non_ipv4.load(Relaxed))?;
        d.set_item("held_max", self.held_max.load(Relaxed))?;
        d.set_item("late_max_us", self.late_max_ns.load(Relaxed) as f64 / 1e3)?;
        let mean = if n > 0 {
            self.late_sum_ns.load(Relaxed) as f64 / n as f64 / 1e3
        } else {
            0.0
        };
        d.set_item("late_mean_us", mean)?;
        d.set_item("late_p50_us", self.percentile_us(0.50))?;
        d.set_item("late_p99_us", self.percentile_us(0.99))?;
        d.set_item("late_p999_us", self.percentile_us(0.999))?;
        Ok(d)
    }
}

#[derive(Clone, Copy)]
struct Pkt {
    due: u64,
    slot: u32,
    len: u32,
}

struct Lane {
    delay_ns: u64,
    q: VecDeque<Pkt>,
}

/// Which address of an IPv4 header selects the delay.
#[derive(Clone, Copy)]
enum Key {
    Src,
    Dst,
}

struct Direction {
    from: i32,
    to: i32,
    key: Key,
    lanes: Vec<Lane>,
    by_addr: HashMap<u32, usize>,
    default_lane: usize,
    held: u64,
    stats: Arc<DirStats>,
}

impl Direction {
    fn new(
        from: i32,
        to: i32,
        key: Key,
        table: &HashMap<u32, u64>,
        default_ns: u64,
        stats: Arc<DirStats>,
    ) -> Self {
        let mut lanes: Vec<Lane> = Vec::new();
        let lane_of = |d: u64, lanes: &mut Vec<Lane>| -> usize {
            if let Some(i) = lanes.iter().position(|l| l.delay_ns == d) {
                return i;
            }
            lanes.push(Lane {
                delay_ns: d,
                q: VecDeque::with_capacity(1024),
            });
            lanes.len() - 1
        };
        let default_lane = lane_of(default_ns, &mut lanes);
        let mut by_addr = HashMap::with_capacity(table.len());
        for (&a, &d) in table {
            by_addr.insert(a, lane_of(d, &mut lanes));
        }
        Direction {
            from,
            to,
            key,
            lanes,
            by_addr,
            default_lane,
            held: 0,
            stats,
        }
    }

    fn lane_for(&self, pkt: &[u8]) -> usize {
        if pkt.len() < 20 || pkt[0] >> 4 != 4 {
            self.stats.non_ipv4.fetch_add(1, Relaxed);
            return self.default_lane;
        }
        let off = match self.key {
            Key::Src => 12,
            Key::Dst => 16,
        };
        let a = u32::from_be_bytes([pkt[off], pkt[off + 1], pkt[off + 2], pkt[off + 3]]);
        *self.by_addr.get(&a).unwrap_or(&self.default_lane)
    }

    /// Earliest due time of the packets this direction holds.
    fn next_due(&self) -> Option<(u64, usize)> {
        let mut best: Option<(u64, usize)> = None;
        for (i, l) in self.lanes.iter().enumerate() {
            if let Some(p) = l.q.front() {
                if best.map_or(true, |(d, _)| p.due < d) {
                    best = Some((p.due, i));
                }
            }
        }
        best
    }
}

/// Fixed-size packet buffers recycled through a free list.
struct Pool {
    bufs: Vec<Box<[u8; SLOT]>>,
    free: Vec<u32>,
}

impl Pool {
    fn take(&mut self) -> u32 {
        if let Some(i) = self.free.pop() {
            return i;
        }
        self.bufs.push(Box::new([0u8; SLOT]));
        self.free.reserve(self.bufs.len()); // keeps `give` allocation-free
        (self.bufs.len() - 1) as u32
    }
    fn give(&mut self, i: u32) {
        self.free.push(i);
    }
}

struct Config {
    fd_a: i32,
    fd_b: i32,
    a_to_b: HashMap<u32, u64>,
    b_to_a: HashMap<u32, u64>,
    default_a_to_b: u64,
    default_b_to_a: u64,
    key_a_to_b: Key,
    key_b_to_a: Key,
    rt_priority: i32,
}

fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// The forwarding loop; returns when the eventfd `stop_fd` becomes readable, or on a fd error.
fn run(cfg: Config, stop_fd: i32, stats: [Arc<DirStats>; 2]) -> Result<Vec<String>, String> {
    let mut notes = Vec::new();
    // SAFETY: prctl/sched_setscheduler on the calling thread with valid arguments.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
        if cfg.rt_priority > 0 {
            let p = libc::sched_param {
                sched_priority: cfg.rt_priority,
            };
            if libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) != 0 {
                notes.push(format!(
                    "SCHED_FIFO {} refused: {}",
                    cfg.rt_priority,
                    io::Error::last_os_error()
                ));
            }
        }
    }
    let [sa, sb] = stats;
    let mut dirs = [
        Direction::new(
            cfg.fd_a,
            cfg.fd_b,
            cfg.key_a_to_b,
            &cfg.a_to_b,
            cfg.default_a_to_b,
            sa,
        ),
        Direction::new(
            cfg.fd_b,
            cfg.fd_a,
            cfg.key_b_to_a,
            &cfg.b_to_a,
            cfg.default_b_to_a,
            sb,
        ),
    ];
    let mut pool = Pool {
        bufs: Vec::with_capacity(4096),
        free: Vec::with_capacity(4096),
    };
    let mut pfd = [
        libc::pollfd {
            fd: cfg.fd_a,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: cfg.fd_b,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: stop_fd,
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    loop {
        // 1. release every packet that is due, earliest first
        loop {
            let next = dirs
                .iter()
                .enumerate()
                .filter_map(|(k, d)| d.next_due().map(|(due, lane)| (due, k, lane)))
                .min_by_key(|x| x.0);
            let Some((due, k, lane)) = next else { break };
            let now = now_ns();
            if due > now {
                break;
            }
            let d = &mut dirs[k];
            let p = d.lanes[lane].q.pop_front().expect("lane head exists");
            d.held -= 1;
            let buf = &pool.bufs[p.slot as usize];
            // SAFETY: buf holds p.len <= SLOT initialized bytes.
            let w =
                unsafe { libc::write(d.to, buf.as_ptr() as *const libc::c_void, p.len as usize) };
            let late = now - due;
            let s = &d.stats;
            if w < 0 {
                s.write_errors.fetch_add(1, Relaxed);
            } else {
                s.packets.fetch_add(1, Relaxed);
                s.bytes.fetch_add(p.len as u64, Relaxed);
                s.late_sum_ns.fetch_add(late, Relaxed);
                s.late_max_ns.fetch_max(late, Relaxed);
                s.late_hist[((late / LAT_BUCKET_NS) as usize).min(LAT_BUCKETS - 1)]
                    .fetch_add(1, Relaxed);
            }
            pool.give(p.slot);
        }
        // 2. wait for a packet, the stop signal, or the next release
        let next = dirs.iter().filter_map(|d| d.next_due()).map(|x| x.0).min();
        let ts;
        let tsp = match next {
            Some(due) => {
                let left = due.saturating_sub(now_ns());
                ts = libc::timespec {
                    tv_sec: (left / 1_000_000_000) as _,
                    tv_nsec: (left % 1_000_000_000) as _,
                };
                &ts as *const libc::timespec
            }
            None => std::ptr::null(),
        };
        // SAFETY: pfd is a valid array of 3 pollfds; tsp is null or points to `ts`.
        let r = unsafe { libc::ppoll(pfd.as_mut_ptr(), 3, tsp, std::ptr::null()) };
        if r < 0 {
            if errno() == libc::EINTR {
                continue;
            }
            return Err(format!("ppoll: {}", io::Error::last_os_error()));
        }
        if pfd[2].revents != 0 {
            return Ok(notes);
        }
        // 3. read what arrived, stamping each packet with its arrival time
        for k in 0..2 {
            let ev = pfd[k].revents;
            if ev & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0 {
                return Err(format!(
                    "tun fd {} failed (revents {ev:#x}): device or namespace gone?",
                    pfd[k].fd
                ));
            }
            if ev & libc::POLLIN == 0 {
                continue;
            }
            let d = &mut dirs[k];
            for _ in 0..READ_BATCH {
                let slot = pool.take();
                let buf = &mut pool.bufs[slot as usize];
                // SAFETY: reading at most SLOT bytes into a SLOT-byte buffer.
                let n = unsafe { libc::read(d.from, buf.as_mut_ptr() as *mut libc::c_void, SLOT) };
                if n <= 0 {
                    pool.give(slot);
                    let e = errno();
                    if n < 0 && e != libc::EAGAIN && e != libc::EINTR {
                        return Err(format!(
                            "read tun fd {}: {}",
                            d.from,
                            io::Error::from_raw_os_error(e)
                        ));
                    }
                    break;
                }
                let t = now_ns();
                let n = n as usize;
                if n >= SLOT {
                    d.stats.truncated.fetch_add(1, Relaxed);
                    pool.give(slot);
                    continue;
                }
                let lane = d.lane_for(&buf[..n]);
                let l = &mut d.lanes[lane];
                l.q.push_back(Pkt {
                    due: t + l.delay_ns,
                    slot,
                    len: n as u32,
                });
                d.held += 1;
                d.stats.held_max.fetch_max(d.held, Relaxed);
            }
        }
    }
}

fn parse_table(t: HashMap<String, f64>) -> PyResult<HashMap<u32, u64>> {
    let mut out = HashMap::with_capacity(t.len());
    for (k, v) in t {
        let a: Ipv4Addr = k
            .parse()
            .map_err(|_| PyValueError::new_err(format!("not an IPv4 address: {k:?}")))?;
        out.insert(u32::from(a), secs_to_ns(v)?);
    }
    Ok(out)
}

fn secs_to_ns(s: f64) -> PyResult<u64> {
    if !(0.0..=60.0).contains(&s) {
        return Err(PyValueError::new_err(format!(
            "delay {s} s outside [0, 60] s"
        )));
    }
    Ok((s * 1e9).round() as u64)
}

fn parse_key(k: &str) -> PyResult<Key> {
    match k {
        "dst" => Ok(Key::Dst),
        "src" => Ok(Key::Src),
        _ => Err(PyValueError::new_err(format!(
            "key must be 'dst' or 'src', not {k:?}"
        ))),
    }
}

/// DelayLine(fd_a, fd_b, a_to_b={}, b_to_a={}, default_a_to_b=0.0, default_b_to_a=0.0,
///           key_a_to_b="dst", key_b_to_a="src", rt_priority=0)
///
/// Forward IP packets between two TUN fds (see `open_tun`) after per-address one-way delays in
/// seconds: `a_to_b` maps an IPv4 address (the packet's `key_a_to_b` address) to the delay of
/// packets A -> B, `b_to_a` likewise for B -> A; other packets get the defaults. `start()` runs the
/// line on its own thread (no GIL), `stop()` ends it and returns the counters, `stats()` reads them
/// while it runs. The fds stay owned by the caller. `rt_priority` > 0 asks for SCHED_FIFO.
#[pyclass(frozen, module = "tcpvideo._core")]
struct DelayLine {
    cfg: Mutex<Option<Config>>,
    thread: Mutex<Option<JoinHandle<Result<Vec<String>, String>>>>,
    result: Mutex<Option<Result<Vec<String>, String>>>,
    stop_fd: i32,
    stats: [Arc<DirStats>; 2],
}

#[pymethods]
impl DelayLine {
    #[new]
    #[pyo3(signature = (fd_a, fd_b, a_to_b=HashMap::new(), b_to_a=HashMap::new(), default_a_to_b=0.0,
                        default_b_to_a=0.0, key_a_to_b="dst", key_b_to_a="src", rt_priority=0))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        fd_a: i32,
        fd_b: i32,
        a_to_b: HashMap<String, f64>,
        b_to_a: HashMap<String, f64>,
        default_a_to_b: f64,
        default_b_to_a: f64,
        key_a_to_b: &str,
        key_b_to_a: &str,
        rt_priority: i32,
    ) -> PyResult<Self> {
        if fd_a < 0 || fd_b < 0 || fd_a == fd_b {
            return Err(PyValueError::new_err(
                "need two distinct open file descriptors",
            ));
        }
        let cfg = Config {
            fd_a,
            fd_b,
            a_to_b: parse_table(a_to_b)?,
            b_to_a: parse_table(b_to_a)?,
            default_a_to_b: secs_to_ns(default_a_to_b)?,
            default_b_to_a: secs_to_ns(default_b_to_a)?,
            key_a_to_b: parse_key(key_a_to_b)?,
            key_b_to_a: parse_key(key_b_to_a)?,
            rt_priority,
        };
        // SAFETY: plain syscall.
        let stop_fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if stop_fd < 0 {
            return Err(PyOSError::new_err(format!(
                "eventfd: {}",
                io::Error::last_os_error()
            )));
        }
        Ok(DelayLine {
            cfg: Mutex::new(Some(cfg)),
            thread: Mutex::new(None),
            result: Mutex::new(None),
            stop_fd,
            stats: [Arc::new(DirStats::new()), Arc::new(DirStats::new())],
        })
    }

    /// Start forwarding on a native thread; returns at once. A line runs once.
    fn start(&self) -> PyResult<()> {
        let cfg = self
            .cfg
            .lock()
            .unwrap()
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("already started"))?;
        let stats = self.stats.clone();
        let stop_fd = self.stop_fd;
        let h = std::thread::Builder::new()
            .name("tcpvideo-delayline".into())
            .spawn(move || run(cfg, stop_fd, stats))
            .map_err(|e| PyOSError::new_err(e.to_string()))?;
        *self.thread.lock().unwrap() = Some(h);
        Ok(())
    }

    /// Whether the forwarding thread is running (False after stop() or after an error).
    fn running(&self) -> bool {
        self.thread
            .lock()
            .unwrap()
            .as_ref()
            .is_some_and(|h| !h.is_finished())
    }

    /// Counters so far: {"a_to_b": {...}, "b_to_a": {...}} (see the module doc).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("a_to_b", self.stats[0].to_dict(py)?)?;
        d.set_item("b_to_a", self.stats[1].to_dict(py)?)?;
        Ok(d)
    }

    /// Stop the thread (packets still held are dropped), wait for it, return the counters plus
    /// "notes" (warnings) and "error" (why the loop ended early, or None).
    fn stop<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let one: u64 = 1;
        // SAFETY: writing 8 bytes to our eventfd.
        unsafe { libc::write(self.stop_fd, &one as *const u64 as *const libc::c_void, 8) };
        let h = self.thread.lock().unwrap().take();
        if let Some(h) = h {
            let r = py.allow_threads(|| {
                h.join()
                    .unwrap_or_else(|_| Err("delay line thread panicked".into()))
            });
            *self.result.lock().unwrap() = Some(r);
        }
        let d = self.stats(py)?;
        let res = self.result.lock().unwrap();
        match res.as_ref() {
            Some(Ok(notes)) => {
                d.set_item("notes", notes.clone())?;
                d.set_item("error", py.None())?;
            }
            Some(Err(e)) => {
                d.set_item("notes", Vec::<String>::new())?;
                d.set_item("error", e.clone())?;
            }
            None => {
                d.set_item("notes", Vec::<String>::new())?;
                d.set_item("error", "never started")?;
            }
        }
        Ok(d)
    }
}

impl Drop for DelayLine {
    fn drop(&mut self) {
        let one: u64 = 1;
        // SAFETY: our eventfd; closed once, after the thread (its only other user) has ended.
        unsafe { libc::write(self.stop_fd, &one as *const u64 as *const libc::c_void, 8) };
        if let Some(h) = self.thread.get_mut().unwrap().take() {
            let _ = h.join();
        }
        unsafe { libc::close(self.stop_fd) };
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<DelayLine>()?;
    Ok(())
}
