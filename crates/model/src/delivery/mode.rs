//! The delivery modes a video server can run in the throttling phase, by name.
//!
//! The four groups of the Trickle paper's A/B test (§4.1) and the alternatives a user would weigh
//! against Trickle today:
//!
//! | name | what the server does after the startup phase |
//! |---|---|
//! | `bulk` | no throttling: writes as fast as TCP takes the data |
//! | `baseline` | ustreamer application pacing, 64 kB blocks, tokens at 1.25·R (baseline1/2) |
//! | `shrunk-block` | the same with 16 kB blocks |
//! | `trickle` | Algorithm 1: cwnd clamp 1.2·rtt·R/MSS, lifted when behind, floor 10 + write throttle |
//! | `pacing-cap` | writes as fast as TCP takes them, socket pacing rate capped at 1.25·R (Linux SO_MAX_PACING_RATE) |
//! | `bbr` | `baseline`'s 64 kB application pacing over a BBR socket (BBR paces every packet) |
//!
//! `bbr` only differs from `baseline` in the congestion control the runtime puts on the socket;
//! the mode records that so a runtime cannot forget it ([`DeliveryMode::congestion_control`]).

use std::fmt;

use super::token_bucket::{BLOCK_16KB, BLOCK_64KB};

/// A throttling-phase delivery mode.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DeliveryMode {
    Bulk,
    /// Token-bucket application pacing with this block size (tokens at 1.25·R, 100 ms floor).
    AppPacing {
        block_bytes: u64,
    },
    /// Trickle, Algorithm 1, with this clamp headroom (paper: 1.2).
    Trickle {
        headroom: f64,
    },
    /// Bulk writes, pacing rate capped at `gain`·R.
    PacingCap {
        gain: f64,
    },
    /// 64 kB application pacing over BBR.
    Bbr,
}

/// The registry: every name `from_name` accepts, with a one-line description.
pub const MODES: &[(&str, &str)] = &[
    ("bulk", "no throttling after startup"),
    (
        "baseline",
        "ustreamer application pacing: 64 kB writes, tokens at 1.25 x rate, 100 ms timer floor",
    ),
    (
        "shrunk-block",
        "ustreamer application pacing with 16 kB writes",
    ),
    (
        "trickle",
        "cwnd clamp 1.2 x rtt x rate / MSS, lifted while behind, floor 10 packets + write throttle",
    ),
    (
        "pacing-cap",
        "bulk writes, socket pacing rate capped at 1.25 x rate (SO_MAX_PACING_RATE)",
    ),
    ("bbr", "64 kB application pacing over a BBR socket"),
];

/// An unknown mode name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownMode(pub String);

impl fmt::Display for UnknownMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let known: Vec<&str> = MODES.iter().map(|m| m.0).collect();
        write!(
            f,
            "unknown delivery mode '{}' (known: {})",
            self.0,
            known.join(", ")
        )
    }
}

impl std::error::Error for UnknownMode {}

impl DeliveryMode {
    /// The mode of a registry name, with the paper's parameters.
    pub fn from_name(name: &str) -> Result<DeliveryMode, UnknownMode> {
        Ok(match name {
            "bulk" => DeliveryMode::Bulk,
            "baseline" | "baseline1" | "baseline2" => DeliveryMode::AppPacing {
                block_bytes: BLOCK_64KB,
            },
            "shrunk-block" => DeliveryMode::AppPacing {
                block_bytes: BLOCK_16KB,
            },
            "trickle" => DeliveryMode::Trickle { headroom: 1.2 },
            "pacing-cap" => DeliveryMode::PacingCap { gain: 1.25 },
            "bbr" => DeliveryMode::Bbr,
            other => return Err(UnknownMode(other.to_string())),
        })
    }

    /// The congestion control this mode needs on the socket, if it needs a particular one.
    pub fn congestion_control(&self) -> Option<&'static str> {
        match self {
            DeliveryMode::Bbr => Some("bbr"),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_name_parses() {
        for (name, _) in MODES {
            assert!(DeliveryMode::from_name(name).is_ok(), "{name}");
        }
    }

    #[test]
    fn an_unknown_name_is_one_line_listing_the_known_ones() {
        let e = DeliveryMode::from_name("trikle").unwrap_err().to_string();
        assert!(!e.contains('\n'));
        assert!(e.starts_with("unknown delivery mode 'trikle'"), "{e}");
        assert!(e.contains("trickle") && e.contains("shrunk-block"), "{e}");
    }

    #[test]
    fn the_ab_groups_have_the_papers_block_sizes() {
        assert_eq!(
            DeliveryMode::from_name("baseline1").unwrap(),
            DeliveryMode::AppPacing { block_bytes: 65536 }
        );
        assert_eq!(
            DeliveryMode::from_name("shrunk-block").unwrap(),
            DeliveryMode::AppPacing { block_bytes: 16384 }
        );
        assert_eq!(
            DeliveryMode::from_name("bbr").unwrap().congestion_control(),
            Some("bbr")
        );
    }
}
