//! What one direction of a link did, readable while it runs: packets in, delivered, dropped by
//! cause (queue full, random loss, refused by the far device, truncated), the exact queue
//! statistics of the bottleneck, queue samples at a fixed interval, and how late each release was.
//!
//! These are the numbers the simulator reports per channel (crates/sim/src/network.rs
//! `ChannelStats`, the `links` and `queues` tables), so an emulated run writes the same tables.
//! Lateness is what the emulator adds beyond its model: the time of the write(2) minus the time
//! the model said the packet was due, in a histogram of 1 µs buckets up to 10 ms.
//!
//! Written by the forwarding thread with relaxed atomics (one writer; readers only need a
//! recent value), and a mutex only around the sample list, touched once per sample interval.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Duration;

use crate::bottleneck::QueueStats;

/// Lateness histogram bucket width and count (the last bucket collects everything later).
pub const LATENESS_BUCKET: Duration = Duration::from_micros(1);
pub const LATENESS_BUCKETS: usize = 10_001;

/// One queue sample of a direction.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct QueueSample {
    /// CLOCK_MONOTONIC time of the sample, ns.
    pub t_ns: u64,
    pub packets: u64,
    pub bytes: u64,
    /// Bytes that have left the bottleneck so far (its throughput is the slope).
    pub tx_bytes: u64,
}

/// Live counters of one direction.
pub struct DirCounters {
    pub packets_in: AtomicU64,
    pub bytes_in: AtomicU64,
    pub delivered_packets: AtomicU64,
    pub delivered_bytes: AtomicU64,
    pub queue_drops: AtomicU64,
    pub loss_drops: AtomicU64,
    pub write_errors: AtomicU64,
    pub truncated: AtomicU64,
    /// packets that were not IPv4 (they take the default delay)
    pub non_ipv4: AtomicU64,
    pub max_queue_packets: AtomicU64,
    pub max_queue_bytes: AtomicU64,
    /// ∫ waiting packets dt in packet·µs (u64 holds 500 years of a 1000-packet queue).
    pub queue_packet_us: AtomicU64,
    pub queue_byte_us: AtomicU64,
    pub tx_bytes: AtomicU64,
    pub held_max: AtomicU64,
    pub late_max_ns: AtomicU64,
    pub late_sum_ns: AtomicU64,
    late_hist: Vec<AtomicU64>,
    samples: Mutex<Vec<QueueSample>>,
}

impl Default for DirCounters {
    fn default() -> Self {
        let z = || AtomicU64::new(0);
        DirCounters {
            packets_in: z(),
            bytes_in: z(),
            delivered_packets: z(),
            delivered_bytes: z(),
            queue_drops: z(),
            loss_drops: z(),
            write_errors: z(),
            truncated: z(),
            non_ipv4: z(),
            max_queue_packets: z(),
            max_queue_bytes: z(),
            queue_packet_us: z(),
            queue_byte_us: z(),
            tx_bytes: z(),
            held_max: z(),
            late_max_ns: z(),
            late_sum_ns: z(),
            late_hist: (0..LATENESS_BUCKETS).map(|_| z()).collect(),
            samples: Mutex::new(Vec::new()),
        }
    }
}

/// A plain copy of the counters, for reports.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    pub packets_in: u64,
    pub bytes_in: u64,
    pub delivered_packets: u64,
    pub delivered_bytes: u64,
    pub queue_drops: u64,
    pub loss_drops: u64,
    pub write_errors: u64,
    pub truncated: u64,
    pub non_ipv4: u64,
    pub max_queue_packets: u64,
    pub max_queue_bytes: u64,
    pub queue_packet_us: u64,
    pub queue_byte_us: u64,
    pub tx_bytes: u64,
    pub held_max: u64,
    pub late_max: Duration,
    pub late_mean: Duration,
    pub late_p50: Option<Duration>,
    pub late_p99: Option<Duration>,
    pub late_p999: Option<Duration>,
}

impl DirCounters {
    /// Record one release `late` after its due time.
    pub fn record_release(&self, late: Duration, len: u32) {
        let ns = late.as_nanos() as u64;
        self.delivered_packets.fetch_add(1, Relaxed);
        self.delivered_bytes.fetch_add(len as u64, Relaxed);
        self.late_sum_ns.fetch_add(ns, Relaxed);
        self.late_max_ns.fetch_max(ns, Relaxed);
        let b = (ns / LATENESS_BUCKET.as_nanos() as u64) as usize;
        self.late_hist[b.min(LATENESS_BUCKETS - 1)].fetch_add(1, Relaxed);
    }

    /// Publish the bottleneck's exact statistics (called after each change; all plain stores).
    pub fn publish_queue(&self, s: &QueueStats) {
        self.queue_drops.store(s.dropped_packets, Relaxed);
        self.max_queue_packets.store(s.max_packets, Relaxed);
        self.max_queue_bytes.store(s.max_bytes, Relaxed);
        self.queue_packet_us
            .store((s.packet_ns / 1000) as u64, Relaxed);
        self.queue_byte_us.store((s.byte_ns / 1000) as u64, Relaxed);
    }

    pub fn push_sample(&self, s: QueueSample) {
        self.samples
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(s);
    }

    /// Take the samples collected so far.
    pub fn take_samples(&self) -> Vec<QueueSample> {
        std::mem::take(&mut *self.samples.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// The `q`-quantile of lateness (upper bucket edge: never optimistic).
    pub fn lateness_quantile(&self, q: f64) -> Option<Duration> {
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
                return Some(LATENESS_BUCKET * (i as u32 + 1));
            }
        }
        None
    }

    pub fn snapshot(&self) -> Snapshot {
        let n = self.delivered_packets.load(Relaxed);
        Snapshot {
            packets_in: self.packets_in.load(Relaxed),
            bytes_in: self.bytes_in.load(Relaxed),
            delivered_packets: n,
            delivered_bytes: self.delivered_bytes.load(Relaxed),
            queue_drops: self.queue_drops.load(Relaxed),
            loss_drops: self.loss_drops.load(Relaxed),
            write_errors: self.write_errors.load(Relaxed),
            truncated: self.truncated.load(Relaxed),
            non_ipv4: self.non_ipv4.load(Relaxed),
            max_queue_packets: self.max_queue_packets.load(Relaxed),
            max_queue_bytes: self.max_queue_bytes.load(Relaxed),
            queue_packet_us: self.queue_packet_us.load(Relaxed),
            queue_byte_us: self.queue_byte_us.load(Relaxed),
            tx_bytes: self.tx_bytes.load(Relaxed),
            held_max: self.held_max.load(Relaxed),
            late_max: Duration::from_nanos(self.late_max_ns.load(Relaxed)),
            late_mean: Duration::from_nanos(
                self.late_sum_ns.load(Relaxed).checked_div(n).unwrap_or(0),
            ),
            late_p50: self.lateness_quantile(0.50),
            late_p99: self.lateness_quantile(0.99),
            late_p999: self.lateness_quantile(0.999),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lateness_quantiles_are_upper_bucket_edges() {
        let c = DirCounters::default();
        for us in 0..100u64 {
            c.record_release(Duration::from_nanos(us * 1000 + 500), 1500);
        }
        assert_eq!(c.lateness_quantile(0.5), Some(Duration::from_micros(50)));
        assert_eq!(c.lateness_quantile(0.99), Some(Duration::from_micros(99)));
        let s = c.snapshot();
        assert_eq!(s.delivered_bytes, 150_000);
        assert_eq!(s.late_max, Duration::from_nanos(99_500));
    }
}
