//! The hot path allocates nothing per packet (STYLE.md rule 6): after a warm-up in which queues,
//! the event heap, the packet pool and the endpoints' buffers reach their working size, simulating
//! tens of thousands more packets performs (almost) no heap allocation. Counted with a wrapping
//! global allocator; this file is its own test binary so nothing else runs concurrently in it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

use tcpvideo_model::Time;
use tcpvideo_sim::scenario::load_toml;
use tcpvideo_sim::sim::Simulation;

struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        System.realloc(p, l, n)
    }
}

#[global_allocator]
static A: Counting = Counting;

#[test]
fn steady_state_simulation_does_not_allocate_per_packet() {
    let text = r#"
duration = "20s"
[dumbbell]
clients = 4
bottleneck_rate = "50Mbps"
queue = 300
rtt = "40ms"
rtt_std = "5ms"
[record]
events = false
"#;
    let sc = load_toml(text, Some(1)).unwrap();
    let mut sim = Simulation::new(sc, None).unwrap();
    sim.run_until(Time::from_secs(5));
    let (a0, p0) = (ALLOCS.load(Ordering::Relaxed), sim.packets_sent());
    sim.run_until(Time::from_secs(20));
    let (a1, p1) = (ALLOCS.load(Ordering::Relaxed), sim.packets_sent());
    let packets = p1 - p0;
    let allocs = a1 - a0;
    assert!(packets > 50_000, "{packets}");
    assert!(allocs * 1000 < packets, "{allocs} allocations for {packets} packets");
}
