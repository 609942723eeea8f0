//! A direction's settings from `key=value` pairs: the `linkem` binary's `--ab`/`--ba` strings
//! (`rate=100Mbps,delay=20ms,queue=100,loss=bernoulli,loss_p=0.01`) and the Python binding's
//! keyword dicts use the same keys, with the simulator's units (`"55ms"`, `"1 Gbit/s"`, `"64KiB"`;
//! crates/sim/src/scenario.rs `Qty`).
//!
//! Keys: `rate` (none: unlimited), `trace` (a Mahimahi trace file, instead of `rate`), `queue`
//! (packets) or `queue_bytes`, `delay`, `jitter`, `loss` (`bernoulli`, `gilbert_elliott` or `keyed`) with
//! `loss_p` (Bernoulli's probability, or Good→Bad), `loss_r` (Bad→Good), `loss_good`, `loss_bad`
//! (loss probability in each state; defaults 0 and 1). Every error names the key.

use std::sync::Arc;

use tcpvideo_sim::loss::LossSpec;
use tcpvideo_sim::network::QueueLimit;
use tcpvideo_sim::scenario::Qty;

use crate::bottleneck::Service;
use crate::pipe::DirectionConfig;
use crate::trace::MahimahiTrace;

const KEYS: &[&str] = &["rate", "trace", "queue", "queue_bytes", "delay", "jitter", "loss", "loss_p", "loss_r", "loss_good", "loss_bad"];

/// Parse `rate=...,delay=...` (comma-separated pairs; empty string: a plain wire).
pub fn parse_direction(text: &str, what: &str) -> Result<DirectionConfig, String> {
    let mut pairs = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((k, v)) = part.split_once('=') else {
            return Err(format!("{what}: {part:?} is not key=value"));
        };
        pairs.push((k.trim().to_string(), v.trim().to_string()));
    }
    direction_from_pairs(&pairs, what)
}

/// Build a direction from `(key, value)` pairs; `what` prefixes error messages (e.g. "ab").
pub fn direction_from_pairs(pairs: &[(String, String)], what: &str) -> Result<DirectionConfig, String> {
    let mut cfg = DirectionConfig::default();
    let get = |k: &str| pairs.iter().rev().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
    for (k, _) in pairs {
        if !KEYS.contains(&k.as_str()) {
            return Err(format!("{what}.{k}: unknown key (use {})", KEYS.join(", ")));
        }
    }
    let qty = |v: &str| match v.parse::<f64>() {
        Ok(n) => Qty::Num(n),
        Err(_) => Qty::Str(v.to_string()),
    };
    let path = |k: &str| format!("{what}.{k}");
    let err = |e: tcpvideo_sim::scenario::ScenarioError| e.0;
    match (get("rate"), get("trace")) {
        (Some(_), Some(_)) => return Err(format!("{what}.trace: give either rate or trace, not both")),
        (Some(r), None) => cfg.service = Service::Rate(qty(r).rate(&path("rate")).map_err(err)?),
        (None, Some(file)) => {
            let text = std::fs::read_to_string(file).map_err(|e| format!("{what}.trace: cannot read {file:?}: {e}"))?;
            let t = MahimahiTrace::parse(&text).map_err(|e| format!("{what}.trace: {file}: {e}"))?;
            cfg.service = Service::Trace(Arc::new(t));
        }
        (None, None) => {}
    }
    match (get("queue"), get("queue_bytes")) {
        (Some(_), Some(_)) => return Err(format!("{what}.queue_bytes: give either queue (packets) or queue_bytes, not both")),
        (Some(q), None) => {
            let n: u64 = q.parse().map_err(|_| format!("{what}.queue: {q:?} is not a whole number of packets"))?;
            cfg.limit = QueueLimit::Packets(n);
        }
        (None, Some(b)) => cfg.limit = QueueLimit::Bytes(qty(b).bytes(&path("queue_bytes")).map_err(err)?),
        (None, None) => {}
    }
    if let Some(d) = get("delay") {
        cfg.delay = qty(d).duration(&path("delay")).map_err(err)?;
    }
    if let Some(j) = get("jitter") {
        cfg.jitter = qty(j).duration(&path("jitter")).map_err(err)?;
    }
    let prob = |k: &str, default: Option<f64>| -> Result<f64, String> {
        let v = match get(k) {
            Some(v) => v.parse::<f64>().map_err(|_| format!("{what}.{k}: {v:?} is not a number"))?,
            None => default.ok_or_else(|| format!("{what}.{k}: missing"))?,
        };
        if !(0.0..=1.0).contains(&v) {
            return Err(format!("{what}.{k}: probability {v} is not in [0, 1]"));
        }
        Ok(v)
    };
    cfg.loss = match get("loss") {
        None => {
            if let Some(k) = ["loss_p", "loss_r", "loss_good", "loss_bad"].into_iter().find(|k| get(k).is_some()) {
                return Err(format!("{what}.{k}: set loss=bernoulli, loss=gilbert_elliott or loss=keyed too"));
            }
            LossSpec::None
        }
        Some(m @ ("bernoulli" | "keyed")) => {
            if let Some(k) = ["loss_r", "loss_good", "loss_bad"].into_iter().find(|k| get(k).is_some()) {
                return Err(format!("{what}.{k}: only for loss=gilbert_elliott"));
            }
            let p = prob("loss_p", None)?;
            if m == "keyed" {
                LossSpec::Keyed { p }
            } else {
                LossSpec::Bernoulli { p }
            }
        }
        Some("gilbert_elliott") => LossSpec::GilbertElliott {
            p: prob("loss_p", None)?,
            r: prob("loss_r", None)?,
            loss_good: prob("loss_good", Some(0.0))?,
            loss_bad: prob("loss_bad", Some(1.0))?,
        },
        Some(o) => return Err(format!("{what}.loss: unknown model {o:?} (bernoulli, gilbert_elliott, keyed)")),
    };
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tcpvideo_model::Bandwidth;

    #[test]
    fn a_direction_string_reads_with_units() {
        let d = parse_direction("rate=100Mbps, delay=20ms,jitter=500us,queue_bytes=64KiB,loss=bernoulli,loss_p=0.01", "ab").unwrap();
        assert_eq!(d.service, Service::Rate(Bandwidth::from_mbps(100)));
        assert_eq!(d.delay, Duration::from_millis(20));
        assert_eq!(d.jitter, Duration::from_micros(500));
        assert_eq!(d.limit, QueueLimit::Bytes(65536));
        assert_eq!(d.loss, LossSpec::Bernoulli { p: 0.01 });
    }

    #[test]
    fn gilbert_elliott_takes_its_defaults_from_netem() {
        let d = parse_direction("loss=gilbert_elliott,loss_p=0.01,loss_r=0.3", "ba").unwrap();
        assert_eq!(d.loss, LossSpec::GilbertElliott { p: 0.01, r: 0.3, loss_good: 0.0, loss_bad: 1.0 });
        let d = parse_direction("loss=keyed,loss_p=0.01", "ab").unwrap();
        assert_eq!(d.loss, LossSpec::Keyed { p: 0.01 });
    }

    #[test]
    fn every_mistake_names_its_key() {
        for (text, key) in [
            ("rate=fast", "ab.rate"),
            ("delay=3parsecs", "ab.delay"),
            ("colour=red", "ab.colour"),
            ("queue=ten", "ab.queue"),
            ("loss=bernoulli", "ab.loss_p"),
            ("loss=bernoulli,loss_p=2", "ab.loss_p"),
            ("loss_p=0.1", "ab.loss_p"),
            ("loss=bernoulli,loss_p=0.1,loss_r=0.2", "ab.loss_r"),
            ("loss=burst", "ab.loss"),
            ("loss=keyed,loss_p=0.1,loss_r=0.2", "ab.loss_r"),
            ("rate=1Mbps,trace=x", "ab.trace"),
            ("trace=/nonexistent/trace", "ab.trace"),
            ("queue=1,queue_bytes=1", "ab.queue_bytes"),
            ("nonsense", "ab"),
        ] {
            let e = parse_direction(text, "ab").unwrap_err();
            assert!(e.starts_with(key), "{text}: {e}");
            assert!(!e.contains('\n'), "{text}: one line");
        }
    }
}
