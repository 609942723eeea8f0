//! Prometheus metrics of the edge, served at `/metrics` in the text exposition format (0.0.4).
//!
//! Counters are atomics bumped on the request path (no lock); the per-stream gauges (x, prefetch
//! lead, receivers per group) sit behind one mutex touched only on playlist and segment events.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Per-stream gauges.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamGauges {
    /// The stream's x for hold-x receivers.
    pub hold_x: u32,
    /// Newest prefetched sequence minus the newest sequence any receiver requested.
    pub prefetch_lead_segments: i64,
    pub receivers_hold0: u64,
    pub receivers_hold_x: u64,
    pub receivers_redirected: u64,
    /// Backhaul RTT measured on the stream's first playlist fetch (µs).
    pub backhaul_rtt_us: u64,
}

/// Upper bounds (µs) of the waiter wake-lag histogram buckets.
pub const WAKE_LAG_BUCKETS_US: [u64; 9] = [250, 500, 1000, 2000, 5000, 10_000, 25_000, 50_000, 100_000];

/// How long after the edge's first byte of a fetch each reader's connection got its first byte
/// (the coalescing claim: waiters are woken at once, not polled).
#[derive(Default)]
pub struct WakeLagHistogram {
    /// Cumulative counts per bucket of `WAKE_LAG_BUCKETS_US` (Prometheus `le` semantics).
    pub buckets: [AtomicU64; 9],
    pub count: AtomicU64,
    pub sum_us: AtomicU64,
}

impl WakeLagHistogram {
    pub fn observe(&self, lag: std::time::Duration) {
        let us = lag.as_micros().min(u64::MAX as u128) as u64;
        for (i, le) in WAKE_LAG_BUCKETS_US.iter().enumerate() {
            if us <= *le {
                self.buckets[i].fetch_add(1, Ordering::Relaxed);
            }
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_us.fetch_add(us, Ordering::Relaxed);
    }

    /// Observations at or under `le_us` (must be one of the bucket bounds).
    pub fn at_most(&self, le_us: u64) -> u64 {
        WAKE_LAG_BUCKETS_US.iter().position(|b| *b == le_us).map_or(0, |i| self.buckets[i].load(Ordering::Relaxed))
    }
}

/// A per-stream gauge: metric name, help text, and how to read it.
type StreamGaugeColumn = (&'static str, &'static str, fn(&StreamGauges) -> i64);

#[derive(Default)]
pub struct Metrics {
    pub reader_first_byte_lag: WakeLagHistogram,
    pub cache_hits: AtomicU64,
    pub cache_misses: AtomicU64,
    pub coalesced_waits: AtomicU64,
    pub direct_readers: AtomicU64,
    pub direct_handbacks: AtomicU64,
    pub upstream_fetches: AtomicU64,
    pub upstream_errors: AtomicU64,
    pub prefetches: AtomicU64,
    pub redirects: AtomicU64,
    pub playlists_rejected: AtomicU64,
    pub requests_rejected: AtomicU64,
    pub cache_bytes: AtomicU64,
    pub cache_evictions: AtomicU64,
    pub streams: Mutex<BTreeMap<String, StreamGauges>>,
}

impl Metrics {
    pub fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub fn set_stream(&self, stream: &str, update: impl FnOnce(&mut StreamGauges)) {
        update(self.streams.lock().unwrap().entry(stream.to_string()).or_default());
    }

    pub fn stream(&self, stream: &str) -> Option<StreamGauges> {
        self.streams.lock().unwrap().get(stream).copied()
    }

    pub fn render(&self) -> String {
        self.render_with(&[])
    }

    /// The exposition with extra counters kept outside `Metrics` (the upstream client's
    /// connection counts): (name, help, value) each.
    pub fn render_with(&self, extra_counters: &[(&str, &str, u64)]) -> String {
        let mut out = String::new();
        for (name, help, v) in extra_counters {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}");
        }
        let counters: [(&str, &str, &AtomicU64); 11] = [
            ("ethle_cache_hits_total", "segment requests served from the cache", &self.cache_hits),
            ("ethle_cache_misses_total", "segment requests that started an upstream fetch", &self.cache_misses),
            ("ethle_coalesced_waits_total", "segment requests that joined an open upstream fetch", &self.coalesced_waits),
            ("ethle_direct_readers_total", "readers whose body the fetch task wrote to their socket itself", &self.direct_readers),
            (
                "ethle_direct_handbacks_total",
                "direct readers handed back to their connection mid-body (socket full: a slow reader)",
                &self.direct_handbacks,
            ),
            ("ethle_upstream_fetches_total", "requests sent upstream (segments, playlists, retries)", &self.upstream_fetches),
            ("ethle_upstream_errors_total", "upstream requests that failed (5xx, timeout, reset, truncation)", &self.upstream_errors),
            ("ethle_prefetches_total", "held segments fetched ahead of any request", &self.prefetches),
            ("ethle_redirects_total", "301 responses to the source (th_ran below the bitrate)", &self.redirects),
            ("ethle_playlists_rejected_total", "upstream playlists rejected (unparsable or over the size limit)", &self.playlists_rejected),
            ("ethle_requests_rejected_total", "receiver requests refused (path outside the upstream, bad header)", &self.requests_rejected),
        ];
        for (name, help, c) in counters {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}", c.load(Ordering::Relaxed));
        }
        for (name, help, c) in [
            ("ethle_cache_bytes", "bytes of complete segments in the cache", &self.cache_bytes),
            ("ethle_cache_evictions", "segments evicted (left the live window or over the bound)", &self.cache_evictions),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {}", c.load(Ordering::Relaxed));
        }
        let h = &self.reader_first_byte_lag;
        let name = "ethle_reader_first_byte_lag_seconds";
        let _ = writeln!(
            out,
            "# HELP {name} edge's first body byte of a fetch to each reader's first body byte written to its socket\n# TYPE {name} histogram"
        );
        for (i, le) in WAKE_LAG_BUCKETS_US.iter().enumerate() {
            let _ = writeln!(out, "{name}_bucket{{le=\"{}\"}} {}", *le as f64 / 1e6, h.buckets[i].load(Ordering::Relaxed));
        }
        let count = h.count.load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "{name}_bucket{{le=\"+Inf\"}} {count}\n{name}_sum {}\n{name}_count {count}",
            h.sum_us.load(Ordering::Relaxed) as f64 / 1e6
        );
        let streams = self.streams.lock().unwrap();
        let gauges: [StreamGaugeColumn; 4] = [
            ("ethle_stream_hold_x", "segments held back from the stream's hold-x receivers", |g| g.hold_x as i64),
            ("ethle_stream_prefetch_lead_segments", "newest prefetched minus newest requested sequence", |g| g.prefetch_lead_segments),
            ("ethle_stream_backhaul_rtt_microseconds", "backhaul RTT from TCP_INFO on the first playlist fetch", |g| {
                g.backhaul_rtt_us as i64
            }),
            ("ethle_stream_receivers_redirected", "receivers sent to the source", |g| g.receivers_redirected as i64),
        ];
        for (name, help, get) in gauges {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
            for (stream, g) in streams.iter() {
                let _ = writeln!(out, "{name}{{stream=\"{}\"}} {}", escape_label(stream), get(g));
            }
        }
        let _ = writeln!(out, "# HELP ethle_stream_receivers receivers per hold group\n# TYPE ethle_stream_receivers gauge");
        for (stream, g) in streams.iter() {
            for (group, n) in [("hold0", g.receivers_hold0), ("holdx", g.receivers_hold_x)] {
                let _ = writeln!(out, "ethle_stream_receivers{{stream=\"{}\",group=\"{group}\"}} {n}", escape_label(stream));
            }
        }
        out
    }
}

fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposition_has_counters_and_per_stream_gauges_with_escaped_labels() {
        let m = Metrics::default();
        Metrics::bump(&m.cache_hits);
        Metrics::bump(&m.cache_hits);
        m.set_stream("/live/\"hd\".m3u8", |g| g.hold_x = 2);
        let text = m.render();
        assert!(text.contains("\nethle_cache_hits_total 2\n"), "{text}");
        assert!(text.contains("ethle_stream_hold_x{stream=\"/live/\\\"hd\\\".m3u8\"} 2"), "{text}");
    }
}
