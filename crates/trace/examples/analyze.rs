//! Time one analysis of capture files from the command line (no Python):
//! `cargo run --release -p tcpvideo-trace --example analyze -- [--threads N] [--no-app] FILE...`
//! Prints packets, flows, stalls, wall time and packets/s (`--json`: also the summary and flows).

use std::path::PathBuf;
use std::time::Instant;

fn main() {
    let mut opts = tcpvideo_trace::AnalyzeOptions::default();
    let mut files = Vec::new();
    let mut json = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--threads" => opts.threads = args.next().and_then(|x| x.parse().ok()).expect("--threads N"),
            "--no-app" => opts.app_parse = false,
            "--json" => json = true,
            f => files.push(PathBuf::from(f)),
        }
    }
    let t = Instant::now();
    let a = tcpvideo_trace::analyze_paths(&files, &opts).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(2)
    });
    let dt = t.elapsed().as_secs_f64();
    if json {
        println!("{}", a.summary_json());
        println!("{}", serde_json::to_string_pretty(&a.flows).unwrap());
    }
    println!(
        "packets {} tcp {} flows {} stalls {} retrans {} bursts {} | {:.3} s, {:.2} M pkts/s",
        a.decode.packets,
        a.decode.tcp,
        a.flows.len(),
        a.stalls.len(),
        a.retransmissions.len(),
        a.bursts.len(),
        dt,
        a.decode.packets as f64 / dt / 1e6
    );
}
