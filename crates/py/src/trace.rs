//! Capture analyzer exposed to Python (`tcpvideo.analyze`): runs `tcpvideo_trace` without the
//! GIL and returns every table as a dict of encoded columns (raw little-endian buffers and
//! dictionary-coded text, see [`Column`]), plus the summary as JSON text.
//! python/tcpvideo/analyze.py turns the columns into pyarrow Tables without a Python object per
//! cell (the big tables — stalls, bursts — have hundreds of thousands of rows).

use std::path::PathBuf;
use std::time::Duration;

use pyo3::exceptions::{PyIOError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use pyo3::IntoPyObjectExt;

use tcpvideo_trace::{AnalyzeOptions, RtoStyle, TraceError};

fn err(e: TraceError) -> PyErr {
    match e {
        TraceError::Io(..) => PyIOError::new_err(e.to_string()),
        _ => PyValueError::new_err(e.to_string()),
    }
}

/// A whole column, encoded for zero-copy loading on the Python side (no Python object per
/// cell): ("i64" | "f64" | "bool", little-endian bytes, validity bytes or None) for numbers, and
/// ("dict", i32 codes (−1 = null), (n, i32 offsets, UTF-8 bytes) of the distinct strings) for
/// text.
trait Column: Sized {
    fn column<'a>(py: Python<'_>, it: impl Iterator<Item = &'a Self>) -> PyResult<PyObject>
    where
        Self: 'a;
}

fn numeric(py: Python<'_>, kind: &str, data: Vec<u8>, valid: Option<Vec<u8>>) -> PyResult<PyObject> {
    let valid: PyObject = match valid {
        Some(v) => PyBytes::new(py, &v).into_any().unbind(),
        None => py.None(),
    };
    (kind, PyBytes::new(py, &data), valid).into_py_any(py)
}

macro_rules! int_column {
    ($($t:ty),*) => {$(
        impl Column for $t {
            fn column<'a>(py: Python<'_>, it: impl Iterator<Item = &'a Self>) -> PyResult<PyObject> {
                let mut d = Vec::new();
                for v in it {
                    d.extend_from_slice(&(*v as i64).to_le_bytes());
                }
                numeric(py, "i64", d, None)
            }
        }
        impl Column for Option<$t> {
            fn column<'a>(py: Python<'_>, it: impl Iterator<Item = &'a Self>) -> PyResult<PyObject> {
                let (mut d, mut m) = (Vec::new(), Vec::new());
                for v in it {
                    d.extend_from_slice(&(v.unwrap_or(0) as i64).to_le_bytes());
                    m.push(v.is_some() as u8);
                }
                numeric(py, "i64", d, Some(m))
            }
        }
    )*};
}
int_column!(u64, u32, u16, u8);

impl Column for f64 {
    fn column<'a>(py: Python<'_>, it: impl Iterator<Item = &'a Self>) -> PyResult<PyObject> {
        let mut d = Vec::new();
        for v in it {
            d.extend_from_slice(&v.to_le_bytes());
        }
        numeric(py, "f64", d, None)
    }
}
impl Column for Option<f64> {
    fn column<'a>(py: Python<'_>, it: impl Iterator<Item = &'a Self>) -> PyResult<PyObject> {
        let (mut d, mut m) = (Vec::new(), Vec::new());
        for v in it {
            d.extend_from_slice(&v.unwrap_or(0.0).to_le_bytes());
            m.push(v.is_some() as u8);
        }
        numeric(py, "f64", d, Some(m))
    }
}
impl Column for bool {
    fn column<'a>(py: Python<'_>, it: impl Iterator<Item = &'a Self>) -> PyResult<PyObject> {
        numeric(py, "bool", it.map(|&b| b as u8).collect(), None)
    }
}
impl Column for Option<bool> {
    fn column<'a>(py: Python<'_>, it: impl Iterator<Item = &'a Self>) -> PyResult<PyObject> {
        let (mut d, mut m) = (Vec::new(), Vec::new());
        for v in it {
            d.push(v.unwrap_or(false) as u8);
            m.push(v.is_some() as u8);
        }
        numeric(py, "bool", d, Some(m))
    }
}

/// Text column as dictionary codes (columns here have few distinct values: kinds, directions,
/// addresses).
fn text<'s>(py: Python<'_>, it: impl Iterator<Item = Option<&'s str>>) -> PyResult<PyObject> {
    let mut idx: std::collections::HashMap<&'s str, i32> = std::collections::HashMap::new();
    let mut cats: Vec<&'s str> = Vec::new();
    let mut codes = Vec::new();
    for v in it {
        let c = match v {
            None => -1,
            Some(s) => *idx.entry(s).or_insert_with(|| {
                cats.push(s);
                cats.len() as i32 - 1
            }),
        };
        codes.extend_from_slice(&c.to_le_bytes());
    }
    // The distinct strings as an Arrow string array's buffers: i32 offsets and UTF-8 bytes.
    let mut offsets = Vec::with_capacity(4 * (cats.len() + 1));
    let mut bytes = Vec::new();
    offsets.extend_from_slice(&0i32.to_le_bytes());
    for c in &cats {
        bytes.extend_from_slice(c.as_bytes());
        offsets.extend_from_slice(&(bytes.len() as i32).to_le_bytes());
    }
    let cats = (cats.len(), PyBytes::new(py, &offsets), PyBytes::new(py, &bytes));
    ("dict", PyBytes::new(py, &codes), cats).into_py_any(py)
}

impl Column for String {
    fn column<'a>(py: Python<'_>, it: impl Iterator<Item = &'a Self>) -> PyResult<PyObject> {
        text(py, it.map(|s| Some(s.as_str())))
    }
}
impl Column for Option<String> {
    fn column<'a>(py: Python<'_>, it: impl Iterator<Item = &'a Self>) -> PyResult<PyObject> {
        text(py, it.map(|s| s.as_deref()))
    }
}
impl Column for &'static str {
    fn column<'a>(py: Python<'_>, it: impl Iterator<Item = &'a Self>) -> PyResult<PyObject> {
        text(py, it.map(|s| Some(*s)))
    }
}

macro_rules! enum_column {
    ($($t:ty),*) => {$(
        impl Column for $t {
            fn column<'a>(py: Python<'_>, it: impl Iterator<Item = &'a Self>) -> PyResult<PyObject> {
                text(py, it.map(|v| Some(v.as_str())))
            }
        }
        impl Column for Option<$t> {
            fn column<'a>(py: Python<'_>, it: impl Iterator<Item = &'a Self>) -> PyResult<PyObject> {
                text(py, it.map(|v| v.map(|x| x.as_str())))
            }
        }
    )*};
}
enum_column!(tcpvideo_trace::StallKind, tcpvideo_trace::TimeoutType, tcpvideo_trace::RetransKind, tcpvideo_trace::flv::FrameType);

/// Build a dict of encoded columns from rows, one per named field (in the order given).
macro_rules! table {
    ($py:expr, $rows:expr, [$($f:ident),* $(,)?]) => {{
        let d = PyDict::new($py);
        $(
            d.set_item(stringify!($f), Column::column($py, $rows.iter().map(|r| &r.$f))?)?;
        )*
        d
    }};
}

fn get<'py, T: FromPyObject<'py>>(d: &Bound<'py, PyDict>, k: &str) -> PyResult<Option<T>> {
    match d.get_item(k)? {
        Some(v) if !v.is_none() => Ok(Some(v.extract()?)),
        _ => Ok(None),
    }
}

fn options(d: Option<&Bound<'_, PyDict>>) -> PyResult<AnalyzeOptions> {
    let mut o = AnalyzeOptions::default();
    let Some(d) = d else { return Ok(o) };
    const KNOWN: [&str; 16] = [
        "tau",
        "stall_floor_ms",
        "server_ports",
        "server_ips",
        "threads",
        "rto_style",
        "min_rto_ms",
        "initial_rto_ms",
        "burst_gap_ms",
        "burst_min_packets",
        "timeout_reordering_ms",
        "pairing_window_s",
        "idle_timeout_s",
        "channel_map",
        "app_parse",
        "keep_bursts",
    ];
    for k in d.keys() {
        let k: String = k.extract()?;
        if !KNOWN.contains(&k.as_str()) {
            return Err(PyValueError::new_err(format!("unknown analyze option {k:?}; known: {}", KNOWN.join(", "))));
        }
    }
    let ms = |x: f64| Duration::from_secs_f64(x / 1e3);
    if let Some(v) = get(d, "tau")? {
        o.tau = v;
    }
    if let Some(v) = get::<f64>(d, "stall_floor_ms")? {
        if !(v >= 0.0 && v.is_finite()) {
            return Err(PyValueError::new_err("stall_floor_ms must be a non-negative number"));
        }
        o.stall_floor = ms(v);
    }
    if let Some(v) = get(d, "server_ports")? {
        o.server_ports = v;
    }
    if let Some(v) = get(d, "server_ips")? {
        o.server_ips = v;
    }
    if let Some(v) = get(d, "threads")? {
        o.threads = v;
    }
    if let Some(v) = get::<String>(d, "rto_style")? {
        o.rto_style = match v.as_str() {
            "rfc6298" => RtoStyle::Rfc6298,
            "linux" => RtoStyle::Linux,
            _ => return Err(PyValueError::new_err("rto_style must be 'rfc6298' or 'linux'")),
        };
    }
    if let Some(v) = get(d, "min_rto_ms")? {
        o.min_rto = ms(v);
    }
    if let Some(v) = get(d, "initial_rto_ms")? {
        o.initial_rto = ms(v);
    }
    if let Some(v) = get(d, "burst_gap_ms")? {
        o.burst_gap = ms(v);
    }
    if let Some(v) = get(d, "burst_min_packets")? {
        o.burst_min_packets = v;
    }
    if let Some(v) = get(d, "timeout_reordering_ms")? {
        o.timeout_reordering = ms(v);
    }
    if let Some(v) = get::<f64>(d, "pairing_window_s")? {
        o.pairing_window = Duration::from_secs_f64(v);
    }
    if let Some(v) = get::<f64>(d, "idle_timeout_s")? {
        o.idle_timeout = Duration::from_secs_f64(v);
    }
    if let Some(v) = get(d, "channel_map")? {
        o.channel_map = v;
    }
    if let Some(v) = get(d, "app_parse")? {
        o.app_parse = v;
    }
    if let Some(v) = get(d, "keep_bursts")? {
        o.keep_bursts = v;
    }
    Ok(o)
}

/// Analyze capture files. `progress(bytes_done, bytes_total_or_None, packets, file_index,
/// files)` is called about every 64 MiB. Returns {"flows": {...}, "stalls": {...},
/// "retransmissions", "bursts", "http", "frame_types", "rtt_buckets": columns, "summary": str}.
#[pyfunction]
#[pyo3(signature = (paths, options=None, progress=None))]
fn analyze_captures<'py>(
    py: Python<'py>,
    paths: Vec<PathBuf>,
    options: Option<&Bound<'py, PyDict>>,
    progress: Option<PyObject>,
) -> PyResult<Bound<'py, PyDict>> {
    let opts = self::options(options)?;
    let a = py
        .allow_threads(|| {
            let cb = |p: tcpvideo_trace::Progress| {
                if let Some(f) = &progress {
                    Python::with_gil(|py| {
                        // A failing callback must not abort the analysis; report and go on.
                        if let Err(e) = f.call1(py, (p.bytes_done, p.bytes_total, p.packets, p.file_index, p.files)) {
                            e.print(py);
                        }
                    });
                }
            };
            tcpvideo_trace::analyze_paths_with_progress(&paths, &opts, &cb)
        })
        .map_err(err)?;
    let out = PyDict::new(py);
    out.set_item(
        "flows",
        table!(
            py,
            a.flows,
            [
                flow_id,
                client_ip,
                client_port,
                server_ip,
                server_port,
                ip_version,
                server_by,
                handshake,
                direction,
                app,
                channel,
                name,
                role,
                start_ns,
                end_ns,
                fct_ns,
                bytes,
                bytes_up,
                bytes_down,
                throughput_bps,
                goodput_bps,
                vantage,
                rtt_3whs_ns,
                rtt_initial_ns,
                rtt_server_half_ns,
                rtt_client_half_ns,
                rtt_samples,
                rtt_min_ns,
                rtt_mean_ns,
                srtt_end_ns,
                rto_end_ns,
                mss,
                packets_up,
                packets_down,
                data_packets,
                retrans_packets,
                fast_retrans,
                timeout_retrans,
                recovery_retrans,
                other_retrans,
                unclassified_retrans,
                retrans_rate,
                reordered_packets,
                reordering_rate,
                timeout_reorderings,
                stall_count,
                stall_time_ns,
                stall_share,
                zero_window_episodes,
                keepalive_packets,
                bursts,
                max_in_flight,
                syn_retrans,
                closed_by,
            ]
        ),
    )?;
    out.set_item(
        "stalls",
        table!(
            py,
            a.stalls,
            [flow_id, direction, start_ns, end_ns, duration_ns, threshold_ns, kind, timeout_type, frame, in_flight, paired,]
        ),
    )?;
    out.set_item(
        "retransmissions",
        table!(
            py,
            a.retransmissions,
            [
                flow_id,
                ts_ns,
                seq,
                len,
                kind,
                prior_retrans,
                frame,
                timeout_type,
                max_outstanding_pkts,
                segs_after,
                dupacks,
                spurious,
                ack_beyond,
                flow_tail,
            ]
        ),
    )?;
    out.set_item("bursts", table!(py, a.bursts, [flow_id, direction, start_ns, end_ns, packets, bytes, frame, retransmitted]))?;
    out.set_item(
        "http",
        table!(
            py,
            a.http,
            [flow_id, index, method, path, status, request_ns, response_start_ns, response_end_ns, on_period_ns, response_bytes,]
        ),
    )?;
    let ft = table!(
        py,
        a.frame_types,
        [
            frame,
            frames,
            frames_share,
            mean_interval_s,
            mean_size_bytes,
            packets,
            retrans_packets,
            loss_rate,
            timeout_retrans,
            timeout_per_loss,
        ]
    );
    for (i, t) in tcpvideo_trace::TimeoutType::ALL.iter().enumerate() {
        let col: Vec<u64> = a.frame_types.iter().map(|f| f.timeout_types[i]).collect();
        ft.set_item(format!("timeout_{}", t.as_str()), Column::column(py, col.iter())?)?;
    }
    out.set_item("frame_types", ft)?;
    out.set_item("rtt_buckets", table!(py, a.rtt_buckets, [lo_kb, hi_kb, samples, mean_rtt_ms, mean_ratio]))?;
    out.set_item("summary", a.summary_json())?;
    Ok(out)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(analyze_captures, m)?)?;
    Ok(())
}
