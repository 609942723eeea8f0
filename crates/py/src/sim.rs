//! The simulator exposed to Python: `Simulation(text, fmt, seed, out_dir)` with `run_until` (so the
//! Python side can run in chunks of simulated time and show progress) and `finish`, which returns
//! every table as a dict of encoded columns (columns.rs). Scenario mistakes raise `ScenarioError` (a `ValueError`), I/O
//! problems `OSError`; a panic inside the simulator becomes a `RuntimeError`, never an abort.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use tcpvideo_model::Time;
use tcpvideo_sim::scenario::{self, ScenarioError as RsScenarioError};
use tcpvideo_sim::sim::{Results, SimError, Simulation as RsSimulation};
use tcpvideo_sim::tcp::{RetransmitCause, TcpLogEvent};

create_exception!(_core, ScenarioError, PyValueError, "A scenario file or dict is invalid (one line naming the field).");

fn sim_err(e: SimError) -> PyErr {
    match e {
        SimError::Scenario(s) => ScenarioError::new_err(s.0),
        SimError::Io(s) => PyOSError::new_err(s),
    }
}

fn guarded<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let msg = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default();
            Err(PyRuntimeError::new_err(format!("internal simulator error (please report): {msg}")))
        }
    }
}

/// Parse and validate a scenario without running it; returns its name, seed, duration and sizes.
#[pyfunction]
#[pyo3(signature = (text, fmt, seed=None))]
fn scenario_check(py: Python<'_>, text: &str, fmt: &str, seed: Option<u64>) -> PyResult<Py<PyDict>> {
    let sc = load(text, fmt, seed)?;
    let d = PyDict::new(py);
    d.set_item("name", &sc.name)?;
    d.set_item("seed", sc.seed)?;
    d.set_item("duration_ns", sc.duration.as_nanos() as u64)?;
    d.set_item("nodes", sc.nodes.len())?;
    d.set_item("links", sc.links.len())?;
    d.set_item("flows", sc.flows.len())?;
    d.set_item("pcaps", sc.record.pcaps.len())?;
    Ok(d.unbind())
}

pub fn load(text: &str, fmt: &str, seed: Option<u64>) -> PyResult<scenario::Scenario> {
    let r: Result<_, RsScenarioError> = guarded(|| {
        Ok(match fmt {
            "toml" => scenario::load_toml(text, seed),
            "json" => scenario::load_json(text, seed),
            other => Err(RsScenarioError(format!("scenario: unknown format {other:?} (toml, json)"))),
        })
    })?;
    r.map_err(|e| ScenarioError::new_err(e.0))
}

#[pyclass(unsendable, module = "tcpvideo._core")]
struct Simulation {
    inner: Option<RsSimulation>,
}

#[pymethods]
impl Simulation {
    #[new]
    #[pyo3(signature = (text, fmt="toml", seed=None, out_dir=None))]
    fn new(text: &str, fmt: &str, seed: Option<u64>, out_dir: Option<PathBuf>) -> PyResult<Self> {
        let sc = load(text, fmt, seed)?;
        let sim = guarded(|| RsSimulation::new(sc, out_dir.as_deref()).map_err(sim_err))?;
        Ok(Simulation { inner: Some(sim) })
    }

    /// Simulate up to `t_ns` (capped at the end); returns True when the run is over.
    fn run_until(&mut self, py: Python<'_>, t_ns: u64) -> PyResult<bool> {
        let sim = self.inner.as_mut().ok_or_else(|| PyRuntimeError::new_err("simulation already finished"))?;
        py.allow_threads(|| guarded(|| Ok(sim.run_until(Time(t_ns)))))
    }

    #[getter]
    fn now_ns(&self) -> u64 {
        self.inner.as_ref().map(|s| s.now().as_nanos()).unwrap_or(0)
    }
    #[getter]
    fn end_ns(&self) -> u64 {
        self.inner.as_ref().map(|s| s.end().as_nanos()).unwrap_or(0)
    }
    #[getter]
    fn events_processed(&self) -> u64 {
        self.inner.as_ref().map(|s| s.events_processed()).unwrap_or(0)
    }
    #[getter]
    fn packets_sent(&self) -> u64 {
        self.inner.as_ref().map(|s| s.packets_sent()).unwrap_or(0)
    }

    /// Run to the end, close the pcaps and return every table as a dict of encoded columns (columns.rs).
    fn finish(&mut self, py: Python<'_>) -> PyResult<Py<PyDict>> {
        let sim = self.inner.take().ok_or_else(|| PyRuntimeError::new_err("simulation already finished"))?;
        let res = py.allow_threads(|| guarded(|| sim.finish().map_err(sim_err)))?;
        tables(py, &res)
    }
}

/// "Infinite" thresholds (u64::MAX, e.g. before the first loss or with BBR) become null, so the
/// column fits Arrow's int64.
fn finite(v: u64) -> Option<u64> {
    (v < i64::MAX as u64).then_some(v)
}

fn cause_name(c: RetransmitCause) -> &'static str {
    match c {
        RetransmitCause::FastRetransmit => "fast_retransmit",
        RetransmitCause::SackRecovery => "sack_recovery",
        RetransmitCause::Timeout => "timeout",
        RetransmitCause::ZeroWindowProbe => "zero_window_probe",
        RetransmitCause::SynTimeout => "syn_timeout",
        RetransmitCause::TailLossProbe => "tail_loss_probe",
    }
}

fn tables(py: Python<'_>, r: &Results) -> PyResult<Py<PyDict>> {
    let out = PyDict::new(py);
    let flows = columns!(py, r.flows, {
        "flow" => |f| f.flow, "name" => |f| f.name.clone(), "client" => |f| f.client.clone(),
        "server" => |f| f.server.clone(), "cc" => |f| f.cc.clone(), "start_s" => |f| f.start_ns as f64 / 1e9,
        "base_rtt_ms" => |f| f.base_rtt_ns as f64 / 1e6, "bytes" => |f| f.bytes, "bytes_read" => |f| f.bytes_read,
        "goodput_mbps" => |f| f.goodput_bps / 1e6, "fct_s" => |f| f.fct_ns.map(|x| x as f64 / 1e9),
        "retrans_fast" => |f| f.retrans_fast, "retrans_timeout" => |f| f.retrans_timeout, "rto_count" => |f| f.rto_count, "retrans_tlp" => |f| f.retrans_tlp,
        "retrans_both_directions" => |f| f.retrans_both_directions,
        "srtt_end_ms" => |f| f.srtt_end_ns.map(|x| x as f64 / 1e6), "min_rtt_ms" => |f| f.min_rtt_ns.map(|x| x as f64 / 1e6),
        "handshake_rtt_ms" => |f| f.handshake_rtt_ns.map(|x| x as f64 / 1e6), "max_cwnd_bytes" => |f| f.max_cwnd_bytes,
        "cwnd_end_bytes" => |f| f.cwnd_end_bytes, "zero_window_probes" => |f| f.zero_window_probes,
        "data_segments_sent" => |f| f.data_segments_sent,
    });
    out.set_item("flows", flows)?;
    let links = columns!(py, r.links, {
        "link" => |l| l.link.clone(), "from" => |l| l.from.clone(), "to" => |l| l.to.clone(),
        "rate_mbps" => |l| l.rate_bps as f64 / 1e6, "delay_ms" => |l| l.delay_ns as f64 / 1e6,
        "tx_packets" => |l| l.tx_packets, "tx_bytes" => |l| l.tx_bytes, "queue_drops" => |l| l.queue_drops,
        "loss_drops" => |l| l.loss_drops, "mean_queue_packets" => |l| l.mean_queue_packets,
        "mean_queue_bytes" => |l| l.mean_queue_bytes, "max_queue_packets" => |l| l.max_queue_packets,
        "max_queue_bytes" => |l| l.max_queue_bytes, "utilization" => |l| l.utilization,
    });
    out.set_item("links", links)?;
    // Ground-truth events: one table with a kind column and nullable detail columns.
    let ev = &r.events;
    type Row =
        (u64, u32, u32, &'static str, Option<u32>, Option<u32>, Option<&'static str>, Option<u32>, Option<u64>, Option<u64>, Option<u64>);
    let rows: Vec<Row> = ev
        .iter()
        .map(|e| match *e {
            TcpLogEvent::Retransmit { at, flow, from_node, seq, len, cause } => {
                (at.0, flow, from_node, "retransmit", Some(seq), Some(len), Some(cause_name(cause)), None, None, None, None)
            }
            TcpLogEvent::Rto { at, flow, from_node, backoff, rto } => {
                (at.0, flow, from_node, "rto", None, None, None, Some(backoff), Some(rto.as_nanos() as u64), None, None)
            }
            TcpLogEvent::EnterRecovery { at, flow, from_node, cwnd_bytes, ssthresh_bytes } => {
                (at.0, flow, from_node, "enter_recovery", None, None, None, None, None, Some(cwnd_bytes), finite(ssthresh_bytes))
            }
            TcpLogEvent::ExitRecovery { at, flow, from_node, cwnd_bytes } => {
                (at.0, flow, from_node, "exit_recovery", None, None, None, None, None, Some(cwnd_bytes), None)
            }
            TcpLogEvent::ZeroWindow { at, flow, from_node } => {
                (at.0, flow, from_node, "zero_window", None, None, None, None, None, None, None)
            }
            TcpLogEvent::ZeroWindowProbe { at, flow, from_node } => {
                (at.0, flow, from_node, "zero_window_probe", None, None, None, None, None, None, None)
            }
            TcpLogEvent::KeepAliveProbe { at, flow, from_node } => {
                (at.0, flow, from_node, "keepalive_probe", None, None, None, None, None, None, None)
            }
            TcpLogEvent::RestartAfterIdle { at, flow, from_node, cwnd_bytes } => {
                (at.0, flow, from_node, "restart_after_idle", None, None, None, None, None, Some(cwnd_bytes), None)
            }
        })
        .collect();
    let node_name = |n: u32| r.node_names.get(n as usize).cloned().unwrap_or_default();
    let events = columns!(py, rows, {
        "t_s" => |x: &Row| x.0 as f64 / 1e9, "flow" => |x: &Row| x.1, "node" => |x: &Row| node_name(x.2), "kind" => |x: &Row| x.3,
        "seq" => |x: &Row| x.4, "len" => |x: &Row| x.5, "cause" => |x: &Row| x.6, "backoff" => |x: &Row| x.7,
        "rto_ms" => |x: &Row| x.8.map(|v| v as f64 / 1e6), "cwnd_bytes" => |x: &Row| x.9, "ssthresh_bytes" => |x: &Row| x.10,
    });
    out.set_item("events", events)?;
    let series = columns!(py, r.flow_samples, {
        "t_s" => |s| s.t_ns as f64 / 1e9, "flow" => |s| s.flow, "cwnd_bytes" => |s| s.cwnd_bytes,
        "ssthresh_bytes" => |s| finite(s.ssthresh_bytes), "srtt_ms" => |s| s.srtt_ns.map(|x| x as f64 / 1e6),
        "bytes_in_flight" => |s| s.bytes_in_flight, "bytes_acked" => |s| s.bytes_acked,
        "bytes_received" => |s| s.bytes_received, "peer_window_bytes" => |s| s.peer_window_bytes,
    });
    out.set_item("series", series)?;
    let queues = columns!(py, r.queue_samples, {
        "t_s" => |s| s.t_ns as f64 / 1e9, "link" => |s| r.channels[s.channel as usize].0.clone(),
        "from" => |s| r.channels[s.channel as usize].1.clone(), "to" => |s| r.channels[s.channel as usize].2.clone(),
        "packets" => |s| s.packets, "bytes" => |s| s.bytes, "tx_bytes" => |s| s.tx_bytes,
    });
    out.set_item("queues", queues)?;
    let requests = columns!(py, r.requests, {
        "flow" => |x| x.0, "index" => |x| x.1.index, "scheduled_s" => |x| x.1.scheduled_at.0 as f64 / 1e9,
        "sent_s" => |x| x.1.sent_at.map(|t| t.0 as f64 / 1e9), "completed_s" => |x| x.1.completed_at.map(|t| t.0 as f64 / 1e9),
        "response_bytes" => |x| x.1.response_bytes,
        "download_s" => |x| match (x.1.sent_at, x.1.completed_at) { (Some(a), Some(b)) => Some((b.0 - a.0) as f64 / 1e9), _ => None },
    });
    out.set_item("requests", requests)?;
    let ns = |t: u64| t as f64 / 1e9;
    let name_of = |f: u32| r.flows.get(f as usize).map(|x| x.name.clone()).unwrap_or_default();
    let video_clients = columns!(py, r.video_clients, {
        "flow" => |c| c.flow, "client" => |c| c.client.clone(), "joined_s" => |c| ns(c.joined_ns),
        "startup_s" => |c| c.startup_s, "stall_count" => |c| c.stall_count, "stall_total_s" => |c| c.stall_total_s,
        "liveness_s" => |c| c.liveness_s, "live_latency_s" => |c| c.live_latency_s,
        "mean_bitrate_kbps" => |c| c.mean_bitrate_bps as f64 / 1e3, "switches" => |c| c.switches,
        "bytes" => |c| c.bytes, "segments" => |c| c.segments, "abr" => |c| c.abr.clone(),
    });
    out.set_item("video_clients", video_clients)?;
    let video_segments = columns!(py, r.video_segments, {
        "flow" => |s| s.flow, "client" => |s| name_of(s.flow), "segment" => |s| s.segment, "quality" => |s| s.quality,
        "bitrate_kbps" => |s| s.bitrate_bps as f64 / 1e3, "bytes" => |s| s.bytes,
        "available_s" => |s| ns(s.available_ns), "requested_s" => |s| ns(s.requested_ns),
        "first_byte_s" => |s| s.first_byte_ns.map(ns), "done_s" => |s| s.done_ns.map(ns),
        "download_s" => |s| s.download_s, "deadline_met" => |s| s.deadline_met,
        "play_start_s" => |s| s.play_start_ns.map(ns), "srtt_at_done_ms" => |s| s.srtt_at_done_ns.map(|x| x as f64 / 1e6),
    });
    out.set_item("video_segments", video_segments)?;
    let video_stalls = columns!(py, r.video_stalls, {
        "flow" => |s| s.flow, "client" => |s| name_of(s.flow), "start_s" => |s| ns(s.start_ns),
        "end_s" => |s| s.end_ns.map(ns), "duration_s" => |s| s.duration_s, "segment" => |s| s.segment,
        "cause" => |s| s.cause.clone(), "rto_events" => |s| s.rto_events, "retransmissions" => |s| s.retransmissions,
        "recovery_episodes" => |s| s.recovery_episodes, "restart_after_idle" => |s| s.restart_after_idle,
        "download_kbps" => |s| s.download_bps.map(|b| b / 1e3), "bitrate_kbps" => |s| s.bitrate_bps.map(|b| b as f64 / 1e3),
    });
    out.set_item("video_stalls", video_stalls)?;
    let video_buffer = columns!(py, r.video_buffer, {
        "t_s" => |b| ns(b.t_ns), "flow" => |b| b.flow, "buffer_s" => |b| b.buffer_s, "buffer_bytes" => |b| b.buffer_bytes,
        "state" => |b| ["startup", "playing", "stalled", "ended"][b.state as usize], "live_latency_s" => |b| b.live_latency_s,
    });
    out.set_item("video_buffer", video_buffer)?;
    let ms = |t: u64| t as f64 / 1e6;
    let progressive = columns!(py, r.progressive, {
        "flow" => |p| p.flow, "client" => |p| p.client.clone(), "mode" => |p| p.mode.clone(),
        "rate_kbps" => |p| p.rate_bps as f64 / 1e3, "file_bytes" => |p| p.file_bytes, "startup_bytes" => |p| p.startup_bytes,
        "request_s" => |p| p.request_ns.map(ns), "throttle_start_s" => |p| p.throttle_start_ns.map(ns),
        "throttle_end_s" => |p| p.throttle_end_ns.map(ns), "body_done" => |p| p.body_done,
        "rtt_startup_ms" => |p| p.rtt_startup_ns.map(ms), "startup_goodput_kbps" => |p| p.startup_goodput_bps.map(|b| b / 1e3),
        "throttle_goodput_kbps" => |p| p.throttle_goodput_bps.map(|b| b / 1e3),
        "throttle_data_segments" => |p| p.throttle_data_segments, "throttle_retransmissions" => |p| p.throttle_retransmissions,
        "throttle_retrans_rate" => |p| p.throttle_retrans_rate, "srtt_end_ms" => |p| p.srtt_end_ns.map(ms),
        "unclamped_share" => |p| p.unclamped_share, "playback_start_s" => |p| p.playback_start_ns.map(ns),
        "rebuffer_count" => |p| p.rebuffer_count, "rebuffer_total_s" => |p| p.rebuffer_total_s, "flow_s" => |p| p.flow_s,
        "picture_discards" => |p| p.picture_discards,
    });
    out.set_item("progressive", progressive)?;
    let summary = PyDict::new(py);
    summary.set_item("scenario", &r.scenario)?;
    summary.set_item("seed", r.seed)?;
    summary.set_item("duration_s", r.duration_ns as f64 / 1e9)?;
    summary.set_item("flows", r.flows.len())?;
    summary.set_item("events_processed", r.events_processed)?;
    summary.set_item("packets_sent", r.packets_sent)?;
    summary.set_item("unroutable_packets", r.unroutable)?;
    summary.set_item("total_bytes", r.flows.iter().map(|f| f.bytes).sum::<u64>())?;
    summary.set_item(
        "aggregate_goodput_mbps",
        r.flows.iter().map(|f| f.bytes).sum::<u64>() as f64 * 8.0 / (r.duration_ns as f64 / 1e9) / 1e6,
    )?;
    summary.set_item("retransmissions", r.flows.iter().map(|f| f.retrans_fast + f.retrans_timeout + f.retrans_tlp).sum::<u64>())?;
    summary.set_item("rto_count", r.flows.iter().map(|f| f.rto_count).sum::<u64>())?;
    summary.set_item("drops", r.links.iter().map(|l| l.queue_drops + l.loss_drops).sum::<u64>())?;
    if !r.video_clients.is_empty() {
        let v = &r.video_clients;
        let mean = |xs: Vec<f64>| {
            if xs.is_empty() {
                None
            } else {
                Some(xs.iter().sum::<f64>() / xs.len() as f64)
            }
        };
        summary.set_item("video_clients", v.len())?;
        summary.set_item("video_stalls", r.video_stalls.len())?;
        summary.set_item("video_mean_startup_s", mean(v.iter().filter_map(|c| c.startup_s).collect()))?;
        summary.set_item("video_mean_liveness_s", mean(v.iter().filter_map(|c| c.liveness_s).collect()))?;
        summary.set_item("video_mean_bitrate_kbps", mean(v.iter().map(|c| c.mean_bitrate_bps as f64 / 1e3).collect()))?;
        summary.set_item("video_total_stall_s", v.iter().map(|c| c.stall_total_s).sum::<f64>())?;
    }
    out.set_item("summary", summary)?;
    let pcaps = PyList::new(py, r.pcap_files.iter().map(|p| p.to_string_lossy().into_owned()))?;
    out.set_item("pcaps", pcaps)?;
    Ok(out.unbind())
}

/// The simulator's tables with no rows: their schemas, declared once by the Rust types (used by
/// `tcpvideo emulate`, which writes the same tables from real runs).
#[pyfunction]
fn simulation_empty_tables(py: Python<'_>) -> PyResult<Py<PyDict>> {
    tables(py, &Results::default())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(simulation_empty_tables, m)?)?;
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add_class::<Simulation>()?;
    m.add_function(wrap_pyfunction!(scenario_check, m)?)?;
    Ok(())
}
