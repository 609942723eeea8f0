//! Run one scenario file (TOML or JSON, by extension) and print the work done and a digest of
//! the result tables — the simulator alone, without Python, so a profiler (`valgrind
//! --tool=callgrind`, `perf`) sees only the run (bench/README.md "Session 9").
//!
//!     cargo run -p tcpvideo-sim --release --example run_scenario -- SCENARIO.json [SEED]
//!
//! The digest (FNV-1a over the Debug text of the flows, links, video and event tables) changes
//! if any field of them does: two builds printing the same digest computed the same results.

use std::fmt::Write as _;

fn fnv1a(bytes: &[u8]) -> u64 {
    // FNV-1a, 64 bit: no dependency, stable across builds and platforms.
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: run_scenario SCENARIO.(json|toml) [SEED]");
        std::process::exit(2);
    };
    let seed = match args.next().map(|s| s.parse::<u64>()) {
        None => None,
        Some(Ok(s)) => Some(s),
        Some(Err(_)) => {
            eprintln!("seed: not an unsigned integer");
            std::process::exit(2);
        }
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    let loaded = if path.ends_with(".json") {
        tcpvideo_sim::scenario::load_json(&text, seed)
    } else {
        tcpvideo_sim::scenario::load_toml(&text, seed)
    };
    let sc = match loaded {
        Ok(sc) => sc,
        Err(e) => {
            eprintln!("{path}: {}", e.0);
            std::process::exit(1);
        }
    };
    let r = match tcpvideo_sim::sim::run_scenario(sc, None) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    let mut text = String::new();
    let _ = write!(text, "{:?}{:?}{:?}{:?}{:?}{:?}", r.flows, r.links, r.video_clients, r.video_segments, r.video_stalls, r.events);
    println!(
        "events {} packets {} tcp_log {} segments {} digest {:016x}",
        r.events_processed,
        r.packets_sent,
        r.events.len(),
        r.video_segments.len(),
        fnv1a(text.as_bytes())
    );
}
