//! `QdiscSampler` for Python: samples a qdisc's backlog every millisecond over rtnetlink with
//! tcpvideo-linkem (crates/linkem/src/qdisc_sampler.rs, which explains how).

use std::sync::Mutex;

use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use tcpvideo_linkem::qdisc_sampler::{self as rs, Sample};

/// QdiscSampler(ifname, netns=None, interval=0.001)
///
/// Sample the root qdisc of `ifname` (in the namespace file `netns`) every `interval` seconds
/// on a native thread: `start()`, then `stop()` returns the samples as columns (t_ns monotonic,
/// qlen packets, backlog bytes, and the cumulative drops, overlimits, requeues, bytes, packets).
/// `sample()` takes one sample now (same namespace handling), for checks.
#[pyclass(frozen, module = "tcpvideo._core")]
struct QdiscSampler {
    ifname: String,
    netns: Option<String>,
    interval: std::time::Duration,
    running: Mutex<Option<rs::QdiscSampler>>,
}

fn columns<'py>(py: Python<'py>, v: &[Sample]) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("t_ns", v.iter().map(|s| s.t_ns).collect::<Vec<_>>())?;
    d.set_item("qlen", v.iter().map(|s| s.qlen).collect::<Vec<_>>())?;
    d.set_item("backlog", v.iter().map(|s| s.backlog).collect::<Vec<_>>())?;
    d.set_item("drops", v.iter().map(|s| s.drops).collect::<Vec<_>>())?;
    d.set_item(
        "overlimits",
        v.iter().map(|s| s.overlimits).collect::<Vec<_>>(),
    )?;
    d.set_item("requeues", v.iter().map(|s| s.requeues).collect::<Vec<_>>())?;
    d.set_item("bytes", v.iter().map(|s| s.bytes).collect::<Vec<_>>())?;
    d.set_item("packets", v.iter().map(|s| s.packets).collect::<Vec<_>>())?;
    Ok(d)
}

#[pymethods]
impl QdiscSampler {
    #[new]
    #[pyo3(signature = (ifname, netns=None, interval=0.001))]
    fn new(ifname: String, netns: Option<String>, interval: f64) -> PyResult<Self> {
        if !(1e-5..=10.0).contains(&interval) {
            return Err(PyValueError::new_err(
                "interval must be within [10 us, 10 s]",
            ));
        }
        Ok(QdiscSampler {
            ifname,
            netns,
            interval: std::time::Duration::from_secs_f64(interval),
            running: Mutex::new(None),
        })
    }

    /// One sample now, as a dict of scalars.
    fn sample<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (ifname, ns) = (self.ifname.clone(), self.netns.clone());
        let s = py
            .allow_threads(move || rs::sample_once(&ifname, ns.as_deref()))
            .map_err(|e| PyOSError::new_err(e.to_string()))?;
        let d = PyDict::new(py);
        for (k, v) in [
            ("t_ns", s.t_ns),
            ("qlen", s.qlen as u64),
            ("backlog", s.backlog as u64),
            ("drops", s.drops as u64),
            ("overlimits", s.overlimits as u64),
            ("requeues", s.requeues as u64),
            ("bytes", s.bytes),
            ("packets", s.packets as u64),
        ] {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    /// Start sampling; returns once the first sample succeeded (raises if it cannot sample).
    fn start(&self, py: Python<'_>) -> PyResult<()> {
        let mut run = self.running.lock().unwrap();
        if run.is_some() {
            return Err(PyRuntimeError::new_err("already started"));
        }
        let (ifname, ns, interval) = (self.ifname.clone(), self.netns.clone(), self.interval);
        let s = py
            .allow_threads(move || rs::QdiscSampler::start(&ifname, ns.as_deref(), interval))
            .map_err(PyOSError::new_err)?;
        *run = Some(s);
        Ok(())
    }

    /// Stop and return every sample as columns, plus "error": why sampling ended early, or None.
    fn stop<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self
            .running
            .lock()
            .unwrap()
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("not running"))?;
        let (v, err) = py
            .allow_threads(move || s.stop())
            .map_err(PyOSError::new_err)?;
        let d = columns(py, &v)?;
        d.set_item("error", err)?;
        Ok(d)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<QdiscSampler>()?;
    Ok(())
}
