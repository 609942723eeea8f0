//! The link emulator for Python (`tcpvideo._core.Link`, and `DelayLine`, the per-address delay
//! line of the seed-004 harness): thin conversions around tcpvideo-linkem (crates/linkem), which
//! documents the model, the runtime and every counter.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::Mutex;
use std::time::Duration;

use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use tcpvideo_linkem::counters::DirCounters;
use tcpvideo_linkem::delay::{AddressDelays, AddressKey};
use tcpvideo_linkem::spec::direction_from_pairs;
use tcpvideo_linkem::{DirectionConfig, Link as RsLink, LinkConfig};

/// Counters of one direction as a dict (the names the benches and emulate read).
pub fn counters_dict<'py>(py: Python<'py>, c: &DirCounters) -> PyResult<Bound<'py, PyDict>> {
    let s = c.snapshot();
    let d = PyDict::new(py);
    let us = |x: Option<Duration>| x.map(|d| d.as_secs_f64() * 1e6);
    d.set_item("packets_in", s.packets_in)?;
    d.set_item("bytes_in", s.bytes_in)?;
    d.set_item("packets", s.delivered_packets)?;
    d.set_item("bytes", s.delivered_bytes)?;
    d.set_item("queue_drops", s.queue_drops)?;
    d.set_item("loss_drops", s.loss_drops)?;
    d.set_item("write_errors", s.write_errors)?;
    d.set_item("truncated", s.truncated)?;
    d.set_item("non_ipv4", s.non_ipv4)?;
    d.set_item("max_queue_packets", s.max_queue_packets)?;
    d.set_item("max_queue_bytes", s.max_queue_bytes)?;
    d.set_item("queue_packet_s", s.queue_packet_us as f64 / 1e6)?;
    d.set_item("queue_byte_s", s.queue_byte_us as f64 / 1e6)?;
    d.set_item("tx_bytes", s.tx_bytes)?;
    d.set_item("held_max", s.held_max)?;
    d.set_item("late_max_us", s.late_max.as_secs_f64() * 1e6)?;
    d.set_item("late_mean_us", s.late_mean.as_secs_f64() * 1e6)?;
    d.set_item("late_p50_us", us(s.late_p50))?;
    d.set_item("late_p99_us", us(s.late_p99))?;
    d.set_item("late_p999_us", us(s.late_p999))?;
    Ok(d)
}

fn stop_dict<'py>(py: Python<'py>, link: &mut RsLink) -> PyResult<Bound<'py, PyDict>> {
    let r = py.allow_threads(|| link.stop());
    let d = both_directions(py, link)?;
    match r {
        Ok(notes) => {
            d.set_item("notes", notes)?;
            d.set_item("error", py.None())?;
        }
        Err(e) => {
            d.set_item("notes", Vec::<String>::new())?;
            d.set_item("error", e)?;
        }
    }
    Ok(d)
}

/// A link configured but maybe not started yet, then running.
struct Slot {
    pending: Option<(i32, i32, LinkConfig)>,
    running: Option<RsLink>,
}

/// {"a_to_b": {...}, "b_to_a": {...}}: a link's counters per direction.
fn both_directions<'py>(py: Python<'py>, link: &RsLink) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("a_to_b", counters_dict(py, &link.counters()[0])?)?;
    d.set_item("b_to_a", counters_dict(py, &link.counters()[1])?)?;
    Ok(d)
}

/// `stats()` of `Link` and `DelayLine`: the running link's counters so far.
fn slot_stats<'py>(py: Python<'py>, s: &Mutex<Slot>) -> PyResult<Bound<'py, PyDict>> {
    let s = s.lock().unwrap();
    let l = s.running.as_ref().ok_or_else(|| PyRuntimeError::new_err("not started"))?;
    both_directions(py, l)
}

/// `running()` of `Link` and `DelayLine`: false before start, after stop() or after an error.
fn slot_running(s: &Mutex<Slot>) -> bool {
    s.lock().unwrap().running.as_ref().is_some_and(|l| l.running())
}

fn start_slot(s: &Mutex<Slot>) -> PyResult<()> {
    let mut s = s.lock().unwrap();
    let (a, b, cfg) = s.pending.take().ok_or_else(|| PyRuntimeError::new_err("already started"))?;
    s.running = Some(RsLink::start(a, b, cfg).map_err(|e| PyOSError::new_err(e.to_string()))?);
    Ok(())
}

fn pairs(d: HashMap<String, Bound<'_, PyAny>>) -> PyResult<Vec<(String, String)>> {
    d.into_iter().map(|(k, v)| Ok((k, v.str()?.to_string()))).collect()
}

/// Link(fd_a, fd_b, ab={}, ba={}, seed=1, channel_ab=0, channel_ba=1, sample_interval=None,
///      rt_priority=0)
///
/// An emulated link between two TUN fds (`open_tun`): `ab`/`ba` are the settings of each
/// direction with linkem's keys (`rate`, `trace`, `queue`, `queue_bytes`, `delay`, `jitter`,
/// `loss`, `loss_p`, `loss_r`, `loss_good`, `loss_bad`; values with units like the scenario's).
/// `seed` and the channel numbers pick the random streams (the simulator's for the same link).
/// `start()` runs it on a native thread; `stats()` reads the counters; `samples()` takes the queue
/// samples so far (every `sample_interval` seconds) as columns per direction; `stop()` ends it and
/// returns the counters plus "notes" and "error". A bad setting raises ValueError naming the key.
#[pyclass(frozen, module = "tcpvideo._core")]
struct Link {
    slot: Mutex<Slot>,
}

#[pymethods]
impl Link {
    #[new]
    #[pyo3(signature = (fd_a, fd_b, ab=HashMap::new(), ba=HashMap::new(), seed=1, channel_ab=0, channel_ba=1,
                        sample_interval=None, rt_priority=0))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        fd_a: i32,
        fd_b: i32,
        ab: HashMap<String, Bound<'_, PyAny>>,
        ba: HashMap<String, Bound<'_, PyAny>>,
        seed: u64,
        channel_ab: u64,
        channel_ba: u64,
        sample_interval: Option<f64>,
        rt_priority: i32,
    ) -> PyResult<Self> {
        let a_to_b = direction_from_pairs(&pairs(ab)?, "ab").map_err(PyValueError::new_err)?;
        let b_to_a = direction_from_pairs(&pairs(ba)?, "ba").map_err(PyValueError::new_err)?;
        let sample_interval = match sample_interval {
            Some(s) if !(1e-4..=60.0).contains(&s) => return Err(PyValueError::new_err("sample_interval: must be within [100 us, 60 s]")),
            Some(s) => Some(Duration::from_secs_f64(s)),
            None => None,
        };
        let cfg = LinkConfig { a_to_b, b_to_a, seed, channel_a_to_b: channel_ab, channel_b_to_a: channel_ba, sample_interval, rt_priority };
        Ok(Link { slot: Mutex::new(Slot { pending: Some((fd_a, fd_b, cfg)), running: None }) })
    }

    /// Start forwarding on a native thread; returns at once. A link runs once.
    fn start(&self) -> PyResult<()> {
        start_slot(&self.slot)
    }

    /// Whether the forwarding thread is running (False after stop() or after an error).
    fn running(&self) -> bool {
        slot_running(&self.slot)
    }

    /// Counters so far: {"a_to_b": {...}, "b_to_a": {...}}.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        slot_stats(py, &self.slot)
    }

    /// Queue samples taken since the last call: {"a_to_b": {t_ns, packets, bytes, tx_bytes}, ...}.
    fn samples<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.slot.lock().unwrap();
        let l = s.running.as_ref().ok_or_else(|| PyRuntimeError::new_err("not started"))?;
        let d = PyDict::new(py);
        for (k, c) in [("a_to_b", &l.counters()[0]), ("b_to_a", &l.counters()[1])] {
            let v = c.take_samples();
            let cols = PyDict::new(py);
            cols.set_item("t_ns", v.iter().map(|q| q.t_ns).collect::<Vec<_>>())?;
            cols.set_item("packets", v.iter().map(|q| q.packets).collect::<Vec<_>>())?;
            cols.set_item("bytes", v.iter().map(|q| q.bytes).collect::<Vec<_>>())?;
            cols.set_item("tx_bytes", v.iter().map(|q| q.tx_bytes).collect::<Vec<_>>())?;
            d.set_item(k, cols)?;
        }
        Ok(d)
    }

    /// Stop the thread (packets still held are dropped), wait for it, return the counters.
    fn stop<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let mut s = self.slot.lock().unwrap();
        let l = s.running.as_mut().ok_or_else(|| PyRuntimeError::new_err("not started"))?;
        stop_dict(py, l)
    }
}

fn parse_table(t: HashMap<String, f64>, key: AddressKey) -> PyResult<AddressDelays> {
    let mut delays = HashMap::with_capacity(t.len());
    for (k, v) in t {
        let a: Ipv4Addr = k.parse().map_err(|_| PyValueError::new_err(format!("not an IPv4 address: {k:?}")))?;
        delays.insert(u32::from(a), secs(v)?);
    }
    Ok(AddressDelays { key: Some(key), delays })
}

fn secs(s: f64) -> PyResult<Duration> {
    if !(0.0..=60.0).contains(&s) {
        return Err(PyValueError::new_err(format!("delay {s} s outside [0, 60] s")));
    }
    Ok(Duration::from_secs_f64(s))
}

fn parse_key(k: &str) -> PyResult<AddressKey> {
    match k {
        "dst" => Ok(AddressKey::Destination),
        "src" => Ok(AddressKey::Source),
        _ => Err(PyValueError::new_err(format!("key must be 'dst' or 'src', not {k:?}"))),
    }
}

/// DelayLine(fd_a, fd_b, a_to_b={}, b_to_a={}, default_a_to_b=0.0, default_b_to_a=0.0,
///           key_a_to_b="dst", key_b_to_a="src", rt_priority=0)
///
/// A linkem link with delay only, per address: `a_to_b` maps an IPv4 address (the packet's
/// `key_a_to_b` address) to the one-way delay in seconds of packets A -> B, `b_to_a` likewise;
/// other packets get the defaults. Same methods as `Link` (no samples).
#[pyclass(frozen, module = "tcpvideo._core")]
struct DelayLine {
    slot: Mutex<Slot>,
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
            return Err(PyValueError::new_err("need two distinct open file descriptors"));
        }
        let dir = |table, default, key| -> PyResult<DirectionConfig> {
            Ok(DirectionConfig { delay: secs(default)?, address_delays: parse_table(table, parse_key(key)?)?, ..Default::default() })
        };
        let cfg = LinkConfig {
            a_to_b: dir(a_to_b, default_a_to_b, key_a_to_b)?,
            b_to_a: dir(b_to_a, default_b_to_a, key_b_to_a)?,
            channel_b_to_a: 1,
            rt_priority,
            ..Default::default()
        };
        Ok(DelayLine { slot: Mutex::new(Slot { pending: Some((fd_a, fd_b, cfg)), running: None }) })
    }

    fn start(&self) -> PyResult<()> {
        start_slot(&self.slot)
    }

    fn running(&self) -> bool {
        slot_running(&self.slot)
    }

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        slot_stats(py, &self.slot)
    }

    fn stop<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let mut s = self.slot.lock().unwrap();
        match s.running.as_mut() {
            Some(l) => stop_dict(py, l),
            None => {
                let d = PyDict::new(py);
                d.set_item("error", "never started")?;
                Ok(d)
            }
        }
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Link>()?;
    m.add_class::<DelayLine>()?;
    Ok(())
}
