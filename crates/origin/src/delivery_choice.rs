//! Which delivery mode a request gets, and with which parameters.
//!
//! In order of precedence: the request's query (`?mode=trickle&rate_kbps=1000`), the longest
//! matching path-prefix rule of the configuration (`--path-mode /vod/=trickle`), the default
//! mode (`--mode`, `bulk` unless set).
//!
//! Modes are `tcpvideo_model::delivery`'s names (`bulk`, `baseline`, `shrunk-block`, `trickle`,
//! `pacing-cap`, `bbr`: the Trickle paper's A/B groups and the modern alternatives) plus the
//! origin's `cwnd-limit` (a fixed clamp of `cwnd` packets on the whole response, seed 004's
//! "cwnd limit" mitigation).
//!
//! Query keys (all optional; an unknown value is a 400 naming the key):
//! - `mode`: a mode name;
//! - `rate_kbps`: the video's encoding rate R (needed by every mode that paces or clamps);
//! - `startup_s`: media seconds in ustreamer's startup burst (default `--startup-s`, paper: 30);
//! - `block`: application-pacing block size in bytes (`baseline`/`shrunk-block`/`bbr`);
//! - `cwnd`: packets for `cwnd-limit`.

use std::time::Duration;

use tcpvideo_model::delivery::DeliveryMode;
use tcpvideo_model::units::Bandwidth;

/// A mode as the origin runs it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OriginMode {
    /// A `tcpvideo_model::delivery` mode, driven by `Ustreamer`.
    Model(DeliveryMode),
    /// A fixed cwnd clamp for the whole response, bulk writes.
    CwndLimit { packets: u32 },
}

impl OriginMode {
    /// Parse a mode name (`cwnd-limit` takes its packets from `cwnd`, default 10).
    pub fn from_name(name: &str, cwnd: Option<u32>) -> Result<OriginMode, String> {
        if name == "cwnd-limit" {
            return Ok(OriginMode::CwndLimit { packets: cwnd.unwrap_or(10) });
        }
        DeliveryMode::from_name(name).map(OriginMode::Model).map_err(|e| format!("{e}, cwnd-limit"))
    }

    /// Whether the mode needs the encoding rate.
    pub fn needs_rate(&self) -> bool {
        !matches!(self, OriginMode::Model(DeliveryMode::Bulk) | OriginMode::CwndLimit { .. })
    }

    /// Whether the mode sets a cwnd clamp on the socket.
    pub fn clamps(&self) -> bool {
        matches!(self, OriginMode::Model(DeliveryMode::Trickle { .. }) | OriginMode::CwndLimit { .. })
    }

    pub fn label(&self) -> &'static str {
        match self {
            OriginMode::CwndLimit { .. } => "cwnd-limit",
            OriginMode::Model(DeliveryMode::Bulk) => "bulk",
            OriginMode::Model(DeliveryMode::AppPacing { block_bytes }) if *block_bytes <= 16384 => "shrunk-block",
            OriginMode::Model(DeliveryMode::AppPacing { .. }) => "baseline",
            OriginMode::Model(DeliveryMode::Trickle { .. }) => "trickle",
            OriginMode::Model(DeliveryMode::PacingCap { .. }) => "pacing-cap",
            OriginMode::Model(DeliveryMode::Bbr) => "bbr",
        }
    }
}

/// The delivery of one response.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DeliveryPlan {
    pub mode: OriginMode,
    /// R; `None` only for modes that do not need it.
    pub encoding_rate: Option<Bandwidth>,
    pub startup_media: Duration,
}

/// The configured defaults and path rules.
#[derive(Clone, Debug)]
pub struct DeliveryRules {
    pub default_mode: OriginMode,
    /// (path prefix, mode), any order; the longest matching prefix wins.
    pub path_modes: Vec<(String, OriginMode)>,
    pub default_rate: Option<Bandwidth>,
    pub default_startup: Duration,
}

impl DeliveryRules {
    pub fn bulk() -> DeliveryRules {
        DeliveryRules {
            default_mode: OriginMode::Model(DeliveryMode::Bulk),
            path_modes: Vec::new(),
            default_rate: None,
            default_startup: Duration::from_secs(30),
        }
    }

    /// The plan for a request with this path and query; the error is one line naming the key.
    pub fn plan(&self, path: &str, query: Option<&str>) -> Result<DeliveryPlan, String> {
        let q = |key: &str| query_value(query, key);
        let cwnd = match q("cwnd") {
            Some(v) => Some(v.parse::<u32>().ok().filter(|c| *c >= 1).ok_or_else(|| format!("cwnd: expected packets >= 1, got {v:?}"))?),
            None => None,
        };
        let mut mode = match q("mode") {
            Some(name) => OriginMode::from_name(name, cwnd).map_err(|e| format!("mode: {e}"))?,
            None => self
                .path_modes
                .iter()
                .filter(|(p, _)| path.starts_with(p.as_str()))
                .max_by_key(|(p, _)| p.len())
                .map_or(self.default_mode, |(_, m)| *m),
        };
        if let (OriginMode::CwndLimit { packets }, Some(c)) = (&mut mode, cwnd) {
            *packets = c;
        }
        if let Some(v) = q("block") {
            let block = v
                .parse::<u64>()
                .ok()
                .filter(|b| (1024..=16 << 20).contains(b))
                .ok_or_else(|| format!("block: expected bytes in 1024..=16777216, got {v:?}"))?;
            match &mut mode {
                OriginMode::Model(DeliveryMode::AppPacing { block_bytes }) => *block_bytes = block,
                _ => return Err(format!("block: only for application pacing modes, not {}", mode.label())),
            }
        }
        let encoding_rate = match q("rate_kbps") {
            Some(v) => Some(Bandwidth::from_bps(
                v.parse::<u64>()
                    .ok()
                    .filter(|k| *k >= 1)
                    .ok_or_else(|| format!("rate_kbps: expected kbit/s >= 1, got {v:?}"))?
                    .saturating_mul(1000),
            )),
            None => self.default_rate,
        };
        if mode.needs_rate() && encoding_rate.is_none() {
            return Err(format!("rate_kbps: mode {} needs the encoding rate (query rate_kbps or --rate-kbps)", mode.label()));
        }
        let startup_media = match q("startup_s") {
            Some(v) => Duration::from_secs_f64(
                v.parse::<f64>()
                    .ok()
                    .filter(|s| s.is_finite() && (0.0..=86_400.0).contains(s))
                    .ok_or_else(|| format!("startup_s: expected seconds in 0..=86400, got {v:?}"))?,
            ),
            None => self.default_startup,
        };
        Ok(DeliveryPlan { mode, encoding_rate, startup_media })
    }
}

/// The value of query key `key`, if present.
pub fn query_value<'a>(query: Option<&'a str>, key: &str) -> Option<&'a str> {
    query?.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        (k == key).then_some(v)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> DeliveryRules {
        DeliveryRules {
            default_mode: OriginMode::Model(DeliveryMode::Bulk),
            path_modes: vec![
                ("/vod/".into(), OriginMode::from_name("baseline", None).unwrap()),
                ("/vod/tr/".into(), OriginMode::from_name("trickle", None).unwrap()),
            ],
            default_rate: Some(Bandwidth::from_mbps(1)),
            default_startup: Duration::from_secs(30),
        }
    }

    #[test]
    fn the_query_beats_the_longest_path_rule_which_beats_the_default() {
        let r = rules();
        assert_eq!(r.plan("/live/a.ts", None).unwrap().mode.label(), "bulk");
        assert_eq!(r.plan("/vod/a.mp4", None).unwrap().mode.label(), "baseline");
        assert_eq!(r.plan("/vod/tr/a.mp4", None).unwrap().mode.label(), "trickle");
        assert_eq!(r.plan("/vod/tr/a.mp4", Some("mode=pacing-cap")).unwrap().mode.label(), "pacing-cap");
    }

    #[test]
    fn query_parameters_set_rate_block_startup_and_cwnd() {
        let p = rules().plan("/x", Some("mode=baseline&block=16384&rate_kbps=2500&startup_s=0")).unwrap();
        assert_eq!(p.mode, OriginMode::Model(DeliveryMode::AppPacing { block_bytes: 16384 }));
        assert_eq!(p.encoding_rate, Some(Bandwidth::from_bps(2_500_000)));
        assert_eq!(p.startup_media, Duration::ZERO);
        assert_eq!(rules().plan("/x", Some("mode=cwnd-limit&cwnd=20")).unwrap().mode, OriginMode::CwndLimit { packets: 20 });
    }

    #[test]
    fn bad_values_are_one_line_naming_the_key() {
        let r = rules();
        for (q, key) in [
            ("mode=trikle", "mode:"),
            ("rate_kbps=-1", "rate_kbps:"),
            ("startup_s=x", "startup_s:"),
            ("block=5", "block:"),
            ("mode=trickle&block=16384", "block:"),
            ("cwnd=0", "cwnd:"),
        ] {
            let e = r.plan("/x", Some(q)).unwrap_err();
            assert!(e.starts_with(key) && !e.contains('\n'), "{q}: {e}");
        }
        let no_rate = DeliveryRules::bulk();
        assert!(no_rate.plan("/x", Some("mode=trickle")).unwrap_err().starts_with("rate_kbps:"));
        assert!(no_rate.plan("/x", None).is_ok());
    }
}
