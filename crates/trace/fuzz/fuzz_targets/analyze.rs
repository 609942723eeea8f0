//! Fuzz target: the whole analyzer on a capture in memory (`analyze_bytes`), one worker thread
//! so runs are reproducible: flow reconstruction, RTT/RTO emulation, stall and retransmission
//! classification, HTTP/FLV/RTMP parsing of reassembled streams, output tables. Besides "never
//! panics", it checks invariants any analysis must satisfy whatever the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tcpvideo_trace::{analyze_bytes, AnalyzeOptions};

fuzz_target!(|data: &[u8]| {
    let opts = AnalyzeOptions { threads: 1, ..AnalyzeOptions::default() };
    let Ok(a) = analyze_bytes(data, &opts) else { return };
    for s in &a.stalls {
        assert!(s.end_ns >= s.start_ns, "stall ends before it starts");
    }
    for f in &a.flows {
        assert!(f.end_ns >= f.start_ns, "flow ends before it starts");
        assert!(f.retrans_packets <= f.data_packets, "more retransmissions than data packets");
    }
    let _ = a.summary_json();
});
