//! Capture analyzer exposed to Python (`tcpvideo.analyze`): runs `tcpvideo_trace` without the
//! GIL and returns every table as a dict of encoded columns (raw little-endian buffers and
//! dictionary-coded text, see [`Column`]), plus the summary as JSON text.
//! python/tcpvideo/analyze.py turns the columns into pyarrow Tables without a Python object per
//! cell (the big tables — stalls, bursts — have hundreds of thousands of rows).

use std::path::PathBuf;
use std::time::Duration;

use pyo3::exceptions::{PyIOError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::columns::{text, Column};

use tcpvideo_trace::{AnalyzeOptions, RtoStyle, TraceError};

fn err(e: TraceError) -> PyErr {
    match e {
        TraceError::Io(..) => PyIOError::new_err(e.to_string()),
        _ => PyValueError::new_err(e.to_string()),
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
/// "retransmissions", "bursts", "http", "frame_types", "rtt_buckets": columns, "summary": str};
/// with `summary_only` only {"summary": str}: `tcpvideo analyze` without --out prints the summary
/// and would drop the columns (on the speed bench's veth capture 111 k stalls and 90 k bursts,
/// encoded with the GIL held after the analysis; issue 16).
#[pyfunction]
#[pyo3(signature = (paths, options=None, progress=None, summary_only=false))]
fn analyze_captures<'py>(
    py: Python<'py>,
    paths: Vec<PathBuf>,
    options: Option<&Bound<'py, PyDict>>,
    progress: Option<PyObject>,
    summary_only: bool,
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
    if summary_only {
        out.set_item("summary", a.summary_json())?;
        return Ok(out);
    }
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
                tlp_retrans,
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
                packets_out,
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
