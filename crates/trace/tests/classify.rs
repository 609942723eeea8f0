//! Hand-built packet sequences, one per stall class and per timeout-retransmission type, each
//! checked against the class the seed's definitions give. The capture point is the server; the
//! handshake RTT is 50 ms, so the stall threshold is min(2·SRTT, RTO) = min(100 ms, 200 ms).

use tcpvideo_trace::fixture::Conn;
use tcpvideo_trace::{analyze_bytes, Analysis, AnalyzeOptions, StallKind, TimeoutType};

const MSS: usize = 1448;

fn run(c: &Conn) -> Analysis {
    let opts = AnalyzeOptions { threads: 1, ..Default::default() };
    analyze_bytes(&c.pcap(), &opts).expect("analysis")
}

fn conn() -> Conn {
    let mut c = Conn::new();
    c.handshake(50.0);
    c
}

/// Kinds of all stalls, in order.
fn kinds(a: &Analysis) -> Vec<StallKind> {
    a.stalls.iter().map(|s| s.kind).collect()
}

fn timeout_types(a: &Analysis) -> Vec<TimeoutType> {
    a.retransmissions.iter().filter_map(|r| r.timeout_type).collect()
}

/// Server sends `n` segments at once, client acks them one RTT later.
fn exchange(c: &mut Conn, n: usize) {
    c.server_burst(n, MSS);
    c.wait_ms(50.0);
    let end = c.s_nxt;
    c.client_ack(end);
}

fn s(n: u64) -> u64 {
    n * MSS as u64
}

// ---------------------------------------------------------------- download stall classes

#[test]
fn idle_sender_gap_is_resource_constraint() {
    let mut c = conn();
    exchange(&mut c, 4);
    c.wait_ms(500.0);
    exchange(&mut c, 4);
    let a = run(&c);
    assert_eq!(a.flows[0].direction, "download");
    assert_eq!(kinds(&a), vec![StallKind::ResourceConstraint]);
    assert!(a.stalls[0].duration_ns >= 500_000_000);
}

#[test]
fn late_ack_with_data_outstanding_is_packet_delay() {
    let mut c = conn();
    exchange(&mut c, 4);
    c.server_burst(4, MSS);
    c.wait_ms(150.0); // > 2·SRTT (100 ms), < RTO (200 ms): no timeout fires
    let end = c.s_nxt;
    c.client_ack(end);
    let a = run(&c);
    assert_eq!(kinds(&a), vec![StallKind::PacketDelay]);
    assert_eq!(a.flows[0].timeout_retrans, 0);
}

#[test]
fn closed_receive_window_is_zero_rwnd() {
    let mut c = conn();
    c.server_burst(4, MSS);
    c.wait_ms(50.0);
    c.client_window = 0;
    let end = c.s_nxt;
    c.client_ack(end);
    c.wait_ms(300.0);
    c.client_window_update(65535);
    c.wait_ms(0.1);
    c.server_burst(2, MSS);
    let a = run(&c);
    assert_eq!(kinds(&a), vec![StallKind::ZeroRwnd]);
    assert_eq!(a.flows[0].zero_window_episodes, 1);
}

#[test]
fn zero_window_probe_after_closed_window_is_zero_rwnd() {
    let mut c = conn();
    c.server_burst(4, MSS);
    c.wait_ms(50.0);
    c.client_window = 0;
    let end = c.s_nxt;
    c.client_ack(end);
    c.wait_ms(400.0);
    c.server_keepalive(); // a zero-window probe looks exactly like this
    let a = run(&c);
    assert_eq!(kinds(&a), vec![StallKind::ZeroRwnd]);
}

#[test]
fn keepalive_after_idle_is_keep_alive_stall() {
    let mut c = conn();
    exchange(&mut c, 4);
    c.wait_ms(5000.0);
    c.server_keepalive();
    c.wait_ms(50.0);
    let end = c.s_nxt;
    c.client_ack(end);
    let a = run(&c);
    assert_eq!(kinds(&a), vec![StallKind::KeepAlive]);
    assert_eq!(a.flows[0].keepalive_packets, 1);
}

#[test]
fn an_idle_gap_ended_by_the_viewers_fin_is_resource_constraint() {
    // Nothing outstanding, nothing to send: the seed's resource constraint, whatever ends it
    // (issue 16's ground truth; this was `other` before).
    let mut c = conn();
    exchange(&mut c, 4);
    c.wait_ms(800.0);
    c.client_fin();
    let a = run(&c);
    assert_eq!(kinds(&a), vec![StallKind::ResourceConstraint]);
}

// ---------------------------------------------------------------- timeout retransmissions

/// Issue 16 session 11: the seed's taxonomy — fewer than 4 packets out at the RTO (Eq. 1
/// `packets_out`, SND.UNA to SND.NXT) is less packet, whatever was out when the lost one left;
/// `tail` is only the flow's last three packets (before, this train tail was `tail`).
#[test]
fn loss_in_the_last_three_of_a_train_is_less_packet_when_the_flow_goes_on() {
    let mut c = conn();
    exchange(&mut c, 4);
    c.server_burst(10, MSS);
    c.wait_ms(50.0);
    let base = s(4);
    c.client_ack(base + s(7)); // segments 1..7 of the burst arrive; 8 is lost
    c.wait_ms(0.01);
    c.client_ack_sack(base + s(7), &[(base + s(8), base + s(9))]);
    c.wait_ms(0.01);
    c.client_ack_sack(base + s(7), &[(base + s(8), base + s(10))]);
    c.wait_ms(250.0); // RTO fires
    c.server_resend(base + s(7), MSS);
    c.wait_ms(50.0);
    let end = c.s_nxt;
    c.client_ack(end);
    c.wait_ms(1.0);
    exchange(&mut c, 10); // the flow goes on: not the flow's tail
    let a = run(&c);
    assert_eq!(kinds(&a), vec![StallKind::Timeout]);
    assert_eq!(a.stalls[0].timeout_type, Some(TimeoutType::LessPacket));
    assert_eq!(timeout_types(&a), vec![TimeoutType::LessPacket]);
    assert_eq!(a.retransmissions[0].packets_out, Some(3));
}

#[test]
fn fewer_than_four_packets_out_is_less_packet_timeout() {
    let mut c = conn();
    exchange(&mut c, 4);
    c.server_burst(2, MSS); // a small frame: two packets only
    c.wait_ms(50.0);
    c.client_ack_sack(s(4), &[(s(5), s(6))]); // first lost, second arrived
    c.wait_ms(250.0);
    c.server_resend(s(4), MSS);
    c.wait_ms(50.0);
    c.client_ack(s(6));
    for _ in 0..3 {
        c.wait_ms(10.0);
        exchange(&mut c, 4);
    }
    let a = run(&c);
    assert_eq!(kinds(&a), vec![StallKind::Timeout]);
    assert_eq!(timeout_types(&a), vec![TimeoutType::LessPacket]);
}

#[test]
fn lost_fast_retransmission_then_timeout_is_double() {
    let mut c = conn();
    exchange(&mut c, 4);
    c.server_burst(10, MSS);
    c.wait_ms(50.0);
    let b = s(4);
    for k in 1..=3 {
        c.client_ack_sack(b, &[(b + s(1), b + s(1 + k))]);
        c.wait_ms(0.01);
    }
    c.wait_ms(0.05);
    c.server_resend(b, MSS); // fast retransmit, ACK-clocked
    for k in 4..=9 {
        c.wait_ms(0.01);
        c.client_ack_sack(b, &[(b + s(1), b + s(1 + k))]);
    }
    c.wait_ms(300.0); // the fast retransmission was lost too: RTO
    c.server_resend(b, MSS);
    c.wait_ms(50.0);
    c.client_ack(b + s(10));
    exchange(&mut c, 10);
    let a = run(&c);
    let kinds_r: Vec<&str> = a.retransmissions.iter().map(|r| r.kind.as_str()).collect();
    assert_eq!(kinds_r, vec!["fast", "timeout"]);
    assert_eq!(timeout_types(&a), vec![TimeoutType::Double]);
    assert_eq!(kinds(&a), vec![StallKind::Timeout]);
}

#[test]
fn delayed_ack_echoing_original_tsval_is_ack_delay_loss() {
    let mut c = conn();
    exchange(&mut c, 4);
    for k in 0..6 {
        c.server_send_ts(MSS, 100 + k);
        c.wait_ns(1000);
    }
    c.wait_ms(250.0); // all data arrived but the ACK is late: RTO fires first
    c.server_resend_ts(s(4), MSS, 400);
    c.wait_ms(5.0);
    c.client_ack_ts(s(10), 9, 105); // the original ACK, echoing the original TSval (Eifel)
    exchange(&mut c, 6);
    let a = run(&c);
    assert_eq!(timeout_types(&a), vec![TimeoutType::AckDelayLoss]);
    assert_eq!(a.retransmissions[0].spurious, Some(true));
    assert_eq!(kinds(&a), vec![StallKind::Timeout]);
}

#[test]
fn lost_dupacks_for_received_window_is_ack_delay_loss() {
    let mut c = conn();
    exchange(&mut c, 4);
    c.server_burst(6, MSS); // first lost, the other five arrive; all their dupacks are lost
    c.wait_ms(250.0);
    c.server_resend(s(4), MSS);
    c.wait_ms(50.0);
    c.client_ack(s(10)); // jumps over all six: the later segments had arrived
    exchange(&mut c, 6);
    let a = run(&c);
    assert_eq!(timeout_types(&a), vec![TimeoutType::AckDelayLoss]);
    assert_eq!(a.retransmissions[0].ack_beyond, Some(true));
}

#[test]
fn whole_window_lost_is_continuous_loss() {
    let mut c = conn();
    exchange(&mut c, 4);
    c.server_burst(6, MSS); // all six lost
    c.wait_ms(250.0);
    c.server_resend(s(4), MSS);
    c.wait_ms(50.0);
    c.client_ack(s(5)); // only the retransmission arrived
    c.wait_ms(0.01);
    c.server_resend(s(5), MSS); // loss recovery continues, ACK-clocked
    c.server_resend(s(6), MSS);
    c.wait_ms(50.0);
    c.client_ack(s(7));
    c.wait_ms(0.01);
    for k in 7..10 {
        c.server_resend(s(k), MSS);
    }
    c.wait_ms(50.0);
    c.client_ack(s(10));
    exchange(&mut c, 6);
    let a = run(&c);
    assert_eq!(timeout_types(&a), vec![TimeoutType::ContinuousLoss]);
    let kinds_r: Vec<&str> = a.retransmissions.iter().map(|r| r.kind.as_str()).collect();
    assert_eq!(kinds_r, vec!["timeout", "recovery", "recovery", "recovery", "recovery", "recovery"]);
}

#[test]
fn few_dupacks_for_large_window_is_other_timeout() {
    let mut c = conn();
    exchange(&mut c, 4);
    c.server_burst(10, MSS);
    c.wait_ms(50.0);
    let b = s(4);
    c.client_ack_sack(b, &[(b + s(1), b + s(2))]);
    c.wait_ms(0.01);
    c.client_ack_sack(b, &[(b + s(1), b + s(3))]); // two dupacks; the rest were lost
    c.wait_ms(300.0);
    c.server_resend(b, MSS);
    c.wait_ms(50.0);
    c.client_ack(b + s(1)); // only the retransmission: segments 4.. were lost as well
    c.wait_ms(0.01);
    for k in 3..10 {
        c.server_resend(b + s(k), MSS);
    }
    c.wait_ms(50.0);
    c.client_ack(b + s(10));
    exchange(&mut c, 4);
    let a = run(&c);
    assert_eq!(timeout_types(&a), vec![TimeoutType::Other]);
}

#[test]
fn last_packets_of_the_flow_lost_is_tail_even_with_small_window() {
    let mut c = conn();
    exchange(&mut c, 4);
    c.server_burst(2, MSS);
    c.wait_ms(50.0);
    c.client_ack(s(5));
    c.wait_ms(250.0);
    c.server_resend(s(5), MSS);
    c.wait_ms(50.0);
    c.client_ack(s(6));
    c.server_fin();
    let a = run(&c);
    assert_eq!(timeout_types(&a), vec![TimeoutType::Tail]);
    assert_eq!(a.retransmissions[0].flow_tail, Some(true));
}

// ---------------------------------------------------------------- upload stall classes

fn upload_conn() -> Conn {
    let mut c = conn();
    for _ in 0..4 {
        c.client_send(MSS);
    }
    c.wait_ms(1.0);
    let e = c.c_nxt;
    c.server_ack(e);
    c
}

#[test]
fn in_order_upload_gap_is_normal_stall() {
    let mut c = upload_conn();
    c.wait_ms(400.0);
    for _ in 0..4 {
        c.client_send(MSS);
    }
    let a = run(&c);
    assert_eq!(a.flows[0].direction, "upload");
    assert_eq!(kinds(&a), vec![StallKind::Normal]);
    assert_eq!(a.stalls[0].threshold_ns, 100_000_000);
}

#[test]
fn upload_gap_with_hole_is_reordering_stall_and_counts_timeout_reordering() {
    let mut c = upload_conn();
    let o = c.c_nxt;
    c.client_send_at(o + s(1), MSS); // segment 2 overtakes segment 1
    c.wait_ms(300.0);
    c.client_send_at(o, MSS); // segment 1 arrives 300 ms later
    c.wait_ms(0.01);
    c.client_send(MSS);
    let a = run(&c);
    assert_eq!(kinds(&a), vec![StallKind::Reordering]);
    let f = &a.flows[0];
    assert_eq!(f.reordered_packets, 1);
    assert_eq!(f.timeout_reorderings, 1);
    assert!((f.reordering_rate - 1.0 / 7.0).abs() < 1e-9);
}

#[test]
fn server_keepalive_in_upload_is_keep_alive_stall() {
    let mut c = upload_conn();
    c.wait_ms(5000.0);
    c.server_keepalive();
    c.wait_ms(50.0);
    c.client_send(MSS);
    let a = run(&c);
    assert_eq!(kinds(&a), vec![StallKind::KeepAlive]);
}

#[test]
fn upload_threshold_uses_handshake_rtt_not_server_samples() {
    // Gap of 150 ms: > 2 × 3WHS RTT (100 ms) so an upload stall, whatever the server measured.
    let mut c = upload_conn();
    c.wait_ms(150.0);
    c.client_send(MSS);
    c.client_send(MSS);
    let a = run(&c);
    assert_eq!(kinds(&a), vec![StallKind::Normal]);
    // A 90 ms gap is not a stall.
    let mut c = upload_conn();
    c.wait_ms(90.0);
    c.client_send(MSS);
    assert!(run(&c).stalls.is_empty());
}

#[test]
fn rack_reordering_timer_retransmission_is_fast_not_timeout() {
    // RTT 100 ms; a SACK shows a hole; Linux RACK retransmits ~RTT/4 later, before any RTO.
    let mut c = Conn::new();
    c.handshake(100.0);
    exchange(&mut c, 4);
    c.server_burst(6, MSS);
    c.wait_ms(100.0);
    c.client_ack_sack(s(4), &[(s(5), s(6))]);
    c.wait_ms(25.0);
    c.server_resend(s(4), MSS);
    c.wait_ms(100.0);
    c.client_ack(s(10));
    let a = run(&c);
    let kinds_r: Vec<&str> = a.retransmissions.iter().map(|r| r.kind.as_str()).collect();
    assert_eq!(kinds_r, vec!["fast"]);
    assert!(timeout_types(&a).is_empty());
}

#[test]
fn summary_buckets_upload_flows_by_reordering_rate() {
    // 7 data packets, 1 disordered: 14 % → the 10–20 % row of Table 1.
    let mut c = upload_conn();
    let o = c.c_nxt;
    c.client_send_at(o + s(1), MSS);
    c.client_send_at(o, MSS);
    c.client_send(MSS);
    let a = run(&c);
    let t1 = &a.summary().0["upload_by_reordering"];
    assert_eq!(t1[0]["flows"], 0);
    assert_eq!(t1[1]["flows"], 1);
    assert_eq!(t1[2]["flows"], 0);
}

// ------------------------------------------- a window below one segment, but not zero (issue 16)

/// Four segments out and acknowledged with a window of `win` bytes (a slow reader's remaining
/// right edge: Linux never shrinks it, `tcp_select_window`), then `wait_ms` of silence and a
/// server segment of `len` bytes. The persist timer here: 200 ms (RFC 6298 RTO, max(50 + 4·25,
/// 200)) to 250 ms (Linux's RTO, 50 + max(4·25, 200)).
fn small_window_then_server_data(win: u16, wait_ms: f64, len: usize) -> Analysis {
    let mut c = conn();
    c.server_burst(4, MSS);
    c.wait_ms(50.0);
    c.client_window = win;
    let end = c.s_nxt;
    c.client_ack(end);
    c.wait_ms(wait_ms);
    c.server_send(len);
    c.wait_ms(50.0);
    c.client_window = 65535;
    let end = c.s_nxt;
    c.client_ack(end);
    run(&c)
}

#[test]
fn window_filling_segment_when_the_persist_timer_fires_is_zero_rwnd() {
    // Data waited from the ACK on: the persist timer (max(RTO, 200 ms)) fills the window.
    let a = small_window_then_server_data(430, 200.0, 430);
    assert_eq!(kinds(&a), vec![StallKind::ZeroRwnd]);
}

#[test]
fn window_filling_segment_long_after_the_persist_timer_could_fire_is_resource_constraint() {
    // 386 ms: a persist timer armed at the ACK would have fired by 250 ms; the data reached the
    // socket 136–186 ms after the ACK, so at the gap's start the server had nothing to send (the
    // crowdlive study's tlp_off port 32790 at 39.69 s, where the simulator's truth says so).
    let a = small_window_then_server_data(430, 386.0, 430);
    assert_eq!(kinds(&a), vec![StallKind::ResourceConstraint]);
}

#[test]
fn data_that_fits_a_sub_segment_window_is_resource_constraint() {
    // 300 bytes fit a 1000-byte window: Linux sends them at once, so they did not wait.
    let a = small_window_then_server_data(1000, 150.0, 300);
    assert_eq!(kinds(&a), vec![StallKind::ResourceConstraint]);
}

/// Four segments out and acknowledged with a window of 430 bytes, then the viewer's window
/// update `wait_ms` later and two full segments.
fn small_window_then_window_update(wait_ms: f64) -> Analysis {
    let mut c = conn();
    c.server_burst(4, MSS);
    c.wait_ms(50.0);
    c.client_window = 430;
    let end = c.s_nxt;
    c.client_ack(end);
    c.wait_ms(wait_ms);
    c.client_window_update(65535);
    c.wait_ms(0.1);
    c.server_burst(2, MSS);
    run(&c)
}

#[test]
fn window_update_within_the_persist_time_of_a_sub_segment_window_stays_zero_rwnd() {
    // 150 ms: the persist timer (200–250 ms) had not fired yet, so data may have waited.
    let a = small_window_then_window_update(150.0);
    assert_eq!(kinds(&a), vec![StallKind::ZeroRwnd]);
}

#[test]
fn silence_past_the_persist_time_under_a_sub_segment_window_is_resource_constraint() {
    // 4.9 s without a server packet: data waiting behind the 430-byte window would have been
    // sent by the persist timer after 200–250 ms (crowdlive --full seed 3, queue_loss_only port
    // 32871 at 55.98 s, where the truth says nothing was queued).
    let a = small_window_then_window_update(4900.0);
    assert_eq!(kinds(&a), vec![StallKind::ResourceConstraint]);
}
