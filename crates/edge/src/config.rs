//! The edge's settings (the `tcpvideo-edge` / `tcpvideo edge serve` options), with units.

use std::net::SocketAddr;
use std::time::Duration;

use tcpvideo_model::units::Bandwidth;

use crate::upstream::{BackhaulSample, UpstreamBase};

#[derive(Clone, Debug)]
pub struct EdgeConfig {
    /// The live source (`--upstream http://host:port/prefix`).
    pub upstream: UpstreamBase,
    /// Where receivers connect.
    pub listen: SocketAddr,
    /// Bound on the bytes of complete segments kept (in-flight bodies are bounded separately by
    /// `max_object_bytes` each).
    pub cache_bytes: u64,
    /// Largest segment the edge relays; larger ones are refused (502), not cached.
    pub max_object_bytes: u64,
    /// Largest playlist accepted from upstream; larger ones are rejected with a log line.
    pub max_playlist_bytes: u64,
    /// The operator's cap on x (parallel upstream connections per catch-up); `None` = no cap.
    pub max_x: Option<u32>,
    /// th_ran assumed for receivers that carry none (see `receiver_context`).
    pub default_ran: Option<Bandwidth>,
    /// How long an upstream media playlist is reused before it is fetched again.
    pub playlist_ttl: Duration,
    /// Connect + response headers deadline per upstream request.
    pub header_timeout: Duration,
    /// Longest pause between two body chunks from upstream.
    pub body_idle_timeout: Duration,
    /// Extra attempts of an upstream fetch that failed before its response head.
    pub retries: u32,
    /// Use this backhaul RTT instead of TCP_INFO's (for emulated paths measured elsewhere, tests).
    pub backhaul_rtt_override: Option<Duration>,
    /// Use this source MSS (bytes) instead of TCP_INFO's (an emulated path's MTU, tests on
    /// loopback whose 65 483-byte MSS is no backhaul's).
    pub backhaul_mss_override: Option<u64>,
    /// Keep one idle keep-alive connection to the source open (`UpstreamClient::spawn_standby`),
    /// so a new stream's first playlist does not wait for a handshake.
    pub standby_connection: bool,
}

impl EdgeConfig {
    /// Defaults for everything but the upstream and listen address.
    pub fn new(upstream: UpstreamBase, listen: SocketAddr) -> EdgeConfig {
        EdgeConfig {
            upstream,
            listen,
            cache_bytes: 512 << 20,
            max_object_bytes: 64 << 20,
            max_playlist_bytes: 1 << 20,
            max_x: Some(8),
            default_ran: None,
            playlist_ttl: Duration::from_millis(500),
            header_timeout: Duration::from_secs(10),
            body_idle_timeout: Duration::from_secs(10),
            retries: 1,
            backhaul_rtt_override: None,
            backhaul_mss_override: None,
            standby_connection: true,
        }
    }
}

impl EdgeConfig {
    /// The backhaul the model uses: the TCP_INFO measurement with the operator's overrides on
    /// top (an RTT override without a measurement assumes Ethernet's 1448-byte MSS).
    pub fn backhaul(&self, measured: Option<BackhaulSample>) -> Option<BackhaulSample> {
        let rtt = self.backhaul_rtt_override.or(measured.map(|b| b.rtt))?;
        let mss_bytes = self.backhaul_mss_override.or(measured.map(|b| b.mss_bytes)).unwrap_or(1448);
        Some(BackhaulSample { rtt, mss_bytes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> EdgeConfig {
        EdgeConfig::new(UpstreamBase::parse("http://127.0.0.1:9/").unwrap(), "127.0.0.1:0".parse().unwrap())
    }

    #[test]
    fn overrides_replace_only_their_own_field_of_the_measured_backhaul() {
        let measured = Some(BackhaulSample { rtt: Duration::from_micros(800), mss_bytes: 1448 });
        let mut c = config();
        assert_eq!(c.backhaul(measured), measured);
        assert_eq!(c.backhaul(None), None);
        c.backhaul_rtt_override = Some(Duration::from_millis(302));
        assert_eq!(c.backhaul(measured), Some(BackhaulSample { rtt: Duration::from_millis(302), mss_bytes: 1448 }));
        c.backhaul_mss_override = Some(1228);
        assert_eq!(c.backhaul(None), Some(BackhaulSample { rtt: Duration::from_millis(302), mss_bytes: 1228 }));
        c.backhaul_rtt_override = None;
        assert_eq!(c.backhaul(measured), Some(BackhaulSample { rtt: Duration::from_micros(800), mss_bytes: 1228 }));
    }
}
