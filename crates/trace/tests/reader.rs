//! Capture formats, link types, damaged files, flow reconstruction and per-flow metrics.

use std::io::Write;

use tcpvideo_trace::fixture::{CaptureWriter, Conn, Container, Link};
use tcpvideo_trace::reader::Reader;
use tcpvideo_trace::{analyze_bytes, analyze_paths, Analysis, AnalyzeOptions};

const MSS: usize = 1448;

fn opts1() -> AnalyzeOptions {
    AnalyzeOptions { threads: 1, ..Default::default() }
}

/// A small download flow: handshake (RTT 40 ms), 3 rounds of 8 segments, FINs.
fn sample(link: Link, v6: bool) -> Conn {
    let mut c = Conn::with(link, v6, 8080);
    c.handshake(40.0);
    for _ in 0..3 {
        c.server_burst(8, MSS);
        c.wait_ms(40.0);
        let e = c.s_nxt;
        c.client_ack(e);
        c.wait_ms(1.0);
    }
    c.server_fin();
    c.wait_ms(40.0);
    c.client_fin();
    c
}

fn check_sample(a: &Analysis) {
    assert_eq!(a.flows.len(), 1, "{:?}", a.decode);
    let f = &a.flows[0];
    assert_eq!(f.direction, "download");
    assert_eq!(f.server_port, 8080);
    assert_eq!(f.bytes, 24 * MSS as u64);
    assert_eq!(f.rtt_3whs_ns, Some(40_000_000));
    assert_eq!(f.data_packets, 24);
    assert_eq!(f.rtt_samples, 3);
    // FCT: first SYN to the ACK of the last byte: 40 + 3 × (41 ms + 7 µs of burst).
    assert_eq!(f.fct_ns, 40_000_000 + 3 * 40_000_000 + 2 * 1_000_000 + 3 * 7_000);
    assert!(f.handshake);
}

#[test]
fn every_container_gives_the_same_flow() {
    let c = sample(Link::Ethernet, false);
    for k in [Container::PcapMicros, Container::PcapNanos, Container::PcapMicrosBigEndian, Container::Pcapng] {
        let a = analyze_bytes(&c.w.to_bytes(k), &opts1()).unwrap();
        check_sample(&a);
    }
}

#[test]
fn gzip_and_zstd_captures_are_read_transparently() {
    let raw = sample(Link::Ethernet, false).pcap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&raw).unwrap();
    let gz = gz.finish().unwrap();
    check_sample(&analyze_bytes(&gz, &opts1()).unwrap());
    let zs = zstd::encode_all(&raw[..], 3).unwrap();
    check_sample(&analyze_bytes(&zs, &opts1()).unwrap());
    // And from files, through the streaming path.
    let dir = std::env::temp_dir().join(format!("tcpvideo-trace-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("x.pcap.zst");
    std::fs::write(&p, &zs).unwrap();
    check_sample(&analyze_paths(std::slice::from_ref(&p), &opts1()).unwrap());
    let p2 = dir.join("x.pcap");
    std::fs::write(&p2, &raw).unwrap();
    check_sample(&analyze_paths(&[p2], &opts1()).unwrap());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn every_link_type_and_ipv6_decode() {
    for (link, v6) in [
        (Link::EthernetVlan(42), false),
        (Link::Sll, false),
        (Link::Sll2, false),
        (Link::Raw, false),
        (Link::Ethernet, true),
        (Link::Sll2, true),
        (Link::Raw, true),
    ] {
        let a = analyze_bytes(&sample(link, v6).pcap(), &opts1()).unwrap();
        check_sample(&a);
        assert_eq!(a.flows[0].ip_version, if v6 { 6 } else { 4 });
    }
}

#[test]
fn corrupt_record_is_skipped_and_the_rest_analyzed() {
    let c = sample(Link::Ethernet, false);
    let mut b = c.pcap();
    // Damage the 5th record's incl_len (records start after the 24-byte file header).
    let mut off = 24;
    for _ in 0..4 {
        let incl = u32::from_le_bytes(b[off + 8..off + 12].try_into().unwrap()) as usize;
        off += 16 + incl;
    }
    b[off + 8..off + 12].copy_from_slice(&0x7fff_ffffu32.to_le_bytes());
    let a = analyze_bytes(&b, &opts1()).unwrap();
    assert_eq!(a.read.corrupt_records, 1);
    // The record's own warning, and the file's damage total.
    assert_eq!(a.warnings.len(), 2, "{:?}", a.warnings);
    assert!(a.warnings.iter().any(|w| w.message.starts_with("damaged input")));
    assert_eq!(a.read.records, c.w.len() as u64 - 1);
    assert_eq!(a.flows.len(), 1);
    assert_eq!(a.flows[0].data_packets, 23);
}

#[test]
fn truncated_last_record_is_counted() {
    let c = sample(Link::Ethernet, false);
    let mut b = c.pcap();
    b.truncate(b.len() - 10);
    let a = analyze_bytes(&b, &opts1()).unwrap();
    assert_eq!(a.read.truncated_records, 1);
    assert_eq!(a.read.records, c.w.len() as u64 - 1);
}

#[test]
fn damaged_pcapng_block_costs_only_itself() {
    let c = sample(Link::Ethernet, false);
    let mut b = c.w.to_bytes(Container::Pcapng);
    // Find the 3rd EPB and break its trailing length.
    let mut off = 0;
    let mut epb = 0;
    loop {
        let t = u32::from_le_bytes(b[off..off + 4].try_into().unwrap());
        let len = u32::from_le_bytes(b[off + 4..off + 8].try_into().unwrap()) as usize;
        if t == 6 {
            epb += 1;
            if epb == 3 {
                b[off + len - 4] ^= 0xff;
                break;
            }
        }
        off += len;
    }
    let a = analyze_bytes(&b, &opts1()).unwrap();
    assert_eq!(a.read.corrupt_records, 1);
    assert_eq!(a.read.records, c.w.len() as u64 - 1);
}

#[test]
fn not_a_capture_is_an_error() {
    assert!(analyze_bytes(b"hello world, this is not a pcap file at all", &opts1()).is_err());
}

#[test]
fn reader_yields_timestamps_in_nanoseconds() {
    let c = sample(Link::Ethernet, false);
    for k in [Container::PcapNanos, Container::Pcapng, Container::PcapMicros] {
        let b = c.w.to_bytes(k);
        let mut r = Reader::from_slice(&b).unwrap();
        let p = r.next_packet().unwrap().unwrap();
        assert_eq!(p.ts_ns, 1_000_000_000);
        assert_eq!(p.linktype, 1);
    }
}

#[test]
fn port_reuse_starts_a_new_flow() {
    let mut c = sample(Link::Ethernet, false);
    c.wait_ms(100.0);
    c.c_isn = 0x1234_5678;
    c.s_isn = 0x0abc_def0;
    c.c_nxt = 0;
    c.s_nxt = 0;
    c.s_acked = 0;
    c.c_acked = 0;
    c.handshake(40.0);
    c.server_burst(3, MSS);
    let a = analyze_bytes(&c.pcap(), &opts1()).unwrap();
    assert_eq!(a.flows.len(), 2);
    assert_eq!(a.flows[1].bytes, 3 * MSS as u64);
    assert_eq!(a.flows[0].closed_by, "fin");
}

#[test]
fn flow_without_handshake_uses_well_known_port_or_option() {
    let mut c = Conn::with(Link::Ethernet, false, 1935);
    c.server_burst(5, MSS);
    c.wait_ms(30.0);
    let e = c.s_nxt;
    c.client_ack(e);
    let a = analyze_bytes(&c.pcap(), &opts1()).unwrap();
    assert_eq!(a.flows[0].server_port, 1935);
    assert_eq!(a.flows[0].server_by, "port");
    assert!(!a.flows[0].handshake);
    assert_eq!(a.flows[0].bytes, 5 * MSS as u64);
    // With the client's port declared as the server's, roles swap: now an upload flow.
    let o = AnalyzeOptions { server_ports: vec![40000], ..opts1() };
    let a = analyze_bytes(&c.pcap(), &o).unwrap();
    assert_eq!(a.flows[0].server_port, 40000);
    assert_eq!(a.flows[0].direction, "upload");
}

#[test]
fn back_to_back_segments_form_a_micro_burst() {
    let mut c = Conn::new();
    c.handshake(40.0);
    c.server_burst(10, MSS); // 1 µs apart
    c.wait_ms(40.0);
    c.client_ack(c.s_nxt);
    c.wait_ms(5.0);
    c.server_burst(3, MSS); // too short
    c.wait_ms(40.0);
    c.client_ack(c.s_nxt);
    let a = analyze_bytes(&c.pcap(), &opts1()).unwrap();
    assert_eq!(a.bursts.len(), 1);
    assert_eq!(a.bursts[0].packets, 10);
    assert!(!a.bursts[0].retransmitted);
}

#[test]
fn threads_do_not_change_results() {
    let mut w = CaptureWriter::new(Link::Ethernet);
    // Several interleaved flows.
    let mut conns: Vec<Conn> = (0..6)
        .map(|i| {
            let mut c = Conn::new();
            c.client.1 = 40000 + i;
            c.now += i as u64 * 1_000_000;
            c.handshake(30.0 + i as f64);
            for k in 0..5 {
                c.server_burst(4 + k, MSS);
                c.wait_ms(30.0 + i as f64);
                c.client_ack(c.s_nxt);
                c.wait_ms(120.0 * (k % 2) as f64);
            }
            c
        })
        .collect();
    let mut frames: Vec<(u64, usize, Vec<u8>)> = Vec::new();
    for (i, c) in conns.iter_mut().enumerate() {
        let b = c.pcap();
        let mut r = Reader::from_slice(&b).unwrap();
        while let Some(p) = r.next_packet().unwrap() {
            frames.push((p.ts_ns, i, p.data.to_vec()));
        }
    }
    frames.sort_by_key(|f| (f.0, f.1));
    for (t, _, d) in frames {
        w.frame(t, d);
    }
    let b = w.to_bytes(Container::PcapMicros);
    let a1 = analyze_bytes(&b, &opts1()).unwrap();
    let a3 = analyze_bytes(&b, &AnalyzeOptions { threads: 3, ..Default::default() }).unwrap();
    assert_eq!(a1.flows.len(), 6);
    assert_eq!(serde_json::to_string(&a1.flows).unwrap(), serde_json::to_string(&a3.flows).unwrap());
    assert_eq!(serde_json::to_string(&a1.stalls).unwrap(), serde_json::to_string(&a3.stalls).unwrap());
    assert!(!a1.stalls.is_empty());
}

/// The same interleaved capture analysed in one thread, by two threads that each scan a
/// memory-mapped file (plain input) and through the reading pipeline (gzip input, which cannot
/// be re-read without decompressing again): identical flows, stalls and counters.
#[test]
fn mapped_scanning_threads_and_the_pipeline_give_the_one_thread_result() {
    use std::io::Write;
    let mut w = CaptureWriter::new(Link::Ethernet);
    let mut conns: Vec<Conn> = (0..5)
        .map(|i| {
            let mut c = Conn::new();
            c.client.1 = 41000 + i;
            c.now += i as u64 * 700_000;
            c.handshake(20.0 + 3.0 * i as f64);
            for k in 0..4 {
                c.server_burst(3 + k, MSS);
                c.wait_ms(20.0 + i as f64);
                c.client_ack(c.s_nxt);
                c.wait_ms(150.0 * (k % 2) as f64);
            }
            c
        })
        .collect();
    let mut frames: Vec<(u64, usize, Vec<u8>)> = Vec::new();
    for (i, c) in conns.iter_mut().enumerate() {
        let b = c.pcap();
        let mut r = Reader::from_slice(&b).unwrap();
        while let Some(p) = r.next_packet().unwrap() {
            frames.push((p.ts_ns, i, p.data.to_vec()));
        }
    }
    frames.sort_by_key(|f| (f.0, f.1));
    for (t, _, d) in frames {
        w.frame(t, d);
    }
    let b = w.to_bytes(Container::PcapMicros);
    let dir = std::env::temp_dir().join(format!("tv_scan_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let plain = dir.join("c.pcap");
    std::fs::write(&plain, &b).unwrap();
    let gz = dir.join("c.pcap.gz");
    let mut e = flate2::write::GzEncoder::new(std::fs::File::create(&gz).unwrap(), flate2::Compression::fast());
    e.write_all(&b).unwrap();
    e.finish().unwrap();
    let two = AnalyzeOptions { threads: 2, ..Default::default() };
    let one = analyze_bytes(&b, &opts1()).unwrap();
    let json = |a: &tcpvideo_trace::Analysis| {
        (
            serde_json::to_string(&a.flows).unwrap(),
            serde_json::to_string(&a.stalls).unwrap(),
            a.decode.packets,
            a.decode.tcp,
            a.read.records,
        )
    };
    for (what, a) in [
        ("mapped, 2 scanning threads", tcpvideo_trace::analyze_paths(std::slice::from_ref(&plain), &two).unwrap()),
        ("mapped, 1 thread", tcpvideo_trace::analyze_paths(std::slice::from_ref(&plain), &opts1()).unwrap()),
        ("gzip, pipeline", tcpvideo_trace::analyze_paths(std::slice::from_ref(&gz), &two).unwrap()),
    ] {
        assert_eq!(json(&a), json(&one), "{what}");
    }
    assert_eq!(one.flows.len(), 5);
    assert!(!one.stalls.is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn idle_flows_leave_memory() {
    use tcpvideo_trace::decode::decode;
    use tcpvideo_trace::shard::FlowTable;
    let o = AnalyzeOptions { idle_timeout: std::time::Duration::from_secs(60), ..opts1() };
    let mut t = FlowTable::new(&o);
    let mut c = Conn::new();
    c.handshake(10.0);
    c.server_send(100);
    let mut late = Conn::new();
    late.client.1 = 50000;
    late.now += 200_000_000_000; // 200 s later
    late.handshake(10.0);
    for b in [c.pcap(), late.pcap()] {
        let mut r = Reader::from_slice(&b).unwrap();
        while let Some(p) = r.next_packet().unwrap() {
            t.process(&decode(p.linktype, p.data).unwrap(), p.ts_ns);
        }
    }
    assert_eq!(t.live(), 1, "the idle flow was evicted");
    assert_eq!(t.finish().len(), 2);
}

#[test]
fn sequence_numbers_wrapping_past_2_32_are_unwrapped() {
    // The fixture's client ISN is 0xfffff000: upload data wraps the sequence space at once.
    let mut c = Conn::new();
    c.handshake(20.0);
    for _ in 0..10 {
        c.client_send(MSS);
    }
    let a = analyze_bytes(&c.pcap(), &opts1()).unwrap();
    assert_eq!(a.flows[0].bytes_up, 10 * MSS as u64);
    assert_eq!(a.flows[0].reordered_packets, 0);
}

#[test]
fn retransmitted_segment_inside_a_burst_marks_it() {
    let mut c = Conn::new();
    c.handshake(40.0);
    c.server_burst(8, MSS);
    c.wait_ms(40.0);
    for k in 1..=3 {
        c.client_ack_sack(0, &[(MSS as u64, (MSS * (1 + k)) as u64)]);
    }
    c.server_resend(0, MSS);
    c.wait_ms(40.0);
    c.client_ack(c.s_nxt);
    let a = analyze_bytes(&c.pcap(), &opts1()).unwrap();
    assert_eq!(a.flows[0].fast_retrans, 1);
    assert!(a.bursts[0].retransmitted);
    assert!((a.flows[0].retrans_rate - 1.0 / 9.0).abs() < 1e-9);
}

#[test]
fn rtt_samples_are_bucketed_by_in_flight_when_the_ack_arrives() {
    let mut c = Conn::new();
    c.handshake(20.0);
    c.server_burst(8, MSS); // 11.6 kB outstanding
    c.wait_ms(30.0); // RTT 30 ms = 1.5 × RTT_3WHS
    c.client_ack(c.s_nxt);
    let a = analyze_bytes(&c.pcap(), &opts1()).unwrap();
    let b = a.rtt_buckets.iter().find(|b| b.samples > 0).unwrap();
    assert_eq!((b.lo_kb, b.hi_kb), (8, Some(16)));
    assert_eq!(b.samples, 1);
    assert!((b.mean_ratio.unwrap() - 1.5).abs() < 0.01);
}

#[test]
fn unknown_link_type_records_are_counted_with_a_warning() {
    let c = sample(Link::Ethernet, false);
    let mut b = c.pcap();
    b[20..24].copy_from_slice(&147u32.to_le_bytes()); // LINKTYPE_USER0
    let a = analyze_bytes(&b, &opts1()).unwrap();
    assert_eq!(a.decode.unknown_link, c.w.len() as u64);
    assert!(a.flows.is_empty());
    assert!(a.warnings.iter().any(|w| w.message.contains("unknown link type")));
}

#[test]
fn mutated_captures_never_panic() {
    // Deterministic xorshift mutations of a capture with HTTP-FLV payloads, in pcap and pcapng.
    let mut c = Conn::new();
    c.handshake(20.0);
    c.client_send_bytes(b"GET /live/a.flv HTTP/1.1\r\n\r\n");
    let mut body = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1000\r\nFLV\x01\x05\x00\x00\x00\x09\x00\x00\x00\x00".to_vec();
    body.extend(std::iter::repeat_n(0x09u8, 3000));
    for seg in body.chunks(MSS) {
        c.server_send_bytes(seg);
    }
    c.client_ack_sack(100, &[(200, 900), (1000, 1200)]);
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for k in [Container::PcapMicros, Container::Pcapng] {
        let base = c.w.to_bytes(k);
        for _ in 0..300 {
            let mut b = base.clone();
            for _ in 0..(1 + rnd() % 8) {
                let i = (rnd() as usize) % b.len();
                b[i] = rnd() as u8;
            }
            if rnd() % 4 == 0 {
                let cut = (rnd() as usize) % b.len();
                b.truncate(cut.max(1));
            }
            for threads in [1, 2] {
                let _ = analyze_bytes(&b, &AnalyzeOptions { threads, ..Default::default() });
            }
        }
    }
}
