//! Captures as users bring them, not as a server with a clean clock writes them (issue 12):
//! timestamp jumps, client-side and mid-path vantage points, span-port duplicates, re-segmented
//! retransmissions, RSTs with window 0, MPLS, refused connections, lost handshake segments.
//! Each test builds its capture with the fixture builder and pins one defect found on public
//! captures (Zeek's and tcpdump's test traces).

use tcpvideo_trace::fixture::{Conn, Container, Link};
use tcpvideo_trace::{analyze_bytes, Analysis, AnalyzeOptions, StallKind, TimeoutType};

const MSS: usize = 1448;
const MS: u64 = 1_000_000;

fn opts1() -> AnalyzeOptions {
    AnalyzeOptions { threads: 1, ..Default::default() }
}

fn run(c: &Conn) -> Analysis {
    analyze_bytes(&c.pcap(), &opts1()).unwrap()
}

/// A download seen at the client: each flight arrives back to back, the client ACKs it 50 µs
/// later, and the next flight arrives one path RTT after that ACK.
fn client_side_download(c: &mut Conn, rtt_ms: f64, rounds: usize) {
    for _ in 0..rounds {
        c.server_burst(4, MSS);
        c.wait_ms(0.05);
        let e = c.s_nxt;
        c.client_ack(e);
        c.wait_ms(rtt_ms);
    }
}

#[test]
fn records_after_a_timestamp_jump_of_days_are_all_read() {
    // Two captures merged: a connection, then another one three days later.
    let mut c = Conn::new();
    c.handshake(20.0).server_burst(4, MSS).wait_ms(20.0);
    let e = c.s_nxt;
    c.client_ack(e);
    c.wait_ms(3.0 * 86_400_000.0);
    c.client.1 += 1;
    c.handshake(20.0).server_burst(4, MSS).wait_ms(20.0);
    c.client_ack(e);
    for k in [Container::PcapMicros, Container::PcapNanos, Container::Pcapng] {
        let a = analyze_bytes(&c.w.to_bytes(k), &opts1()).unwrap();
        assert_eq!(a.read.records, c.w.len() as u64, "{k:?}: {:?}", a.read);
        assert_eq!(a.read.corrupt_records + a.read.skipped_bytes, 0, "{k:?}");
        assert_eq!(a.flows.len(), 2, "{k:?}");
        assert!(a.warnings.is_empty(), "{k:?}: {:?}", a.warnings);
    }
}

#[test]
fn damaged_bytes_are_counted_as_skipped_bytes() {
    let mut c = Conn::new();
    c.handshake(20.0).server_burst(6, MSS);
    let mut b = c.pcap();
    // Overwrite the 4th record header with garbage (incl_len > orig_len).
    let mut off = 24;
    for _ in 0..3 {
        let incl = u32::from_le_bytes(b[off + 8..off + 12].try_into().unwrap()) as usize;
        off += 16 + incl;
    }
    let len4 = u32::from_le_bytes(b[off + 8..off + 12].try_into().unwrap()) as u64;
    b[off + 8..off + 12].copy_from_slice(&0xffff_fff0u32.to_le_bytes());
    let a = analyze_bytes(&b, &opts1()).unwrap();
    assert_eq!(a.read.records, c.w.len() as u64 - 1);
    assert_eq!(a.read.skipped_bytes, 16 + len4, "{:?}", a.read);
}

#[test]
fn client_side_capture_takes_rtt_as_the_full_syn_to_ack_round_trip() {
    let mut c = Conn::with(Link::Sll, false, 443);
    c.handshake_split(334.0, 0.031);
    client_side_download(&mut c, 334.0, 6);
    let a = run(&c);
    let f = &a.flows[0];
    assert_eq!(f.vantage, "client");
    let init = f.rtt_initial_ns.unwrap();
    assert!(init.abs_diff(334_031_000) < MS / 1000, "{init}");
    assert_eq!(f.rtt_server_half_ns, Some(334 * MS));
    assert!(f.rtt_3whs_ns.unwrap() > 330 * MS, "{:?}", f.rtt_3whs_ns);
    // RTT samples of the data transfer see the whole path, not the client's 50 µs ACK delay.
    assert!(f.rtt_min_ns.unwrap() > 330 * MS, "{:?}", f.rtt_min_ns);
    // Flights one RTT apart are the ACK clock, not stalls.
    assert_eq!(f.stall_count, 0, "{:?}", a.stalls);
}

#[test]
fn mid_path_capture_splits_the_handshake_into_its_two_halves() {
    let mut c = Conn::new();
    c.handshake_split(30.0, 70.0);
    c.server_burst(4, MSS).wait_ms(70.0);
    let e = c.s_nxt;
    c.client_ack(e);
    let a = run(&c);
    let f = &a.flows[0];
    assert_eq!(f.vantage, "mid_path");
    assert_eq!(f.rtt_initial_ns, Some(100 * MS));
    assert_eq!(f.rtt_server_half_ns, Some(30 * MS));
    assert_eq!(f.rtt_client_half_ns, Some(70 * MS));
    assert_eq!(f.rtt_3whs_ns, Some(100 * MS));
}

#[test]
fn server_side_capture_is_recognised_from_an_immediate_synack() {
    let mut c = Conn::new();
    c.handshake_split(0.02, 40.0);
    let a = run(&c);
    let f = &a.flows[0];
    assert_eq!(f.vantage, "server");
    assert_eq!(f.rtt_3whs_ns, Some(40 * MS));
    assert_eq!(f.rtt_initial_ns, Some(40 * MS + 20_000));
}

#[test]
fn exact_duplicate_frames_are_dropped_and_counted_not_retransmissions() {
    let mut c = Conn::new();
    c.handshake(20.0);
    for _ in 0..4 {
        c.server_burst(4, MSS).wait_ms(20.0);
        let e = c.s_nxt;
        c.client_ack(e);
    }
    let once = c.w.len() as u64;
    let w = c.w.with_duplicates(3, 1_000);
    let a = analyze_bytes(&w.to_bytes(Container::PcapNanos), &opts1()).unwrap();
    let f = &a.flows[0];
    assert_eq!(a.decode.duplicates, 2 * once);
    assert_eq!(f.retrans_packets, 0);
    assert_eq!(f.timeout_retrans, 0);
    assert_eq!(f.data_packets, 16);
    assert_eq!(f.packets_down + f.packets_up, once);
}

#[test]
fn a_real_retransmission_is_not_taken_for_a_duplicate() {
    // Same bytes except the IP identification: a fast retransmission 1 ms later stays.
    let mut c = Conn::new();
    c.handshake(1.0).server_burst(6, MSS);
    c.client_ack(0).client_ack(0).client_ack(0);
    c.server_resend(0, MSS);
    let a = run(&c);
    assert_eq!(a.decode.duplicates, 0);
    assert_eq!(a.flows[0].retrans_packets, 1);
}

#[test]
fn retransmission_with_other_segment_boundaries_is_typed_by_bytes_not_double() {
    // 8 segments of 1000 bytes lost together; the sender retransmits them as 1448-byte
    // segments, one per timeout: every byte is sent exactly twice, so no timeout is "double".
    let mut c = Conn::new();
    c.handshake(40.0);
    for _ in 0..8 {
        c.server_send(1000);
        c.wait_ns(1000);
    }
    let total = c.s_nxt;
    let mut off = 0;
    let mut rto = 300.0;
    while off < total {
        c.wait_ms(rto);
        let len = (MSS as u64).min(total - off) as usize;
        c.server_resend(off, len);
        c.wait_ms(40.0);
        off += len as u64;
        c.client_ack(off);
        rto = 300.0;
    }
    let a = run(&c);
    let timeouts: Vec<_> = a.retransmissions.iter().filter(|r| r.timeout_type.is_some()).collect();
    assert!(timeouts.len() >= 5, "{}", timeouts.len());
    for r in &timeouts {
        assert_eq!(r.prior_retrans, 0, "{r:?}");
        assert_ne!(r.timeout_type, Some(TimeoutType::Double), "{r:?}");
    }
}

#[test]
fn rst_carrying_window_zero_is_not_a_zero_window_episode() {
    let mut c = Conn::new();
    c.handshake(20.0).server_burst(4, MSS).wait_ms(20.0);
    let e = c.s_nxt;
    c.client_ack(e).wait_ms(5.0).client_rst_ack();
    let a = run(&c);
    assert_eq!(a.flows[0].zero_window_episodes, 0);
}

#[test]
fn mpls_label_stack_inside_a_vlan_is_decoded() {
    for link in [Link::EthernetMpls { vlan: None, labels: 1 }, Link::EthernetMpls { vlan: Some(7), labels: 3 }] {
        let mut c = Conn::with(link, false, 80);
        c.handshake(20.0).server_burst(4, MSS);
        let a = run(&c);
        assert_eq!(a.decode.tcp, c.w.len() as u64, "{link:?}: {:?}", a.decode);
        assert_eq!(a.flows.len(), 1);
        assert_eq!(a.flows[0].data_packets, 4);
    }
}

#[test]
fn lost_synack_gap_is_a_handshake_stall_not_resource_constraint() {
    let mut c = Conn::new();
    // Lost on the way to the client; resent after 3 s (RFC 1122's initial RTO, still used by
    // many stacks; a gap must exceed the 1 s initial RTO to be a stall at all).
    c.client_syn().server_synack();
    c.wait_ms(3000.0).server_synack().wait_ms(40.0).client_handshake_ack();
    c.server_burst(4, MSS).wait_ms(40.0);
    let e = c.s_nxt;
    c.client_ack(e);
    let a = run(&c);
    assert_eq!(a.stalls.len(), 1, "{:?}", a.stalls);
    assert_eq!(a.stalls[0].kind, StallKind::Handshake);
}

#[test]
fn retransmitted_syn_still_yields_an_initial_rtt_from_the_latest_syn() {
    // As tshark's tcp.analysis.initial_rtt (most recent SYN to the handshake's ACK).
    let mut c = Conn::new();
    c.client_syn().wait_ms(1000.0);
    c.handshake(40.0);
    let a = run(&c);
    let f = &a.flows[0];
    assert_eq!(f.rtt_initial_ns, Some(40 * MS));
    assert_eq!(f.rtt_3whs_ns, Some(40 * MS));
    assert_eq!(f.syn_retrans, 1);
}

#[test]
fn refused_connection_is_no_fct_or_throughput_sample() {
    let mut ok = Conn::new();
    ok.handshake(20.0).server_burst(4, MSS).wait_ms(20.0);
    let e = ok.s_nxt;
    ok.client_ack(e);
    let mut bytes = ok.pcap();
    let mut refused = Conn::new();
    refused.client.1 = 40001;
    refused.now = ok.now + MS;
    refused.client_syn().server_refuse();
    let r = refused.pcap();
    bytes.extend_from_slice(&r[24..]);
    let a = analyze_bytes(&bytes, &opts1()).unwrap();
    assert_eq!(a.flows.len(), 2);
    let f = a.flows.iter().find(|f| f.client_port == 40001).unwrap();
    assert_eq!(f.bytes, 0);
    assert_eq!(f.throughput_bps, None);
    assert_eq!(f.goodput_bps, None);
    let s = a.summary().0;
    assert_eq!(s["download"]["flows"], 1, "{}", s["download"]);
    assert_eq!(s["refused_or_empty_flows"], 1);
}

#[test]
fn goodput_never_exceeds_throughput() {
    // Data acknowledged long after the last byte was sent: goodput's window is the FCT too.
    let mut c = Conn::new();
    c.handshake(20.0).server_burst(8, MSS).wait_ms(20.0);
    c.client_ack(4 * MSS as u64).wait_ms(500.0);
    let e = c.s_nxt;
    c.client_ack(e);
    let a = run(&c);
    let f = &a.flows[0];
    assert!(f.goodput_bps.unwrap() <= f.throughput_bps.unwrap(), "{f:?}");
}

#[test]
fn retransmission_kinds_add_up_to_the_total() {
    let mut c = Conn::new();
    c.handshake(10.0).server_burst(8, MSS);
    c.wait_ms(10.0).client_ack(0).client_ack(0).client_ack(0);
    c.server_resend(0, MSS); // fast
    c.wait_ms(10.0).client_ack(8 * MSS as u64);
    c.server_burst(4, MSS).wait_ms(400.0);
    c.server_resend(8 * MSS as u64, MSS); // timeout
    c.wait_ms(10.0).client_ack(9 * MSS as u64);
    c.server_resend(9 * MSS as u64, MSS); // recovery (post-RTO, ACK-clocked)
    c.wait_ms(10.0).client_ack(12 * MSS as u64);
    let a = run(&c);
    let f = &a.flows[0];
    assert!(f.retrans_packets >= 3);
    assert_eq!(f.fast_retrans + f.timeout_retrans + f.recovery_retrans + f.other_retrans + f.tlp_retrans, f.retrans_packets, "{f:?}");
}

#[test]
fn records_libpcap_reads_are_read_whatever_snaplen_and_orig_len_say() {
    // tcpdump's fuzzed test captures: records longer than the header's snaplen, a record whose
    // orig_len is below its incl_len, a fraction out of range. tshark reads them all.
    let mut c = Conn::new();
    c.handshake(20.0).server_burst(4, MSS);
    let mut b = c.pcap();
    b[16..20].copy_from_slice(&64u32.to_le_bytes()); // snaplen 64 < every data record
    let mut off = 24;
    for i in 0..c.w.len() {
        let incl = u32::from_le_bytes(b[off + 8..off + 12].try_into().unwrap()) as usize;
        if i == 4 {
            b[off + 12..off + 16].copy_from_slice(&0u32.to_le_bytes()); // orig_len 0
        }
        if i == 5 {
            b[off + 4..off + 8].copy_from_slice(&3_841_916_976u32.to_le_bytes());
            // µs ≥ 1e6
        }
        off += 16 + incl;
    }
    let a = analyze_bytes(&b, &opts1()).unwrap();
    assert_eq!(a.read.records, c.w.len() as u64, "{:?}", a.read);
    assert_eq!(a.read.skipped_bytes, 0);
    assert_eq!(a.flows[0].data_packets, 4);
}

#[test]
fn ack_clocked_retransmission_seen_at_the_client_is_not_a_timeout() {
    // At the client, the retransmission an ACK triggers arrives one server-side half RTT (here
    // the whole 80 ms path) after that ACK left: after a real timeout, the rest of the lost
    // window comes back ACK-clocked (post-RTO recovery), not as more timeouts.
    let mut c = Conn::with(Link::Ethernet, false, 80);
    c.handshake_split(80.0, 0.03);
    c.server_burst(4, MSS).wait_ms(0.05);
    c.wait_ms(1000.0);
    c.server_resend(0, MSS); // the RTO
    c.wait_ms(0.05).client_ack(MSS as u64);
    c.wait_ms(80.0);
    c.server_resend(MSS as u64, MSS); // clocked by that ACK
    c.wait_ms(0.05).client_ack(4 * MSS as u64);
    let a = run(&c);
    let f = &a.flows[0];
    assert_eq!(f.vantage, "client");
    assert_eq!((f.timeout_retrans, f.recovery_retrans), (1, 1), "{:?}", a.retransmissions);
    // The ACK right after the retransmission reached the client is not "too fast to be for it".
    assert_ne!(a.retransmissions[0].timeout_type, Some(TimeoutType::AckDelayLoss), "{:?}", a.retransmissions[0]);
}

#[test]
fn half_duplex_capture_without_synack_still_gives_tshark_initial_rtt() {
    // Only the client's direction was captured: SYN, then its ACK one RTT later.
    let mut c = Conn::new();
    c.client_syn().wait_ms(27.0).client_handshake_ack();
    c.client_send(100);
    let a = run(&c);
    let f = &a.flows[0];
    assert_eq!(f.rtt_initial_ns, Some(27 * MS));
    assert_eq!(f.vantage, "unknown");
}
