//! The origin's Prometheus metrics (`GET /metrics`, text exposition format 0.0.4).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

#[derive(Default)]
pub struct Metrics {
    /// Responses by status code.
    pub responses: Mutex<BTreeMap<u16, u64>>,
    /// Responses with a body by delivery mode label.
    pub responses_by_mode: Mutex<BTreeMap<&'static str, u64>>,
    pub body_bytes: AtomicU64,
    pub connections_accepted: AtomicU64,
    pub connections_refused: AtomicU64,
    pub connections_open: AtomicU64,
    pub paths_refused: AtomicU64,
    pub clamp_updates: AtomicU64,
    pub socket_option_errors: AtomicU64,
    pub body_read_errors: AtomicU64,
    /// 1 when the BPF cwnd clamp is loaded, 0 on the SO_MAX_PACING_RATE fallback.
    pub bpf_clamp_loaded: AtomicU64,
}

impl Metrics {
    pub fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub fn count_response(&self, status: u16) {
        *self.responses.lock().unwrap_or_else(|p| p.into_inner()).entry(status).or_default() += 1;
    }

    pub fn count_mode(&self, label: &'static str) {
        *self.responses_by_mode.lock().unwrap_or_else(|p| p.into_inner()).entry(label).or_default() += 1;
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        let counters: [(&str, &str, &AtomicU64); 7] = [
            ("origin_body_bytes_total", "response body bytes handed to sockets", &self.body_bytes),
            ("origin_connections_accepted_total", "connections accepted", &self.connections_accepted),
            (
                "origin_connections_refused_total",
                "connections closed at once because the connection cap was reached",
                &self.connections_refused,
            ),
            ("origin_paths_refused_total", "requests refused for a path outside the root or malformed (403)", &self.paths_refused),
            ("origin_clamp_updates_total", "cwnd clamp or pacing cap changes applied to sockets", &self.clamp_updates),
            (
                "origin_socket_option_errors_total",
                "socket options (clamp, pacing, congestion control) that failed",
                &self.socket_option_errors,
            ),
            ("origin_body_read_errors_total", "responses cut short because the file could not be read", &self.body_read_errors),
        ];
        for (name, help, c) in counters {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}", c.load(Ordering::Relaxed));
        }
        for (name, help, g) in [
            ("origin_connections_open", "connections open now", &self.connections_open),
            (
                "origin_bpf_clamp_loaded",
                "1 if the sock_ops cwnd clamp is loaded, 0 on the SO_MAX_PACING_RATE fallback",
                &self.bpf_clamp_loaded,
            ),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {}", g.load(Ordering::Relaxed));
        }
        let _ = writeln!(out, "# HELP origin_responses_total responses by status code\n# TYPE origin_responses_total counter");
        for (status, n) in self.responses.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            let _ = writeln!(out, "origin_responses_total{{code=\"{status}\"}} {n}");
        }
        let _ = writeln!(
            out,
            "# HELP origin_responses_by_mode_total responses with a body by delivery mode\n# TYPE origin_responses_by_mode_total counter"
        );
        for (mode, n) in self.responses_by_mode.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            let _ = writeln!(out, "origin_responses_by_mode_total{{mode=\"{mode}\"}} {n}");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposition_lists_counters_and_labelled_responses() {
        let m = Metrics::default();
        m.count_response(206);
        m.count_response(206);
        m.count_mode("trickle");
        Metrics::bump(&m.paths_refused);
        let t = m.render();
        assert!(t.contains("\norigin_responses_total{code=\"206\"} 2\n"), "{t}");
        assert!(t.contains("\norigin_responses_by_mode_total{mode=\"trickle\"} 1\n"), "{t}");
        assert!(t.contains("\norigin_paths_refused_total 1\n"), "{t}");
    }
}
