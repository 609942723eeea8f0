//! Congestion controls on the real simulated TCP endpoint (issue 3): the claims of seed 001 and the
//! sanity every registered algorithm must pass once it drives the Linux-like endpoint instead of
//! a synthetic ACK clock.
//!
//! - Seed 001 (Cavendish et al., "Congestion Avoidance TCP Improvements for Video Streaming"):
//!   CCP is delay-based and "packet loss does not trigger any special cwnd adjustment", so on a
//!   wireless-like path with random loss it keeps its window where CUBIC, which halves (×0.7) on
//!   every loss episode, collapses. Checked at 100 Mbit/s, 100 ms RTT, 1 % Bernoulli loss.
//! - BBR v1 (Cardwell et al. 2016, Linux tcp_bbr.c) with different RTTs next to CUBIC: no flow
//!   starves (each ≥ 10 % of the link). BBR's PROBE_BW start phase is seeded per flow through
//!   the `seed` parameter (the scenario sets a different one per flow).
//! - Every algorithm of the registry fills a 20 Mbit/s, 40 ms path with a one-BDP drop-tail queue
//!   (≥ 80 % goodput in 20 s), and a per-flow parameter override in the scenario reaches the
//!   algorithm and changes what it does.
//!
//! Scenarios are written as TOML text (the user-facing format, docs/scenario.md) and run through
//! the public API (`scenario::load_toml`, `sim::run_scenario`). The runs are long for unit tests
//! (tens of simulated seconds at up to 100 Mbit/s): run them in release mode,
//! `cargo test -p tcpvideo-sim --release --test cc_suite -- --nocapture`, which prints the numbers.

use tcpvideo_model::cc::{ALGORITHMS, ParamInfo};
use tcpvideo_sim::scenario::load_toml;
use tcpvideo_sim::sim::{run_scenario, FlowMetrics, LinkMetrics, Results};

/// One flow of a [`Path`]: its congestion control, parameter overrides and one-way access delay
/// (server side) in milliseconds, added to the bottleneck's.
struct FlowSpec {
    cc: &'static str,
    params: Vec<(&'static str, f64)>,
    access_delay_ms: f64,
    start_ms: u64,
}

impl FlowSpec {
    fn new(cc: &'static str, access_delay_ms: f64) -> FlowSpec {
        FlowSpec { cc, params: Vec::new(), access_delay_ms, start_ms: 0 }
    }
    fn param(mut self, name: &'static str, v: f64) -> FlowSpec {
        self.params.push((name, v));
        self
    }
}

/// A dumbbell written out as nodes and links: server s{i} —(access, own delay)— r1 —(bottleneck)—
/// r2 —(access, 0 delay)— client c{i}. The bottleneck r1→r2 carries the data and is the only
/// place with loss; r2→r1 carries the ACKs. Access links are 10 Gbit/s so they never queue.
/// With `shared = false` every flow gets its own copy of the bottleneck (routers r1_{i}, r2_{i}),
/// so flows of one scenario do not interact.
struct Path {
    name: &'static str,
    rate_mbps: u64,
    bottleneck_delay_ms: f64,
    queue_packets: u64,
    loss: Option<f64>,
    duration_s: u64,
    seed: u64,
    shared: bool,
    flows: Vec<FlowSpec>,
}

impl Path {
    fn toml(&self) -> String {
        let mut t = format!("name = \"{}\"\nduration = \"{}s\"\nseed = {}\n\n", self.name, self.duration_s, self.seed);
        let n_bottlenecks = if self.shared { 1 } else { self.flows.len() };
        let router = |side: u32, k: usize| if self.shared { format!("r{side}") } else { format!("r{side}_{k}") };
        for k in 0..n_bottlenecks {
            t += &format!("[[node]]\nname = \"{}\"\nkind = \"router\"\n[[node]]\nname = \"{}\"\nkind = \"router\"\n", router(1, k), router(2, k));
        }
        for i in 0..self.flows.len() {
            t += &format!("[[node]]\nname = \"s{i}\"\n[[node]]\nname = \"c{i}\"\n");
        }
        for k in 0..n_bottlenecks {
            let name = if self.shared { "bottleneck".to_string() } else { format!("bottleneck{k}") };
            t += &format!(
                "\n[[link]]\nname = \"{name}\"\na = \"{}\"\nb = \"{}\"\nrate = \"{}Mbps\"\ndelay = \"{}ms\"\nqueue = {}\n",
                router(1, k), router(2, k), self.rate_mbps, self.bottleneck_delay_ms, self.queue_packets
            );
            if let Some(p) = self.loss {
                // Loss on the data direction only (the wireless hop of seed 001 loses data frames).
                t += &format!("ab = {{ loss = {{ model = \"bernoulli\", p = {p} }} }}\n");
            }
        }
        for (i, f) in self.flows.iter().enumerate() {
            let k = if self.shared { 0 } else { i };
            t += &format!(
                "[[link]]\nname = \"a{i}\"\na = \"s{i}\"\nb = \"{}\"\nrate = \"10Gbps\"\ndelay = \"{}ms\"\nqueue = 10000\n",
                router(1, k), f.access_delay_ms
            );
            t += &format!("[[link]]\nname = \"b{i}\"\na = \"{}\"\nb = \"c{i}\"\nrate = \"10Gbps\"\ndelay = \"0ms\"\nqueue = 10000\n", router(2, k));
        }
        for (i, f) in self.flows.iter().enumerate() {
            t += &format!(
                "\n[[flow]]\nname = \"f{i}_{}\"\nclient = \"c{i}\"\nserver = \"s{i}\"\napp = \"bulk\"\nstart = \"{}ms\"\n[flow.tcp]\ncc = \"{}\"\n",
                f.cc, f.start_ms, f.cc
            );
            if !f.params.is_empty() {
                let kv: Vec<String> = f.params.iter().map(|(k, v)| format!("{k} = {v:?}")).collect();
                t += &format!("cc_params = {{ {} }}\n", kv.join(", "));
            }
        }
        t += "\n[record]\nevents = false\nsample_interval = \"10ms\"\n";
        t
    }

    fn run(&self) -> Results {
        let text = self.toml();
        let sc = load_toml(&text, None).unwrap_or_else(|e| panic!("scenario {}: {e}\n{text}", self.name));
        run_scenario(sc, None).unwrap_or_else(|e| panic!("run {}: {e}", self.name))
    }

    fn capacity_bps(&self) -> f64 {
        self.rate_mbps as f64 * 1e6
    }
}

/// The data direction of the (first) bottleneck.
fn bottleneck(r: &Results) -> &LinkMetrics {
    r.links.iter().find(|l| l.link.starts_with("bottleneck") && l.from.starts_with("r1")).expect("bottleneck r1->r2")
}

fn mbps(bps: f64) -> f64 {
    bps / 1e6
}

fn describe(f: &FlowMetrics) -> String {
    format!(
        "{:<14} goodput {:7.2} Mbit/s  retrans {:5} fast / {:5} after {:3} RTOs  srtt {:6.1} ms  max cwnd {:6} seg",
        f.name,
        mbps(f.goodput_bps),
        f.retrans_fast,
        f.retrans_timeout,
        f.rto_count,
        f.srtt_end_ns.unwrap_or(0) as f64 / 1e6,
        f.max_cwnd_bytes / 1448
    )
}

fn print_run(title: &str, p: &Path, r: &Results) {
    let b = bottleneck(r);
    println!(
        "[{title}] {} Mbit/s, bottleneck {} ms one-way, queue {} pkts, loss {:?}, {} s simulated",
        p.rate_mbps, p.bottleneck_delay_ms, p.queue_packets, p.loss, p.duration_s
    );
    for f in &r.flows {
        println!("  {}", describe(f));
    }
    println!(
        "  bottleneck: utilization {:.3}, mean queue {:.1} pkts, max queue {} pkts, queue drops {}, random drops {}",
        b.utilization, b.mean_queue_packets, b.max_queue_packets, b.queue_drops, b.loss_drops
    );
}

// ------------------------------------------------------------------ seed 001: wireless loss

/// Seed 001 §IV/§VI: on a 100 ms path with random (wireless) loss, CCP's delay-based window keeps
/// the pipe full while CUBIC's loss-driven window collapses.
#[test]
fn ccp_keeps_three_times_cubic_goodput_under_one_percent_random_loss() {
    let path = |cc: &'static str| Path {
        name: "seed001_wireless",
        rate_mbps: 100,
        // 100 ms base RTT: 2 × (49 ms bottleneck + 1 ms access).
        bottleneck_delay_ms: 49.0,
        // One BDP: 100 Mbit/s × 100 ms / 1500 B.
        queue_packets: 833,
        loss: Some(0.01),
        duration_s: 25,
        seed: 1,
        shared: true,
        flows: vec![FlowSpec::new(cc, 1.0)],
    };
    let ccp_path = path("ccp");
    let cubic_path = path("cubic");
    let ccp = ccp_path.run();
    let cubic = cubic_path.run();
    print_run("seed001 ccp", &ccp_path, &ccp);
    print_run("seed001 cubic", &cubic_path, &cubic);
    let (g_ccp, g_cubic) = (ccp.flows[0].goodput_bps, cubic.flows[0].goodput_bps);
    println!("  CCP / CUBIC goodput = {:.2} / {:.2} Mbit/s = {:.1}x", mbps(g_ccp), mbps(g_cubic), g_ccp / g_cubic);
    // The loss really happened on both runs (about 1 % of the data packets).
    for r in [&ccp, &cubic] {
        let b = bottleneck(r);
        let rate = b.loss_drops as f64 / (b.tx_packets + b.loss_drops) as f64;
        assert!((0.007..0.013).contains(&rate), "random loss rate {rate}");
    }
    assert!(g_cubic > 0.0);
    assert!(g_ccp >= 3.0 * g_cubic, "CCP {:.2} Mbit/s < 3 x CUBIC {:.2} Mbit/s", mbps(g_ccp), mbps(g_cubic));
}

// ------------------------------------------------------------------ BBR with different RTTs

fn bbr_mix(long_access_ms: f64, queue_packets: u64, seeds: (f64, f64)) -> Path {
    Path {
        name: "bbr_rtt_mix",
        rate_mbps: 20,
        bottleneck_delay_ms: 5.0,
        queue_packets,
        loss: None,
        duration_s: 60,
        seed: 3,
        shared: true,
        flows: vec![
            // base RTT = 2 × (5 ms bottleneck + access): 20 ms, 2 × (5 + long_access_ms), 20 ms.
            FlowSpec::new("bbr", 5.0).param("seed", seeds.0),
            FlowSpec::new("bbr", long_access_ms).param("seed", seeds.1),
            FlowSpec::new("cubic", 5.0),
        ],
    }
}

/// Two BBR flows (20 ms and 40 ms base RTT, PROBE_BW start phases seeded per flow) and one CUBIC
/// flow (20 ms) on a 20 Mbit/s bottleneck whose queue holds two BDPs of the longer path: nobody
/// starves (each ≥ 10 % of the link over 60 s). Over seed pairs (1,2) (3,4) (5,6) (7,8) (0,0)
/// the smallest shares were 22 % (short BBR), 40 % (long BBR), 21 % (CUBIC).
///
/// Why not 20 ms and 80 ms: BBR v1 caps in-flight at 2·max_bw·min_rtt, so once the shared queue
/// adds more delay than a flow's min RTT that flow is window-limited; the shortest-RTT flow loses
/// (Hock et al., "Experimental evaluation of BBR", ICNP 2017; Ma et al. 2017). At a 4× RTT ratio
/// the 20 ms flow gets 9–17 % (depending on the seeds and on endpoint details) — the bar is not
/// met reliably. `bbr_v1_favours_the_longer_rtt` pins that case instead.
#[test]
fn two_bbr_flows_with_different_rtts_and_cubic_coexist_without_starvation() {
    // Two BDPs of the 40 ms path: 2 × 20 Mbit/s × 40 ms / 1500 B.
    let path = bbr_mix(15.0, 133, (1.0, 2.0));
    let r = path.run();
    print_run("bbr 20 ms + bbr 40 ms + cubic 20 ms", &path, &r);
    let rtts: Vec<u64> = r.flows.iter().map(|f| f.base_rtt_ns / 1_000_000).collect();
    assert_eq!(rtts, vec![20, 40, 20], "base RTTs as designed");
    let total: f64 = r.flows.iter().map(|f| f.goodput_bps).sum();
    assert!(total >= 0.9 * path.capacity_bps(), "the three flows together fill the link: {:.2} Mbit/s", mbps(total));
    for f in &r.flows {
        let share = f.goodput_bps / path.capacity_bps();
        println!("  {} share of the link {:.3}", f.name, share);
        assert!(share >= 0.10, "{} starves: {:.1} % of the link", f.name, share * 100.0);
    }
}

/// BBR v1's RTT bias on the endpoint: 20 ms and 80 ms BBR flows (with CUBIC at 20 ms) on 20 Mbit/s
/// with a queue of two BDPs of the 80 ms path. The 80 ms flow takes at least twice the 20 ms
/// flow's goodput (measured: 3.7–7× over five seed pairs), and the link stays full.
#[test]
fn bbr_v1_favours_the_longer_rtt() {
    let path = bbr_mix(35.0, 267, (1.0, 2.0));
    let r = path.run();
    print_run("bbr 20 ms + bbr 80 ms + cubic 20 ms", &path, &r);
    let rtts: Vec<u64> = r.flows.iter().map(|f| f.base_rtt_ns / 1_000_000).collect();
    assert_eq!(rtts, vec![20, 80, 20], "base RTTs as designed");
    let share = |i: usize| r.flows[i].goodput_bps / path.capacity_bps();
    println!("  shares: bbr 20 ms {:.3}, bbr 80 ms {:.3}, cubic {:.3}", share(0), share(1), share(2));
    assert!(share(0) + share(1) + share(2) >= 0.9, "link not full");
    assert!(share(1) >= 2.0 * share(0), "80 ms BBR {:.3} vs 20 ms BBR {:.3}", share(1), share(0));
}

// ------------------------------------------------------------------ every algorithm

fn single_flow(cc: &'static str, params: Vec<(&'static str, f64)>, duration_s: u64) -> Path {
    Path {
        name: "single_20m_40ms",
        rate_mbps: 20,
        // 40 ms base RTT: 2 × (19 ms + 1 ms).
        bottleneck_delay_ms: 19.0,
        // One BDP: 20 Mbit/s × 40 ms / 1500 B.
        queue_packets: 67,
        loss: None,
        duration_s,
        seed: 1,
        shared: true,
        flows: vec![FlowSpec { cc, params, access_delay_ms: 1.0, start_ms: 0 }],
    }
}

/// Every registered algorithm, alone on a 20 Mbit/s, 40 ms path with a BDP queue, gets at least
/// 80 % of the link as goodput over 20 s (slow start included).
///
/// CCPLB runs with a playout-buffer term this path can absorb (POB = 16 segments, a quarter of the
/// queue): its default POB of 448 segments (seed 001's smallest buffer, on a 1 Gbit/s testbed) is
/// more than three times what this path stores, and Eq. 5 adds it to the window whatever the
/// path says — see `ccplb_default_pob_overflows_a_path_that_stores_less`. Measured on this path
/// (endpoint of 2026-11-23): POB 0–96 → 95 % of the link; POB 200 → 14 % (RTO storm, see
/// `srtt_stays_within_what_the_path_can_delay_through_rto_storms`); before the endpoint's
/// delayed-ACK rework the collapse started at POB 24, hence the margin.
#[test]
fn every_algorithm_fills_a_bdp_buffered_path() {
    let mut failures = Vec::new();
    for info in ALGORITHMS {
        let params = if info.name == "ccplb" { vec![("pob_segments", 16.0)] } else { vec![] };
        let path = single_flow(info.name, params, 20);
        let r = path.run();
        print_run(info.name, &path, &r);
        let f = &r.flows[0];
        let u = f.goodput_bps / path.capacity_bps();
        println!("  {} goodput / capacity = {:.3}", info.name, u);
        if u < 0.80 {
            failures.push(format!("{}: {:.1} %", info.name, u * 100.0));
        }
    }
    assert!(failures.is_empty(), "below 80 % of the link: {failures:?}");
}

/// Seed 001 Eq. 5 on a path with less storage than the playout-buffer term: CCPLB keeps its
/// window about POB segments above what the path holds (loss does not reduce it, by design), so
/// the drop-tail queue overflows on every round and a large share of the packets is lost —
/// unlike CCP, whose window follows the path's storage.
#[test]
fn ccplb_default_pob_overflows_a_path_that_stores_less() {
    let lb_path = single_flow("ccplb", vec![], 20);
    let ccp_path = single_flow("ccp", vec![], 20);
    let (lb, ccp) = (lb_path.run(), ccp_path.run());
    print_run("ccplb default POB", &lb_path, &lb);
    print_run("ccp", &ccp_path, &ccp);
    let drop_share = |r: &Results| {
        let b = bottleneck(r);
        b.queue_drops as f64 / (b.tx_packets + b.queue_drops) as f64
    };
    let (d_lb, d_ccp) = (drop_share(&lb), drop_share(&ccp));
    println!("  queue-drop share: ccplb {:.3}, ccp {:.4}", d_lb, d_ccp);
    assert!(d_lb > 0.10, "ccplb drops {:.3} of its packets", d_lb);
    assert!(d_ccp < 0.01, "ccp drops {:.4} of its packets", d_ccp);
    assert!(lb.flows[0].goodput_bps < ccp.flows[0].goodput_bps);
}

/// No RTT sample may exceed what the path can delay a segment: on 20 Mbit/s, 40 ms, 67-packet
/// queue the longest round trip is 40 ms + 67 × 0.6 ms ≈ 80 ms, plus at most a delayed-ACK timer
/// (≤ 200 ms in Linux): srtt must stay below 300 ms. CCPLB with POB = 200 segments is the stressor
/// (its window bursts far above what the path stores, so the run goes through repeated RTOs):
/// a sample taken across an RTO (Karn's rule, RFC 6298 §3) or from an old timestamp echo would
/// show up here as an srtt of seconds and an RTO of many seconds.
#[test]
fn srtt_stays_within_what_the_path_can_delay_through_rto_storms() {
    let path = single_flow("ccplb", vec![("pob_segments", 200.0)], 20);
    let r = path.run();
    print_run("ccplb POB 200", &path, &r);
    let worst = r.flow_samples.iter().filter_map(|s| s.srtt_ns).max().expect("srtt samples");
    println!("  largest srtt sampled: {:.1} ms, RTOs {}", worst as f64 / 1e6, r.flows[0].rto_count);
    assert!(worst < 300_000_000, "srtt reached {:.1} ms on a path whose longest RTT is ~80 ms", worst as f64 / 1e6);
}

/// For every algorithm with parameters: a parameter set on one flow of a scenario reaches that
/// flow's congestion control, and only it, and changes what the flow does. Both flows run in ONE
/// scenario on two disjoint copies of the 20 Mbit/s, 40 ms, BDP-queue path (nothing shared), so any
/// difference between them comes from the override.
#[test]
fn a_per_flow_parameter_override_changes_each_algorithm() {
    // (algorithm, parameter, override value). Every algorithm with parameters must be listed, so
    // a newly registered one fails here until it gets an entry.
    let overrides: &[(&str, &str, f64)] = &[
        ("cubic", "beta", 0.3),
        ("bic", "beta", 0.5),
        ("bbr", "cwnd_gain", 1.0),
        ("compound", "beta", 0.2),
        ("ccp", "kp", 0.5),
        ("ccplca", "kp", 0.5),
        ("ccplb", "pob_segments", 0.0),
        ("vegas", "beta", 12.0),
    ];
    let mut failures = Vec::new();
    for info in ALGORITHMS {
        if info.params.is_empty() {
            println!("{}: no parameters to override", info.name);
            continue;
        }
        let known: Vec<&str> = info.params.iter().map(|p: &ParamInfo| p.name).collect();
        let (_, param, value) = overrides
            .iter()
            .find(|o| o.0 == info.name)
            .unwrap_or_else(|| panic!("no override chosen for {} (params: {known:?})", info.name));
        let default = info.params.iter().find(|p| p.name == *param).unwrap_or_else(|| panic!("{}: no param {param}", info.name)).default;
        assert_ne!(default, *value, "{}: override equals the default", info.name);
        let path = two_disjoint_flows(FlowSpec::new(info.name, 1.0), FlowSpec::new(info.name, 1.0).param(param, *value), 10);
        let r = path.run();
        let (a, b) = (&r.flows[0], &r.flows[1]);
        println!("{} {param}={value} (default {default}):\n  default  {}\n  override {}", info.name, describe(a), describe(b));
        // Behaviour = the sender's trajectory: the cwnd series sampled every 10 ms (plus totals).
        let cwnd_series = |flow: u32| r.flow_samples.iter().filter(|s| s.flow == flow).map(|s| s.cwnd_bytes).collect::<Vec<_>>();
        let (ca, cb) = (cwnd_series(0), cwnd_series(1));
        assert!(ca.len() > 100 && ca.len() == cb.len(), "{}: flow samples", info.name);
        let differing = ca.iter().zip(&cb).filter(|(x, y)| x != y).count();
        println!("  cwnd differs in {differing} of {} samples", ca.len());
        let differs = differing > 0 || a.data_segments_sent != b.data_segments_sent || a.bytes != b.bytes;
        if !differs {
            failures.push(format!("{}: {param}={value} changed nothing", info.name));
        }
    }
    assert!(failures.is_empty(), "{failures:?}");
}

fn two_disjoint_flows(a: FlowSpec, b: FlowSpec, duration_s: u64) -> Path {
    Path {
        name: "override",
        rate_mbps: 20,
        bottleneck_delay_ms: 19.0,
        queue_packets: 67,
        loss: None,
        duration_s,
        seed: 1,
        shared: false,
        flows: vec![a, b],
    }
}

/// The multiplicative decrease of CUBIC follows the per-flow `beta`: at the first loss (HyStart
/// off, so slow start ends by loss) ssthresh is beta × the window at the loss, for the default
/// flow (0.7) and the overridden one (0.5) of the same scenario.
#[test]
fn cubic_beta_override_sets_the_per_flow_multiplicative_decrease() {
    let path = two_disjoint_flows(
        FlowSpec::new("cubic", 1.0).param("hystart", 0.0),
        FlowSpec::new("cubic", 1.0).param("hystart", 0.0).param("beta", 0.5),
        5,
    );
    let mut text_check = path.toml();
    text_check.retain(|c| c != ' ');
    assert!(text_check.contains("beta=0.5"), "override written into the scenario");
    let r = path.run();
    for (flow, beta) in [(0u32, 0.7), (1, 0.5)] {
        let samples: Vec<_> = r.flow_samples.iter().filter(|s| s.flow == flow).collect();
        // An infinite ssthresh is u64::MAX (capped at u64::MAX >> 1 before commit cde1355).
        let first = samples.iter().position(|s| s.ssthresh_bytes < u64::MAX >> 1).expect("a loss ended slow start");
        // The window the loss cut: the largest cwnd sampled before ssthresh was set (samples are
        // 10 ms apart, so it may under-estimate the window at the loss by up to a sample's growth).
        let w = samples[..first].iter().map(|s| s.cwnd_bytes).max().unwrap() as f64;
        let ratio = samples[first].ssthresh_bytes as f64 / w;
        println!("cubic flow {flow}: cwnd before loss {:.0} seg, ssthresh {} seg, ratio {ratio:.3} (beta {beta})", w / 1448.0, samples[first].ssthresh_bytes / 1448);
        assert!((ratio - beta).abs() <= 0.08, "flow {flow}: ssthresh/cwnd {ratio:.3}, beta {beta}");
    }
}

