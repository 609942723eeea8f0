//! Scaffolding shared by the simulator's integration tests: a scratch directory per test and the
//! one-path scenario most of them use (server —1 Gbit/s, 1 ms— router —WAN, 19 ms— client, so a
//! 40 ms base RTT), written as scenario TOML (docs/scenario.md) so the tests exercise the same
//! loader users do.

use std::path::PathBuf;

/// A fresh, empty directory for one test's outputs (per process, so parallel runs don't collide).
pub fn out_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tcpvideo-sim-tests-{}", std::process::id())).join(name);
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// The WAN link and what the test adds around the one flow.
pub struct Path<'a> {
    /// WAN (router → client and back) rate, e.g. "20Mbps".
    pub rate: &'a str,
    /// WAN queue limit in packets.
    pub queue: u32,
    /// Extra keys of the WAN link (e.g. a loss model); may be empty.
    pub wan_extra: &'a str,
    /// Extra keys of the `[[flow]]` table; may be empty.
    pub flow: &'a str,
    /// Where the pcap is recorded: `(link, at)`, e.g. `("access", "server")`.
    pub pcap_at: (&'a str, &'a str),
    /// Extra keys of the `[record]` table; may be empty.
    pub record_extra: &'a str,
}

impl Path<'_> {
    /// The scenario TOML, 10 simulated seconds.
    pub fn toml(&self) -> String {
        let Path { rate, queue, wan_extra, flow, pcap_at: (link, at), record_extra } = self;
        format!(
            r#"
duration = "10s"
[[node]]
name = "server"
[[node]]
name = "router"
kind = "router"
[[node]]
name = "client"
[[link]]
name = "access"
a = "server"
b = "router"
rate = "1Gbps"
delay = "1ms"
[[link]]
name = "wan"
a = "router"
b = "client"
rate = "{rate}"
delay = "19ms"
queue = {queue}
{wan_extra}
[[flow]]
client = "client"
server = "server"
{flow}
[record]
pcap = [{{ link = "{link}", at = "{at}" }}]
{record_extra}
"#
        )
    }
}
