//! The running link: one thread moving IP packets between two TUN file descriptors through two
//! [`Pipe`]s (A→B and B→A), on CLOCK_MONOTONIC.
//!
//! How (from the delay line this replaces; measured in bench/linkem_accuracy.py):
//! * packet bytes live in a pool of fixed 2048-byte slots recycled through a free list: after the
//!   warm-up (the most packets ever held at once) nothing is allocated per packet;
//! * the thread blocks in ppoll(2) on both fds and an eventfd (the stop signal) with a timeout
//!   equal to the time left until the next event of either pipe (a transmission start, a packet
//!   due) or queue sample, in nanoseconds (epoll_wait's milliseconds would be too coarse), with
//!   the thread's timer slack at 1 µs (PR_SET_TIMERSLACK; the default 50 µs delays every wake-up);
//! * after a long sleep the thread wakes `WAKE_EARLY` before the next due time and polls without
//!   blocking until then ([`SleepPlan`]): a timer wake-up of an idle CPU came 95–150 µs late per link
//!   direction on the 2-vCPU VM (issue 15, session 20: `bench/linkem_owd.py --from`, the first packet
//!   of a train against the packets behind it), so the head of each train left late and the rest
//!   caught up — trains were compressed at the head, which a real link does not do;
//! * a packet's arrival time is taken when it is read; after at most `READ_BATCH` reads per fd the
//!   loop releases what is due, so a burst on one side does not hold back the other;
//! * optional SCHED_FIFO priority (`rt_priority` > 0, needs root): on a loaded machine the release
//!   time is then set by the timer, not by the CFS scheduler.
//!
//! What it adds beyond the model is measured per release as lateness (counters.rs); the kernel's
//! own path (TUN devices, the stacks) adds a few tens of µs more, which a ping shows.

use std::io;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use tcpvideo_model::Time;

use crate::counters::{DirCounters, QueueSample};
use crate::pipe::{Admission, DirectionConfig, Pipe};

/// Bytes per packet slot: an MTU-1500 IP packet fits; a read that fills the slot was truncated.
const SLOT: usize = 2048;
/// Reads per fd before the loop looks at due packets again.
const READ_BATCH: usize = 64;

/// How long before a due time the thread wakes after a long sleep, then polls without blocking
/// until it: above the 95–150 µs wake-up lateness after idle measured per link direction (issue 15,
/// session 20), with room for its tail. A sleep of at most twice this is taken whole (packets inside
/// a train, the thread's CPU not yet idle long): in a train the releases were on time.
const WAKE_EARLY: Duration = Duration::from_micros(300);

/// The ppoll timeout for the next event, and whether the thread is in its early-wake window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct SleepPlan {
    /// The event the thread woke early for (polls without blocking until it is handled).
    early_for: Option<Time>,
}

impl SleepPlan {
    /// Nanoseconds to block in ppoll when the next event is at `next`, `now` being the time.
    fn timeout_ns(&mut self, now: Time, next: Time) -> u64 {
        let left = next.0.saturating_sub(now.0);
        let early = WAKE_EARLY.as_nanos() as u64;
        if left > 2 * early {
            self.early_for = Some(next);
            left - early
        } else if self.early_for == Some(next) {
            0
        } else {
            self.early_for = None;
            left
        }
    }
}

/// CLOCK_MONOTONIC now.
pub fn monotonic_now() -> Time {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid pointer to a timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    Time(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// A link's settings: both directions, the seed of their random streams, and the channel numbers
/// that pick those streams (the simulator's: 2·link and 2·link+1).
#[derive(Clone, Debug, Default)]
pub struct LinkConfig {
    pub a_to_b: DirectionConfig,
    pub b_to_a: DirectionConfig,
    pub seed: u64,
    pub channel_a_to_b: u64,
    pub channel_b_to_a: u64,
    /// Queue samples every this often (None: none).
    pub sample_interval: Option<Duration>,
    /// SCHED_FIFO priority of the thread (0: normal scheduling).
    pub rt_priority: i32,
}

/// Fixed-size packet buffers recycled through a free list.
struct Pool {
    // boxed: growing the pool during warm-up moves pointers, not 2 kB buffers
    #[allow(clippy::vec_box)]
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

struct Side {
    from: i32,
    to: i32,
    pipe: Pipe<u32>,
}

/// A running link. Dropping it stops the thread.
pub struct Link {
    stop_fd: i32,
    thread: Option<JoinHandle<Result<Vec<String>, String>>>,
    counters: [Arc<DirCounters>; 2],
}

impl Link {
    /// Start forwarding between `fd_a` and `fd_b` (non-blocking TUN fds the caller keeps owning).
    pub fn start(fd_a: i32, fd_b: i32, cfg: LinkConfig) -> io::Result<Link> {
        if fd_a < 0 || fd_b < 0 || fd_a == fd_b {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "need two distinct open file descriptors"));
        }
        let origin = monotonic_now();
        let ab = Side { from: fd_a, to: fd_b, pipe: Pipe::new(&cfg.a_to_b, cfg.seed, cfg.channel_a_to_b, origin) };
        let ba = Side { from: fd_b, to: fd_a, pipe: Pipe::new(&cfg.b_to_a, cfg.seed, cfg.channel_b_to_a, origin) };
        let counters = [ab.pipe.counters.clone(), ba.pipe.counters.clone()];
        // SAFETY: plain syscall.
        let stop_fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if stop_fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let (interval, prio) = (cfg.sample_interval, cfg.rt_priority);
        let thread = std::thread::Builder::new()
            .name("tcpvideo-linkem".into())
            .spawn(move || run([ab, ba], stop_fd, interval, prio))
            .inspect_err(|_| {
                // SAFETY: our eventfd, not shared yet.
                unsafe { libc::close(stop_fd) };
            })?;
        Ok(Link { stop_fd, thread: Some(thread), counters })
    }

    /// Counters of A→B (0) and B→A (1), live.
    pub fn counters(&self) -> &[Arc<DirCounters>; 2] {
        &self.counters
    }

    /// Whether the forwarding thread still runs (false after an error).
    pub fn running(&self) -> bool {
        self.thread.as_ref().is_some_and(|h| !h.is_finished())
    }

    /// Stop (packets still held are dropped) and wait: the notes (warnings), or why it failed.
    pub fn stop(&mut self) -> Result<Vec<String>, String> {
        self.signal_stop();
        match self.thread.take() {
            Some(h) => h.join().unwrap_or_else(|_| Err("linkem thread panicked".into())),
            None => Err("already stopped".into()),
        }
    }

    fn signal_stop(&self) {
        let one: u64 = 1;
        // SAFETY: writing 8 bytes to our eventfd.
        unsafe { libc::write(self.stop_fd, &one as *const u64 as *const libc::c_void, 8) };
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.signal_stop();
        if let Some(h) = self.thread.take() {
            let _ = h.join();
        }
        // SAFETY: our eventfd; closed once, after the thread (its only other user) has ended.
        unsafe { libc::close(self.stop_fd) };
    }
}

fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Write every packet that is due by now, earliest lane first, per side.
fn release_due(sides: &mut [Side; 2], pool: &mut Pool) {
    for s in sides.iter_mut() {
        let now = monotonic_now();
        s.pipe.advance(now, |slot| pool.give(slot));
        while let Some((slot, len, due)) = s.pipe.pop_due(now) {
            let buf = &pool.bufs[slot as usize];
            // SAFETY: buf holds len <= SLOT initialized bytes.
            let w = unsafe { libc::write(s.to, buf.as_ptr() as *const libc::c_void, len as usize) };
            if w < 0 {
                s.pipe.counters.write_errors.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            } else {
                s.pipe.counters.record_release(monotonic_now().saturating_since(due), len);
            }
            pool.give(slot);
        }
    }
}

/// The forwarding loop; returns when the eventfd `stop_fd` becomes readable, or on a fd error.
fn run(mut sides: [Side; 2], stop_fd: i32, interval: Option<Duration>, rt_priority: i32) -> Result<Vec<String>, String> {
    let mut notes = Vec::new();
    // SAFETY: prctl/sched_setscheduler on the calling thread with valid arguments.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
        if rt_priority > 0 {
            let p = libc::sched_param { sched_priority: rt_priority };
            if libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) != 0 {
                notes.push(format!("SCHED_FIFO {rt_priority} refused: {}", io::Error::last_os_error()));
            }
        }
    }
    let mut pool = Pool { bufs: Vec::with_capacity(4096), free: Vec::with_capacity(4096) };
    let mut pfd = [
        libc::pollfd { fd: sides[0].from, events: libc::POLLIN, revents: 0 },
        libc::pollfd { fd: sides[1].from, events: libc::POLLIN, revents: 0 },
        libc::pollfd { fd: stop_fd, events: libc::POLLIN, revents: 0 },
    ];
    let mut next_sample = interval.map(|_| monotonic_now());
    let mut plan = SleepPlan::default();
    loop {
        release_due(&mut sides, &mut pool);
        if let (Some(iv), Some(at)) = (interval, next_sample) {
            let now = monotonic_now();
            if now >= at {
                for s in &sides {
                    let (packets, bytes) = s.pipe.backlog();
                    let tx_bytes = s.pipe.counters.tx_bytes.load(std::sync::atomic::Ordering::Relaxed);
                    s.pipe.counters.push_sample(QueueSample { t_ns: now.0, packets, bytes, tx_bytes });
                }
                // keep the grid; skip slots missed on a loaded machine
                let missed = (now.0 - at.0) / iv.as_nanos() as u64;
                next_sample = Some(at + iv * (missed as u32 + 1));
            }
        }
        let next = sides.iter().filter_map(|s| s.pipe.next_wakeup()).chain(next_sample).min();
        let ts;
        let tsp = match next {
            Some(t) => {
                let left = plan.timeout_ns(monotonic_now(), t);
                ts = libc::timespec { tv_sec: (left / 1_000_000_000) as _, tv_nsec: (left % 1_000_000_000) as _ };
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
        for k in 0..2 {
            let ev = pfd[k].revents;
            if ev & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0 {
                return Err(format!("tun fd {} failed (revents {ev:#x}): device or namespace gone?", pfd[k].fd));
            }
            if ev & libc::POLLIN != 0 {
                read_batch(&mut sides[k], &mut pool)?;
            }
        }
    }
}

/// Read up to READ_BATCH packets from a side's source fd and offer them to its pipe.
fn read_batch(s: &mut Side, pool: &mut Pool) -> Result<(), String> {
    for _ in 0..READ_BATCH {
        let slot = pool.take();
        let buf = &mut pool.bufs[slot as usize];
        // SAFETY: reading at most SLOT bytes into a SLOT-byte buffer.
        let n = unsafe { libc::read(s.from, buf.as_mut_ptr() as *mut libc::c_void, SLOT) };
        if n <= 0 {
            pool.give(slot);
            let e = errno();
            if n < 0 && e != libc::EAGAIN && e != libc::EINTR {
                return Err(format!("read tun fd {}: {}", s.from, io::Error::from_raw_os_error(e)));
            }
            return Ok(());
        }
        let now = monotonic_now();
        let n = n as usize;
        if n >= SLOT {
            s.pipe.counters.truncated.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            pool.give(slot);
            continue;
        }
        let lane = s.pipe.lane_for(&buf[..n]);
        let segment = tcpvideo_sim::keyed_loss::TcpSegment::parse_ipv4(&buf[..n]);
        if s.pipe.offer(now, slot, n as u32, lane, segment.as_ref(), |x| pool.give(x)) == Admission::QueueFull {
            pool.give(slot);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! The forwarder on datagram socketpairs instead of TUN devices (same read/write-one-packet
    //! semantics, no privileges needed): what goes in at A comes out at B, after the delay.
    use super::*;
    use crate::spec::parse_direction;

    /// Two datagram socketpairs: (test's end of A, linkem's A, linkem's B, test's end of B).
    fn wires() -> (i32, i32, i32, i32) {
        let mut a = [0i32; 2];
        let mut b = [0i32; 2];
        // SAFETY: valid arrays of two fds.
        unsafe {
            assert_eq!(libc::socketpair(libc::AF_UNIX, libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0, a.as_mut_ptr()), 0);
            assert_eq!(libc::socketpair(libc::AF_UNIX, libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0, b.as_mut_ptr()), 0);
        }
        (a[0], a[1], b[0], b[1])
    }

    fn send(fd: i32, len: usize, tag: u8) {
        let mut buf = vec![0u8; len];
        buf[0] = 0x45;
        buf[len - 1] = tag;
        // SAFETY: valid buffer.
        assert_eq!(unsafe { libc::write(fd, buf.as_ptr() as *const libc::c_void, len) }, len as isize);
    }

    /// Receive until `n` packets came or `timeout` passed: (arrival, tag).
    fn receive(fd: i32, n: usize, timeout: Duration) -> Vec<(Time, u8)> {
        let end = monotonic_now() + timeout;
        let mut out = vec![];
        let mut buf = [0u8; SLOT];
        while out.len() < n && monotonic_now() < end {
            let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
            // SAFETY: one valid pollfd.
            unsafe { libc::poll(&mut p, 1, 10) };
            loop {
                // SAFETY: reading into our buffer.
                let r = unsafe { libc::read(fd, buf.as_mut_ptr() as *mut libc::c_void, SLOT) };
                if r <= 0 {
                    break;
                }
                out.push((monotonic_now(), buf[r as usize - 1]));
            }
        }
        out
    }

    fn close(fds: &[i32]) {
        for &f in fds {
            // SAFETY: our fds.
            unsafe { libc::close(f) };
        }
    }

    #[test]
    fn after_a_long_sleep_the_thread_wakes_early_and_polls_until_the_due_time() {
        let mut p = SleepPlan::default();
        let due = Time::from_millis(20);
        // 20 ms idle: block until 300 µs before the due time, not until it.
        assert_eq!(p.timeout_ns(Time::ZERO, due), 20_000_000 - 300_000);
        // Woken early: poll without blocking until the event is handled.
        assert_eq!(p.timeout_ns(Time(19_700_100), due), 0);
        assert_eq!(p.timeout_ns(Time(19_999_000), due), 0);
    }

    #[test]
    fn inside_a_train_the_thread_sleeps_the_whole_gap() {
        let mut p = SleepPlan::default();
        // The next packet of a train 120 µs away (no long sleep before it): block the whole 120 µs.
        assert_eq!(p.timeout_ns(Time(1_000_000), Time(1_120_000)), 120_000);
        // After an early wake for one packet, the next packet's gap is slept normally again.
        let due = Time::from_millis(10);
        p.timeout_ns(Time::ZERO, due);
        assert_eq!(p.timeout_ns(Time(9_800_000), due), 0);
        assert_eq!(p.timeout_ns(Time(10_000_010), Time(10_120_000)), 119_990);
    }

    #[test]
    fn packets_cross_the_link_after_the_configured_delay_in_both_directions() {
        let (ta, la, lb, tb) = wires();
        let cfg = LinkConfig {
            a_to_b: parse_direction("delay=20ms", "ab").unwrap(),
            b_to_a: parse_direction("delay=5ms", "ba").unwrap(),
            channel_b_to_a: 1,
            ..Default::default()
        };
        let mut link = Link::start(la, lb, cfg).unwrap();
        let t0 = monotonic_now();
        send(ta, 100, 1);
        send(tb, 100, 2);
        let back = receive(ta, 1, Duration::from_secs(2));
        let there = receive(tb, 1, Duration::from_secs(2));
        assert_eq!(there.len(), 1);
        assert_eq!(back.len(), 1);
        let d_ab = there[0].0.saturating_since(t0);
        let d_ba = back[0].0.saturating_since(t0);
        // lower bounds are exact; upper bounds leave room for a loaded CI machine
        assert!(d_ab >= Duration::from_millis(20) && d_ab < Duration::from_millis(60), "a→b took {d_ab:?}");
        assert!(d_ba >= Duration::from_millis(5) && d_ba < Duration::from_millis(45), "b→a took {d_ba:?}");
        link.stop().unwrap();
        let [ab, ba] = link.counters();
        assert_eq!((ab.snapshot().delivered_packets, ba.snapshot().delivered_packets), (1, 1));
        close(&[ta, la, lb, tb]);
    }

    #[test]
    fn a_rate_limited_link_delivers_at_its_rate_and_tail_drops_the_excess() {
        let (ta, la, lb, tb) = wires();
        // 1000-byte packets at 8 Mbit/s: 1 ms each; 50 sent at once, queue 9: 1 on the wire + 9
        // waiting pass, 40 dropped
        let cfg = LinkConfig {
            a_to_b: parse_direction("rate=8Mbps,queue=9", "ab").unwrap(),
            sample_interval: Some(Duration::from_millis(1)),
            channel_b_to_a: 1,
            ..Default::default()
        };
        let mut link = Link::start(la, lb, cfg).unwrap();
        for i in 0..50 {
            send(ta, 1000, i);
        }
        let got = receive(tb, 10, Duration::from_secs(2));
        link.stop().unwrap();
        let s = link.counters()[0].snapshot();
        assert_eq!(got.len(), 10, "{s:?}");
        assert_eq!(s.queue_drops, 40);
        assert_eq!(got.iter().map(|g| g.1).collect::<Vec<_>>(), (0..10).collect::<Vec<u8>>(), "FIFO order");
        let span = got[9].0.saturating_since(got[0].0);
        // 9 serialisation times (9 ms) between the first and the last, less what a late read of the
        // first packet hides: the times are the reader's, and on a loaded machine its first wake-up
        // can come late (8.888 ms once with two cores busy); a link without its rate gives ~0.
        assert!(span >= Duration::from_micros(8000), "9 serialisation times between first and last: {span:?}");
        let samples = link.counters()[0].take_samples();
        assert!(samples.iter().any(|q| q.packets >= 5), "queue samples see the backlog");
        close(&[ta, la, lb, tb]);
    }
}
