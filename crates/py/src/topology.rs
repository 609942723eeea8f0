//! `scenario_topology(text, fmt, seed)`: a scenario resolved by the simulator's own parser
//! (crates/sim/src/scenario.rs) and network builder (crates/sim/src/network.rs), returned as plain
//! Python data — nodes with their IPv4 address, links with both directions' settings, each node's
//! next hop towards every host, flows with their applications and TCP settings, and what to
//! record. `tcpvideo emulate` builds the real network from this, so the emulated run has the
//! simulator's addresses, routes, start times and request schedules by construction.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use tcpvideo_sim::loss::LossSpec;
use tcpvideo_sim::network::{Network, NodeKind, QueueLimit};
use tcpvideo_sim::scenario::{AppDef, DirDef, Direction, TcpSpec};

use crate::sim::load;

fn ipv4(a: u32) -> String {
    std::net::Ipv4Addr::from(a).to_string()
}

fn dir_dict<'py>(py: Python<'py>, d: &DirDef) -> PyResult<Bound<'py, PyDict>> {
    let o = PyDict::new(py);
    o.set_item("rate_bps", d.rate.bits_per_sec)?;
    o.set_item("delay_ns", d.delay.as_nanos() as u64)?;
    match d.limit {
        QueueLimit::Packets(p) => o.set_item("queue_packets", p)?,
        QueueLimit::Bytes(b) => o.set_item("queue_bytes", b)?,
    }
    let loss = PyDict::new(py);
    match d.loss {
        LossSpec::None => loss.set_item("model", "none")?,
        LossSpec::Bernoulli { p } => {
            loss.set_item("model", "bernoulli")?;
            loss.set_item("p", p)?;
        }
        LossSpec::Keyed { p } => {
            loss.set_item("model", "keyed")?;
            loss.set_item("p", p)?;
        }
        LossSpec::GilbertElliott { p, r, loss_good, loss_bad } => {
            loss.set_item("model", "gilbert_elliott")?;
            loss.set_item("p", p)?;
            loss.set_item("r", r)?;
            loss.set_item("loss_good", loss_good)?;
            loss.set_item("loss_bad", loss_bad)?;
        }
        LossSpec::GilbertElliottTime { p, mean_bad_ns, loss_good, loss_bad } => {
            loss.set_item("model", "gilbert_elliott_time")?;
            loss.set_item("p", p)?;
            loss.set_item("mean_bad_ns", mean_bad_ns)?;
            loss.set_item("loss_good", loss_good)?;
            loss.set_item("loss_bad", loss_bad)?;
        }
    }
    o.set_item("loss", loss)?;
    Ok(o)
}

/// The TCP keys a scenario set explicitly (unset keys are absent: Linux defaults apply).
fn tcp_dict<'py>(py: Python<'py>, t: &TcpSpec) -> PyResult<Bound<'py, PyDict>> {
    let o = PyDict::new(py);
    macro_rules! put {
        ($($f:ident),*) => { $( if let Some(v) = &t.$f { o.set_item(stringify!($f), v.clone())?; } )* };
    }
    put!(
        cc,
        mss,
        initial_cwnd,
        sack,
        timestamps,
        window_scaling,
        quickack_segments,
        slow_start_after_idle,
        dupack_threshold,
        nagle,
        keepalive_probes,
        rack_tlp,
        tlp,
        frto,
        tso
    );
    if let Some(p) = &t.cc_params {
        o.set_item("cc_params", p.clone().into_iter().collect::<Vec<(String, f64)>>())?;
    }
    macro_rules! put_dur {
        ($($f:ident),*) => { $( if let Some(v) = &t.$f {
            let d = v.duration(concat!("tcp.", stringify!($f))).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.0))?;
            o.set_item(concat!(stringify!($f), "_ns"), d.as_nanos() as u64)?;
        } )* };
    }
    put_dur!(min_rto, initial_rto, max_rto, delayed_ack, keepalive_idle, keepalive_interval);
    macro_rules! put_bytes {
        ($($f:ident),*) => { $( if let Some(v) = &t.$f {
            let b = v.bytes(concat!("tcp.", stringify!($f))).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.0))?;
            o.set_item(stringify!($f), b)?;
        } )* };
    }
    put_bytes!(rcv_buf, snd_buf);
    Ok(o)
}

/// scenario_topology(text, fmt, seed=None) -> dict
///
/// The resolved scenario: {"name", "seed", "duration_ns", "nodes": [{name, kind, ip}],
/// "links": [{name, a, b, ab: {...}, ba: {...}}], "routes": [{node, dst, link, next}] (node's
/// next hop towards each host), "flows": [{name, client, server, start_ns, base_rtt_ns, app,
/// reader, clamps, tcp}], "record": {pcaps, snaplen, sample_interval_ns}}. Node and link fields
/// are indices into the lists. Raises ScenarioError like `scenario_check`.
#[pyfunction]
#[pyo3(signature = (text, fmt, seed=None))]
fn scenario_topology(py: Python<'_>, text: &str, fmt: &str, seed: Option<u64>) -> PyResult<Py<PyDict>> {
    let sc = load(text, fmt, seed)?;
    let net = Network::from_defs(&sc.nodes, &sc.links, sc.seed);
    let out = PyDict::new(py);
    out.set_item("name", &sc.name)?;
    out.set_item("seed", sc.seed)?;
    out.set_item("duration_ns", sc.duration.as_nanos() as u64)?;
    let nodes = PyList::empty(py);
    for (i, n) in sc.nodes.iter().enumerate() {
        let d = PyDict::new(py);
        d.set_item("name", &n.name)?;
        d.set_item("kind", if n.kind == NodeKind::Host { "host" } else { "router" })?;
        d.set_item("ip", ipv4(Network::ip_of(i as u32)))?;
        nodes.append(d)?;
    }
    out.set_item("nodes", nodes)?;
    let links = PyList::empty(py);
    for l in &sc.links {
        let d = PyDict::new(py);
        d.set_item("name", &l.name)?;
        d.set_item("a", l.a)?;
        d.set_item("b", l.b)?;
        d.set_item("ab", dir_dict(py, &l.ab)?)?;
        d.set_item("ba", dir_dict(py, &l.ba)?)?;
        links.append(d)?;
    }
    out.set_item("links", links)?;
    let routes = PyList::empty(py);
    for from in 0..sc.nodes.len() as u32 {
        for (dst, n) in sc.nodes.iter().enumerate() {
            if n.kind != NodeKind::Host || dst as u32 == from {
                continue;
            }
            if let Some(c) = net.route(from, dst as u32) {
                let ch = &net.channels[c as usize];
                let d = PyDict::new(py);
                d.set_item("node", from)?;
                d.set_item("dst", dst)?;
                d.set_item("link", ch.link)?;
                d.set_item("next", ch.to)?;
                routes.append(d)?;
            }
        }
    }
    out.set_item("routes", routes)?;
    let flows = PyList::empty(py);
    for f in &sc.flows {
        let d = PyDict::new(py);
        d.set_item("name", &f.name)?;
        d.set_item("client", f.client)?;
        d.set_item("server", f.server)?;
        d.set_item("start_ns", f.start.as_nanos() as u64)?;
        d.set_item("base_rtt_ns", f.base_rtt.as_nanos() as u64)?;
        let app = PyDict::new(py);
        match &f.app {
            AppDef::Bulk { bytes, direction, close } => {
                app.set_item("kind", "bulk")?;
                app.set_item("bytes", *bytes)?;
                app.set_item("direction", if *direction == Direction::Down { "down" } else { "up" })?;
                app.set_item("close", *close)?;
            }
            AppDef::ReqResp { requests } => {
                app.set_item("kind", "reqresp")?;
                let rs: Vec<(u64, u64, u64)> =
                    requests.iter().map(|r| (r.at.as_nanos() as u64, r.request_bytes, r.response_bytes)).collect();
                app.set_item("requests", rs)?;
            }
            // Video players (crates/sim/src/app/player.rs) have no real-Linux counterpart yet:
            // the kind is passed on so the emulator can refuse it by name.
            AppDef::Video { live, .. } => {
                app.set_item("kind", if *live { "live" } else { "vod" })?;
            }
            // The real origin (issue 13, branch origin) will serve these; passed on by name.
            AppDef::Progressive(p) => {
                app.set_item("kind", "progressive")?;
                app.set_item("mode", &p.mode_name)?;
                app.set_item("rate_bps", p.rate.bits_per_sec)?;
            }
            AppDef::Crowd { publisher, .. } => {
                app.set_item("kind", if *publisher { "publish" } else { "subscribe" })?;
            }
        }
        d.set_item("app", app)?;
        let reader = PyDict::new(py);
        reader.set_item("rate_bps", f.reader.rate.map(|r| r.bits_per_sec))?;
        let pauses: Vec<(u64, u64)> = f.reader.pauses.iter().map(|(a, b)| (a.as_nanos() as u64, b.as_nanos() as u64)).collect();
        reader.set_item("pauses", pauses)?;
        d.set_item("reader", reader)?;
        let clamps: Vec<(u64, Option<u64>)> = f.clamps.iter().map(|(t, c)| (t.as_nanos() as u64, *c)).collect();
        d.set_item("clamps", clamps)?;
        d.set_item("tcp", tcp_dict(py, &f.tcp)?)?;
        flows.append(d)?;
    }
    out.set_item("flows", flows)?;
    let rec = PyDict::new(py);
    let pcaps = PyList::empty(py);
    for p in &sc.record.pcaps {
        let d = PyDict::new(py);
        d.set_item("link", p.link)?;
        d.set_item("at", p.at)?;
        d.set_item("file", &p.file)?;
        pcaps.append(d)?;
    }
    rec.set_item("pcaps", pcaps)?;
    rec.set_item("snaplen", sc.record.snaplen)?;
    rec.set_item("sample_interval_ns", sc.record.sample_interval.map(|d| d.as_nanos() as u64))?;
    out.set_item("record", rec)?;
    Ok(out.unbind())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(scenario_topology, m)?)?;
    Ok(())
}
