//! Cut-through hops (`network.rs`) must change nothing but the number of events: the same
//! scenario run hop by hop and with cut-through gives identical flows, links, TCP events and video
//! tables. The scenarios exercise what could go wrong — a shared bottleneck that drops (queue and
//! random loss), per-client access links of different delays, video over HTTP with requests in
//! both directions, and a run that ends with packets still in flight towards a router.

use tcpvideo_sim::scenario::load_toml;
use tcpvideo_sim::sim::{Results, Simulation};

fn run(toml: &str, cut_through: bool) -> (Results, usize) {
    let sc = load_toml(toml, None).expect("scenario");
    let mut sim = Simulation::new(sc, None).expect("simulation");
    if !cut_through {
        sim = sim.without_cut_through();
    }
    let hops = sim.cut_through_channels().len();
    sim.run();
    (sim.finish().expect("finish"), hops)
}

fn same_results(toml: &str) {
    let (a, hops_a) = run(toml, false);
    let (b, hops_b) = run(toml, true);
    assert_eq!(hops_a, 0);
    assert!(hops_b > 0, "no cut-through hop in a dumbbell");
    assert!(b.events_processed < a.events_processed, "{} events vs {} hop by hop", b.events_processed, a.events_processed);
    assert!(a.links.iter().any(|l| l.queue_drops > 0), "the scenario should drop at the bottleneck");
    assert_eq!(a.packets_sent, b.packets_sent);
    assert_eq!(a.flows, b.flows);
    assert_eq!(a.links, b.links);
    assert_eq!(format!("{:?}", a.events), format!("{:?}", b.events));
    assert_eq!(format!("{:?}", a.video_clients), format!("{:?}", b.video_clients));
    assert_eq!(format!("{:?}", a.video_segments), format!("{:?}", b.video_segments));
    assert_eq!(format!("{:?}", a.requests), format!("{:?}", b.requests));
}

#[test]
fn live_video_over_a_lossy_dropping_dumbbell_is_identical_with_cut_through_hops() {
    same_results(
        r#"
duration = "12.3s"
seed = 3
[video]
segment_duration = "2s"
[dumbbell]
clients = 12
bottleneck_rate = "8Mbps"
queue = 30
loss = { model = "bernoulli", p = 0.003 }
rtt = "40ms"
rtt_std = "8ms"
[dumbbell.flow]
app = "live"
start_jitter = "2s"
player = { abr = "throughput", buffer_segments = 1 }
tcp = { cc = "cubic" }
"#,
    );
}

#[test]
fn request_response_flows_are_identical_with_cut_through_hops() {
    same_results(
        r#"
duration = "6s"
seed = 5
[dumbbell]
clients = 6
bottleneck_rate = "5Mbps"
queue = 20
rtt = "30ms"
rtt_std = "5ms"
[dumbbell.flow]
app = "reqresp"
period = "0.5s"
count = 10
response_bytes = "60kB"
start_jitter = "0.5s"
tcp = { cc = "reno" }
"#,
    );
}
