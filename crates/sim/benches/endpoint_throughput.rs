//! Throughput of the TCP endpoint code alone: one flow, 60 simulated seconds through a
//! 100 Mbit/s, 50 ms RTT path with a 400-packet drop-tail queue, on the two-endpoint test wire
//! (`tcp::testing::Harness`, no engine). Prints segments per wall second.
//!
//!     cargo bench -p tcpvideo-sim --bench endpoint_throughput
//!     TCP_PERF_RACK=0 cargo bench -p tcpvideo-sim --bench endpoint_throughput   # RACK-TLP off
//!
//! (Moved from an `#[ignore]` unit test. The whole simulator's events/s against ns-3 is
//! bench/sim_speed.py.)

use std::time::{Duration, Instant};

use tcpvideo_model::Bandwidth;
use tcpvideo_sim::tcp::testing::{Harness, SERVER};
use tcpvideo_sim::tcp::TcpConfig;

fn main() {
    let rack_tlp = std::env::var("TCP_PERF_RACK").map_or(true, |v| v != "0");
    let mut h = Harness::pair(&TcpConfig { rack_tlp, ..TcpConfig::default() }, Duration::from_millis(25));
    h.rate = Some(Bandwidth::from_mbps(100));
    h.queue_limit = Some(400);
    h.keep_trace = false;
    h.establish();
    h.send(SERVER, 4_000_000_000);
    let wall = Instant::now();
    let mut sent = 0u64;
    for _ in 0..600 {
        h.run_for(Duration::from_millis(100));
        h.send(SERVER, 4_000_000_000);
        h.log.clear();
        sent = h.server.stats().segments_sent + h.client.stats().segments_sent;
    }
    let el = wall.elapsed();
    println!(
        "60 s at 100 Mbit/s (rack_tlp {rack_tlp}): {sent} segments in {el:?} = {:.2} M segments/s; goodput {:.1} Mbit/s; drops {}",
        sent as f64 / el.as_secs_f64() / 1e6,
        h.client.stats().bytes_received as f64 * 8.0 / 60e6,
        h.queue_drops
    );
}
