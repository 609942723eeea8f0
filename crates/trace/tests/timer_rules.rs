//! Hand-built captures for the timer rules added in issue 16, each the shape of a disagreement
//! the crowdlive ground truth found: a tail-loss probe (not an RTO), an RTO shortly after a SACK
//! that RACK's reordering timer cannot explain, and the two timeout types that SACKs decide.
//! Capture point: the server; handshake RTT 50 ms.

use tcpvideo_trace::fixture::Conn;
use tcpvideo_trace::{analyze_bytes, Analysis, AnalyzeOptions, StallKind, TimeoutType};

const MSS: usize = 1448;

fn run(c: &Conn) -> Analysis {
    analyze_bytes(&c.pcap(), &AnalyzeOptions { threads: 1, ..Default::default() }).expect("analysis")
}

fn s(n: u64) -> u64 {
    n * MSS as u64
}

fn conn() -> Conn {
    let mut c = Conn::new();
    c.handshake(50.0);
    c.server_burst(4, MSS);
    c.wait_ms(50.0);
    c.client_ack(s(4));
    c
}

fn retrans_kinds(a: &Analysis) -> Vec<&'static str> {
    a.retransmissions.iter().map(|r| r.kind.as_str()).collect()
}

fn timeout_types(a: &Analysis) -> Vec<TimeoutType> {
    a.retransmissions.iter().filter_map(|r| r.timeout_type).collect()
}

#[test]
fn a_timer_resend_of_the_highest_segment_two_rtts_after_the_last_ack_is_a_tail_loss_probe() {
    let mut c = conn();
    c.server_burst(6, MSS);
    c.wait_ms(50.0);
    c.client_ack(s(6)); // two of six acknowledged; the last four's ACKs do not come
    c.wait_ms(102.0); // PTO = 2·SRTT + 2 ms (Linux tcp_schedule_loss_probe)
    c.server_resend(s(9), MSS); // the highest segment: a probe, not the RTO's snd_una segment
    c.wait_ms(50.0);
    c.client_ack(s(10));
    c.wait_ms(1.0);
    c.server_burst(4, MSS);
    c.wait_ms(50.0);
    c.client_ack(s(14));
    let a = run(&c);
    assert_eq!(retrans_kinds(&a), vec!["tlp"]);
    assert!(timeout_types(&a).is_empty());
    assert_eq!((a.flows[0].tlp_retrans, a.flows[0].timeout_retrans), (1, 0));
    // The gap it ends is no timeout stall: data was outstanding, so packet delay.
    assert_eq!(a.stalls.iter().map(|x| x.kind).collect::<Vec<_>>(), vec![StallKind::PacketDelay]);
}

#[test]
fn a_timer_resend_of_the_first_unacked_segment_is_an_rto_not_a_probe() {
    let mut c = conn();
    c.server_burst(6, MSS);
    c.wait_ms(250.0);
    c.server_resend(s(4), MSS);
    c.wait_ms(50.0);
    c.client_ack(s(10));
    let a = run(&c);
    assert_eq!(retrans_kinds(&a), vec!["timeout"]);
}

#[test]
fn a_resend_soon_after_a_sack_but_long_after_the_first_sack_for_later_data_is_an_rto() {
    let mut c = conn();
    c.server_burst(3, MSS); // first lost, two arrive: two dupacks, no fast retransmit
    c.wait_ms(50.0);
    c.client_ack_sack(s(4), &[(s(5), s(6))]);
    c.wait_ms(0.01);
    c.client_ack_sack(s(4), &[(s(5), s(7))]);
    c.wait_ms(50.0);
    c.client_ack_sack(s(4), &[(s(5), s(7))]); // a repeated SACK (window update) 50 ms later
    c.wait_ms(10.0); // the RTO (min_rto 50 ms) fires 60 ms after the first SACK
    c.server_resend(s(4), MSS);
    c.wait_ms(50.0);
    c.client_ack(s(7));
    c.wait_ms(1.0);
    c.server_burst(4, MSS);
    c.wait_ms(50.0);
    c.client_ack(s(11));
    let a = run(&c);
    // RACK would have re-sent within reo_wnd (≤ SRTT) of the first SACK: this one is the timer's.
    assert_eq!(retrans_kinds(&a), vec!["timeout"]);
    assert_eq!(timeout_types(&a), vec![TimeoutType::LessPacket]);
}

#[test]
fn a_lost_fast_retransmission_resent_just_after_a_sack_is_a_double_timeout_when_rack_cannot_explain_it() {
    let mut c = conn();
    let b = s(4);
    c.server_burst(10, MSS);
    c.wait_ms(50.0);
    for k in 1..=3 {
        c.client_ack_sack(b, &[(b + s(1), b + s(1 + k))]);
        c.wait_ms(0.01);
    }
    c.server_resend(b, MSS); // fast retransmit; this copy is lost too
                             // SACKs for the rest of the burst only (sent before the copy): RACK has nothing to go on.
    for k in 4..=9 {
        c.wait_ms(40.0);
        c.client_ack_sack(b, &[(b + s(1), b + s(1 + k))]);
    }
    // The RTO fires 0.7 ms after the last SACK: 240.7 ms after the head's fast retransmit,
    // which re-armed it (Linux's RTO is at least TCP_RTO_MIN, 200 ms, after that).
    c.wait_ms(0.7);
    c.server_resend(b, MSS);
    c.wait_ms(50.0);
    c.client_ack(b + s(10));
    let a = run(&c);
    assert_eq!(retrans_kinds(&a), vec!["fast", "timeout"]);
    assert_eq!(timeout_types(&a), vec![TimeoutType::Double]);
}

#[test]
fn an_rto_for_a_second_hole_behind_a_partial_ack_with_sacks_seen_is_other_not_ack_loss() {
    let mut c = conn();
    let b = s(4);
    c.server_burst(10, MSS); // segments 0 and 1 lost, 2 and 3 arrive, 4..9 lost
    c.wait_ms(50.0);
    for _ in 0..3 {
        c.client_ack_sack(b, &[(b + s(2), b + s(4))]);
        c.wait_ms(0.01);
    }
    c.server_resend(b, MSS); // fast retransmit of the first hole
    c.wait_ms(50.0);
    c.client_ack_sack(b + s(1), &[(b + s(2), b + s(4))]); // partial ACK
    c.wait_ms(250.0);
    c.server_resend(b + s(1), MSS); // the RTO re-sends the second hole
    c.wait_ms(50.0);
    c.client_ack(b + s(10)); // (the rest arrived meanwhile, their ACKs were lost)
    let a = run(&c);
    assert_eq!(retrans_kinds(&a), vec!["fast", "timeout"]);
    assert_eq!(timeout_types(&a), vec![TimeoutType::Other]);
}

#[test]
fn a_sack_for_a_later_original_after_the_rto_rules_out_continuous_loss() {
    let mut c = conn();
    c.server_burst(6, MSS); // the first five lost, the sixth arrives late
    c.wait_ms(250.0);
    c.server_resend(s(4), MSS);
    c.wait_ms(6.0);
    c.client_ack_sack(s(4), &[(s(9), s(10))]); // the sixth's SACK, just after the RTO
    c.wait_ms(44.0);
    c.client_ack_sack(s(5), &[(s(9), s(10))]); // covers the retransmission, not beyond
    c.wait_ms(0.01);
    for k in 5..9 {
        c.server_resend(s(k), MSS);
    }
    c.wait_ms(50.0);
    c.client_ack(s(10));
    let a = run(&c);
    assert_eq!(timeout_types(&a), vec![TimeoutType::Other]);
}

#[test]
fn an_rto_within_an_srtt_of_a_sack_for_much_later_data_is_not_racks() {
    let mut c = conn();
    c.server_send(MSS); // a one-segment frame, lost
    c.wait_ms(250.0);
    c.server_burst(4, MSS); // the next frame, 250 ms later
    c.wait_ms(50.0);
    c.client_ack_sack(s(4), &[(s(5), s(9))]); // the first report of data sent after the lost one
    c.wait_ms(28.0);
    c.server_send(MSS); // new data
    c.wait_ms(2.0); // the RTO, 30 ms (< SRTT) after that SACK, 2 ms after the new data
    c.server_resend(s(4), MSS);
    c.wait_ms(50.0);
    c.client_ack(s(10));
    let a = run(&c);
    // RACK would have marked it lost at the SACK (it was 250 ms older than the data the SACK
    // reports, more than RTT + reo_wnd) and re-sent it before any new data.
    assert_eq!(retrans_kinds(&a), vec!["timeout"]);
}

#[test]
fn a_dsack_for_a_second_resend_does_not_make_the_rto_spurious() {
    let mut c = conn();
    c.server_send(351); // a small frame, lost
    c.wait_ms(250.0);
    c.server_burst(10, MSS); // the next frame
    c.wait_ms(60.0);
    let lost = s(4);
    c.server_resend(lost, 351); // the RTO
    c.wait_ms(40.0);
    for k in 1..=3 {
        c.client_ack_sack(lost, &[(lost + 351, lost + 351 + s(k))]);
        c.wait_ms(0.5);
    }
    c.server_resend(lost, 351); // a second copy (RACK, after the SACKs)
    c.wait_ms(55.0);
    let end = c.s_nxt;
    c.client_ack(end); // the RTO's copy arrived: covers everything
    c.wait_ms(1.0);
    c.client_ack_sack(end, &[(lost, lost + 351)]); // D-SACK: the second copy was a duplicate
    let a = run(&c);
    assert_eq!(retrans_kinds(&a), vec!["timeout", "fast"]);
    assert_eq!(timeout_types(&a), vec![TimeoutType::Other]);
}

// --- Single-segment re-sends decided from the server's TLP setting (tlp_inference.rs) ---

/// A second connection to the same server (client port 40001), starting 1 s after `prev` ends,
/// written into the same capture.
fn next_conn(prev: Conn) -> Conn {
    conn_from_port(prev, 40001)
}

/// One small frame outstanding, re-sent `resend_ms` after it left, then acknowledged.
fn single_segment_resend(mut c: Conn, resend_ms: f64) -> Conn {
    c.server_send(500);
    c.wait_ms(resend_ms);
    c.server_resend(500, 500);
    c.wait_ms(50.0);
    c.client_ack(1000);
    c
}

/// A flow whose sender shows an unambiguous probe: the highest of four segments re-sent.
fn server_with_probe() -> Conn {
    let mut c = conn();
    c.server_burst(6, MSS);
    c.wait_ms(50.0);
    c.client_ack(s(6));
    c.wait_ms(102.0);
    c.server_resend(s(9), MSS);
    c.wait_ms(50.0);
    c.client_ack(s(10));
    c
}

/// A flow whose sender shows no probe: the first of four segments re-sent by the RTO, 300 ms
/// (> 2·SRTT) after the last ACK with nothing sent in between.
fn server_without_probe() -> Conn {
    let mut c = conn();
    c.server_burst(6, MSS);
    c.wait_ms(50.0);
    c.client_ack(s(6));
    c.wait_ms(300.0);
    c.server_resend(s(6), MSS);
    c.wait_ms(50.0);
    c.client_ack(s(10));
    c
}

#[test]
fn a_single_segment_resend_at_the_rto_instant_is_a_probe_when_the_server_probes_elsewhere() {
    // Alone, timing calls it an RTO (it left at ≥ 0.9·RTO)...
    let alone = run(&single_segment_resend(next_conn(Conn::new()), 300.0));
    assert_eq!(retrans_kinds(&alone), vec!["timeout"]);
    // ... after a flow of the same server showed a probe, it is the PTO clamped to the RTO.
    let a = run(&single_segment_resend(next_conn(server_with_probe()), 300.0));
    assert_eq!(retrans_kinds(&a), vec!["tlp", "tlp"]);
    assert_eq!((a.flows[1].tlp_retrans, a.flows[1].timeout_retrans), (1, 0));
    assert!(timeout_types(&a).is_empty());
    // The stall it ended is packet delay (data outstanding), not a timeout stall.
    let kinds: Vec<StallKind> = a.stalls.iter().filter(|x| x.flow_id == 1).map(|x| x.kind).collect();
    assert_eq!(kinds, vec![StallKind::PacketDelay]);
}

#[test]
fn an_early_single_segment_resend_is_an_rto_when_the_server_shows_no_probe() {
    // 150 ms after it left (< 0.9·RTO): timing alone calls it a probe ...
    let alone = run(&single_segment_resend(next_conn(Conn::new()), 150.0));
    assert_eq!(retrans_kinds(&alone), vec!["tlp"]);
    // ... but this server's RTOs come with no probe before them: TLP is off there.
    let a = run(&single_segment_resend(next_conn(server_without_probe()), 150.0));
    assert_eq!(retrans_kinds(&a), vec!["timeout", "timeout"]);
    assert_eq!((a.flows[1].tlp_retrans, a.flows[1].timeout_retrans), (0, 1));
    assert_eq!(timeout_types(&a).len(), 2);
    let kinds: Vec<StallKind> = a.stalls.iter().filter(|x| x.flow_id == 1).map(|x| x.kind).collect();
    assert_eq!(kinds, vec![StallKind::Timeout]);
}

#[test]
fn a_single_segment_resend_followed_by_an_unbacked_off_timer_was_a_probe() {
    // Re-sent at the RTO instant, then again one RTO later (a probe re-arms the RTO unchanged):
    // the first was the probe. Re-sent again two RTOs later (backed off): it was the RTO.
    let resend_twice = |second_gap_ms: f64| {
        let mut c = next_conn(Conn::new());
        c.server_send(500);
        c.wait_ms(300.0);
        c.server_resend(500, 500);
        c.wait_ms(second_gap_ms);
        c.server_resend(500, 500);
        c.wait_ms(50.0);
        c.client_ack(1000);
        run(&c)
    };
    assert_eq!(retrans_kinds(&resend_twice(300.0)), vec!["tlp", "timeout"]);
    assert_eq!(retrans_kinds(&resend_twice(600.0)), vec!["timeout", "timeout"]);
}

// --- Single-segment re-sends decided from the window that follows them (rto_window.rs) ---

/// A connection whose only outstanding segment (500 bytes) is re-sent at the RTO instant (300 ms
/// after it left): timing alone says RTO.
fn resent_at_the_rto_instant() -> Conn {
    let mut c = next_conn(Conn::new());
    c.server_send(500);
    c.wait_ms(300.0);
    c.server_resend(500, 500);
    c
}

/// `resent_at_the_rto_instant`, then `before_ack` packets of the next frame before the ACK that
/// covers the re-send and `after_ack` packets of another right after it; `dsack`: that ACK
/// reports the re-send as a duplicate (the original had arrived).
fn resend_then_frames_conn(before_ack: u64, after_ack: u64, dsack: bool) -> Conn {
    let mut c = resent_at_the_rto_instant();
    c.wait_ms(10.0);
    c.server_burst(before_ack as usize, MSS);
    c.wait_ms(40.0);
    let acked = 1000 + s(before_ack);
    if dsack {
        c.client_ack_sack(acked, &[(500, 1000)]);
    } else {
        c.client_ack(acked);
    }
    if after_ack > 0 {
        c.wait_ms(5.0);
        c.server_burst(after_ack as usize, MSS);
        c.wait_ms(50.0);
        c.client_ack(acked + s(after_ack));
    }
    c
}

fn resend_then_frames(before_ack: u64, after_ack: u64, dsack: bool) -> Analysis {
    run(&resend_then_frames_conn(before_ack, after_ack, dsack))
}

#[test]
fn a_frame_sent_before_the_resends_ack_proves_a_probe_an_rtos_window_is_one_packet() {
    assert_eq!(retrans_kinds(&resend_then_frames(0, 0, false)), vec!["timeout"], "no later data: timing decides");
    // Linux's tcp_enter_loss leaves cwnd = 1 with the re-sent copy in flight: nothing new can
    // leave before its ACK. A probe leaves the window alone.
    let a = resend_then_frames(1, 0, false);
    assert_eq!(retrans_kinds(&a), vec!["tlp"]);
    assert_eq!((a.flows[0].tlp_retrans, a.flows[0].timeout_retrans), (1, 0));
    assert!(timeout_types(&a).is_empty());
}

#[test]
fn after_the_resends_ack_two_packets_fit_an_rtos_slow_start_and_three_do_not() {
    assert_eq!(retrans_kinds(&resend_then_frames(0, 2, false)), vec!["timeout"]);
    assert_eq!(retrans_kinds(&resend_then_frames(0, 3, false)), vec!["tlp"]);
}

#[test]
fn a_large_flight_after_the_ack_of_a_spurious_resend_proves_nothing_an_rto_is_undone() {
    // The D-SACK says the original arrived: Linux undoes such an RTO (tcp_try_undo_loss) and the
    // old window returns, so three packets after the ACK no longer rule the RTO out ...
    assert_eq!(retrans_kinds(&resend_then_frames(0, 3, true)), vec!["timeout"]);
    // ... while one packet before it still does (no undo before that ACK).
    assert_eq!(retrans_kinds(&resend_then_frames(1, 0, true)), vec!["tlp"]);
}

#[test]
fn a_flight_after_a_sack_proves_nothing_sacked_packets_leave_the_rto_window() {
    // After an RTO and its ACK (cwnd 2), two packets go; a SACK for the second takes it out of
    // Linux's in-flight count, so two more may go with cwnd still 2 (study per_type_tlp_off).
    let mut c = resent_at_the_rto_instant();
    c.wait_ms(50.0);
    c.client_ack(1000);
    c.wait_ms(5.0);
    c.server_burst(2, MSS);
    c.wait_ms(50.0);
    c.client_ack_sack(1000, &[(1000 + s(1), 1000 + s(2))]);
    c.server_burst(2, MSS);
    c.wait_ms(50.0);
    c.client_ack(1000 + s(4));
    assert_eq!(retrans_kinds(&run(&c)), vec!["timeout"]);
}

#[test]
fn a_window_proven_probe_tells_the_server_setting_for_its_other_flows() {
    // A first flow whose single-segment re-send is followed by a frame before its ACK ...
    let c = resend_then_frames_conn(1, 0, false);
    // ... makes TLP on for the server, so a second flow's bare single-segment re-send at the RTO
    // instant (alone: "timeout", first test) is the PTO clamped to the RTO.
    let a = run(&single_segment_resend(conn_from_port(c, 40002), 300.0));
    assert_eq!(retrans_kinds(&a), vec!["tlp", "tlp"]);
    assert_eq!(a.server_settings[0].tlp, "on");
}

#[test]
fn an_rto_just_after_the_clients_own_retransmitted_request_is_a_timeout_not_ack_clocked() {
    // Both ends armed their RTO from the same handshake sample: the client's request re-send
    // arrives 1.5 ms before the server's RTO re-sends the first of its ten lost segments (the
    // study's per-type connections, whose whole first window a short queue dropped). That client
    // packet acknowledges nothing new and carries no SACK: no ACK-driven path re-sends on it.
    let mut c = Conn::new();
    c.handshake(90.0);
    c.client_send(67);
    c.server_ack(67);
    c.server_burst(10, MSS);
    c.wait_ms(288.5);
    c.client_send_at(0, 67);
    c.wait_ms(1.5);
    c.server_resend(0, MSS);
    c.wait_ms(90.0);
    c.client_ack(s(1));
    c.server_resend(s(1), MSS);
    c.wait_ms(90.0);
    c.client_ack(s(10));
    let a = run(&c);
    assert_eq!(retrans_kinds(&a)[0], "timeout");
    assert_eq!(a.flows[0].other_retrans, 0);
}

// --- Timer-looking `fast` re-sends decided from the server's RACK setting (rack_inference.rs) ---

/// A flow whose sender shows its RACK setting: one segment, a second one 200 ms (4·SRTT) later,
/// the second SACKed (the first is overdue for RACK at that SACK), then the first re-sent
/// `resend_ms` after the SACK: at once (RACK on) or by the RTO 150 ms later (RACK off).
fn server_showing_rack(resend_ms: f64) -> Conn {
    let mut c = conn();
    c.server_send(MSS);
    c.wait_ms(200.0);
    c.server_send(MSS);
    c.wait_ms(50.0);
    c.client_ack_sack(s(4), &[(s(5), s(6))]);
    c.wait_ms(resend_ms);
    c.server_resend(s(4), MSS);
    c.wait_ms(50.0);
    c.client_ack(s(6));
    c
}

/// After the study's shape (per_type_tlp_off, port 32806 at 29.69 s): a small frame, the next one
/// 200 ms later SACKed, and the first re-sent 25 ms after that SACK with no client packet
/// between. The first is overdue at the SACK, so RACK (on) marks it lost there and sends it as
/// soon as nothing holds it; a third frame left 20 ms before the SACK, so at 25 ms after it the
/// re-send is 45 ms (less than SRTT) after the server's previous departure and pacing may have
/// held it (rack_timer.rs): RACK's or the RTO's, which the server's own RACK votes decide. (Made
/// ambiguous in issue 15: without the third frame a RACK-on server would have sent it at the
/// SACK, and the analyzer now calls such a re-send an RTO whatever the votes.)
fn rack_or_rto_resend(c: Conn) -> Conn {
    let mut c = next_conn(c);
    c.server_send(500);
    c.wait_ms(200.0);
    c.server_send(500);
    c.wait_ms(30.0);
    c.server_send(500); // still in flight at the SACK
    c.wait_ms(20.0);
    c.client_ack_sack(500, &[(1000, 1500)]);
    c.wait_ms(25.0);
    c.server_resend(500, 500);
    c.wait_ms(50.0);
    c.client_ack(2000);
    c.wait_ms(1.0);
    c.server_burst(4, MSS); // the stream goes on: not the flow's tail
    c.wait_ms(50.0);
    c.client_ack(2000 + s(4));
    c
}

#[test]
fn a_resend_racks_timer_could_have_sent_is_an_rto_when_the_server_shows_rack_off() {
    // Alone (RACK assumed on, the Linux default) it is RACK's ...
    let alone = run(&rack_or_rto_resend(Conn::new()));
    assert_eq!(retrans_kinds(&alone), vec!["fast"]);
    // ... and still after a flow where RACK re-sent an overdue segment at the SACK itself ...
    let on = run(&rack_or_rto_resend(server_showing_rack(0.5)));
    assert_eq!(retrans_kinds(&on), vec!["fast", "fast"]);
    // ... but after a flow where such a segment waited for the RTO, RACK is off at this server:
    // the RTO sent it too (one segment left outstanding: less packet).
    let off = run(&rack_or_rto_resend(server_showing_rack(150.0)));
    assert_eq!(retrans_kinds(&off), vec!["timeout", "timeout"]);
    assert_eq!((off.flows[1].fast_retrans, off.flows[1].timeout_retrans), (0, 1));
    assert_eq!(off.retransmissions[1].timeout_type, Some(TimeoutType::LessPacket));
}

#[test]
fn an_rto_behind_three_sacked_segments_says_nothing_about_rack() {
    // Three later segments SACKed: a RACK-off server would have recovered by dupthresh too, so
    // an RTO there (whatever held the re-send) is no evidence that RACK is off (golden's
    // cc/ccp capture at a router had one).
    let mut c = conn();
    c.server_send(MSS);
    c.wait_ms(200.0);
    c.server_burst(3, MSS);
    c.wait_ms(50.0);
    c.client_ack_sack(s(4), &[(s(5), s(8))]);
    c.wait_ms(150.0);
    c.server_resend(s(4), MSS);
    c.wait_ms(50.0);
    c.client_ack(s(8));
    let a = run(&rack_or_rto_resend(c));
    assert_eq!(retrans_kinds(&a)[1], "fast");
}

/// Three holes (segments 4–6) behind six SACKed segments, the SACK 50 ms after the burst.
fn three_holes_sacked() -> Conn {
    let mut c = conn();
    c.server_burst(8, MSS);
    c.wait_ms(50.0);
    c.client_ack_sack(s(4), &[(s(7), s(12))]);
    c
}

/// The recovery's end (everything acknowledged 50 ms later); every re-send must be fast.
fn assert_recovered_without_an_rto(mut c: Conn) {
    c.wait_ms(50.0);
    c.client_ack(s(12));
    let a = run(&c);
    assert_eq!(retrans_kinds(&a), vec!["fast", "fast", "fast"]);
    assert_eq!(a.flows[0].timeout_retrans, 0);
}

#[test]
fn a_paced_resend_in_fast_recovery_sooner_than_srtt_after_the_rto_was_rearmed_is_not_an_rto() {
    // The head is re-sent at the SACK, the next holes leave paced 30 ms apart (fq / BBR) with no
    // ACK just before them. The third leaves 60 ms after the SACK (beyond RACK's window) but
    // 10 ms after an ACK advanced SND.UNA and 30 ms after the new head's re-send: Linux's RTO,
    // re-armed there and never shorter than SRTT, cannot have fired (the crowdlive fq_pacing
    // variant's paced re-sends were typed as RTOs).
    let mut c = three_holes_sacked();
    c.wait_ms(0.1);
    c.server_resend(s(4), MSS);
    c.wait_ms(30.0);
    c.server_resend(s(5), MSS);
    c.wait_ms(20.0);
    c.client_ack_sack(s(5), &[(s(7), s(12))]);
    c.wait_ms(10.0);
    c.server_resend(s(6), MSS);
    assert_recovered_without_an_rto(c);
}

#[test]
fn a_paced_resend_soon_after_the_heads_rack_resend_is_not_an_rto_however_long_ago_the_last_advance() {
    // No ACK advances SND.UNA after the burst. RACK's timer re-sends the head 40 ms after the
    // SACK, a duplicate SACK releases the second hole, and the third leaves paced 3.6 ms later:
    // 54 ms after the SACK (past RACK's window) and more than SRTT after the last advance, but
    // 14 ms after the head's re-send, which re-armed Linux's RTO (tcp_xmit_retransmit_queue /
    // tcp_rack_reo_timeout): no RTO can have fired (issue 16 session 20, the crowdlive
    // fq_pacing variant at 37.586 s).
    let mut c = three_holes_sacked();
    c.wait_ms(40.0);
    c.server_resend(s(4), MSS);
    c.wait_ms(10.0);
    c.client_ack_sack(s(4), &[(s(7), s(12))]);
    c.wait_ms(0.05);
    c.server_resend(s(5), MSS);
    c.wait_ms(3.6);
    c.server_resend(s(6), MSS);
    assert_recovered_without_an_rto(c);
}

#[test]
fn a_lost_fast_retransmission_resent_within_racks_window_is_a_double_rto_when_the_server_shows_rack_off() {
    let lost_retransmission = |prev: Conn, after_sack_ms: f64| {
        let mut c = next_conn(prev);
        let m = MSS as u64;
        c.server_burst(5, MSS);
        c.wait_ms(50.0);
        c.client_ack_sack(500, &[(500 + m, 500 + 5 * m)]); // four SACKed: fast retransmit
        c.wait_ms(0.1);
        c.server_resend(500, MSS);
        c.wait_ms(1.0);
        c.server_send(MSS); // sent after the retransmission ...
        c.wait_ms(50.0);
        c.client_ack_sack(500, &[(500 + m, 500 + 6 * m)]); // ... and delivered: the retransmission was lost
        c.wait_ms(after_sack_ms); // a timer re-sends it, within SRTT of that SACK
        c.server_resend(500, MSS);
        c.wait_ms(50.0);
        c.client_ack(500 + 6 * m);
        c.wait_ms(1.0);
        c.server_burst(4, MSS);
        c.wait_ms(50.0);
        c.client_ack(500 + 10 * m);
        c
    };
    let alone = run(&lost_retransmission(Conn::new(), 20.0));
    assert_eq!(retrans_kinds(&alone), vec!["fast", "fast"]);
    // With RACK off only the RTO re-sends a lost retransmission: 20 ms after the SACK, and
    // also when the timer happens to fire 0.5 ms after one (the --full tlp_off shape).
    for after_sack_ms in [20.0, 0.5] {
        let off = run(&lost_retransmission(server_showing_rack(150.0), after_sack_ms));
        assert_eq!(retrans_kinds(&off), vec!["timeout", "fast", "timeout"], "{after_sack_ms} ms");
        assert_eq!(off.retransmissions[2].timeout_type, Some(TimeoutType::Double));
    }
}

#[test]
fn a_lost_go_back_n_resend_of_the_head_resent_an_rto_later_is_a_double_rto_when_the_server_shows_rack_off() {
    // After an RTO (loss episode up to 8 segments), the next hole is re-sent ACK-clocked and
    // lost again; the SACK stream goes on (one new segment per ACK) and the head is re-sent only
    // an RTO (400 ms, backed off) after SND.UNA last advanced, 0.5 ms after a SACK. Linux's
    // go-back-N re-sends come right after the RTO; with RACK off only the timer finds a lost
    // retransmission (the crowdlive --full seed 3 tlp_off port 32809 at 83.53 s).
    let episode = |prev: Conn| {
        let mut c = next_conn(prev);
        let m = MSS as u64;
        let at = |k: u64| 500 + k * m;
        c.server_burst(8, MSS);
        c.wait_ms(400.0); // nothing comes back: the RTO re-sends the head
        c.server_resend(at(0), MSS);
        c.wait_ms(50.0);
        c.client_ack_sack(at(2), &[(at(3), at(8))]); // s2 is a hole
        c.wait_ms(0.1);
        c.server_resend(at(2), MSS); // go-back-N, ACK-clocked: lost too
        let mut end = at(8);
        for _ in 0..22 {
            c.wait_ms(1.0);
            c.server_send(MSS);
            end += m;
            c.wait_ms(19.0);
            c.client_ack_sack(at(2), &[(at(3), end)]);
        }
        c.wait_ms(0.5);
        c.server_resend(at(2), MSS);
        c.wait_ms(50.0);
        c.client_ack(end);
        c
    };
    let unknown = run(&episode(Conn::new()));
    assert_eq!(retrans_kinds(&unknown), vec!["timeout", "fast", "fast"]);
    let off = run(&episode(server_showing_rack(150.0)));
    assert_eq!(retrans_kinds(&off), vec!["timeout", "timeout", "fast", "timeout"]);
    assert_eq!(off.retransmissions[3].timeout_type, Some(TimeoutType::Double));
}

/// A connection to the same server from client port `port`, starting 1 s after `prev` ends,
/// written into the same capture: handshake, 500 bytes sent and acknowledged.
fn conn_from_port(prev: Conn, port: u16) -> Conn {
    let mut c = Conn::new();
    c.client.1 = port;
    c.now = prev.now + 1_000_000_000;
    c.w = prev.w;
    c.handshake(50.0);
    c.server_send(500);
    c.wait_ms(50.0);
    c.client_ack(500);
    c.wait_ms(1.0);
    c
}

/// `server_showing_rack`'s shape on a connection that continues the capture (client `port`).
fn another_flow_showing_rack(prev: Conn, port: u16, resend_ms: f64) -> Conn {
    let mut c = conn_from_port(prev, port);
    c.server_send(MSS);
    c.wait_ms(200.0);
    c.server_send(MSS);
    c.wait_ms(50.0);
    c.client_ack_sack(500, &[(500 + MSS as u64, 500 + 2 * MSS as u64)]);
    c.wait_ms(resend_ms);
    c.server_resend(500, MSS);
    c.wait_ms(50.0);
    c.client_ack(500 + 2 * MSS as u64);
    c
}

/// A segment overdue for RACK at the SACK of the next one (sent 200 ms = 4·SRTT later), re-sent
/// only when a third segment is SACKed, `wait_ms` after that first SACK: DupThresh's recovery
/// (SRTT 50 ms).
fn dupthresh_after_rack_deadline(prev: Conn, port: u16, wait_ms: f64) -> Conn {
    let mut c = conn_from_port(prev, port);
    let m = MSS as u64;
    c.server_send(MSS);
    c.wait_ms(200.0);
    c.server_send(MSS);
    c.wait_ms(50.0);
    c.client_ack_sack(500, &[(500 + m, 500 + 2 * m)]); // one SACKed: RACK would re-send here
    c.wait_ms(wait_ms - 50.0);
    c.server_burst(2, MSS);
    c.wait_ms(50.0);
    c.client_ack_sack(500, &[(500 + m, 500 + 4 * m)]); // three SACKed: DupThresh re-sends now
    c.wait_ms(0.1);
    c.server_resend(500, MSS);
    c.wait_ms(50.0);
    c.client_ack(500 + 4 * m);
    c
}

#[test]
fn a_dupthresh_recovery_of_a_segment_rack_found_lost_an_srtt_earlier_says_rack_off() {
    // The third SACK 120 ms after the first (more than SRTT + slack after RACK's deadline): a
    // vote for RACK off, and the server summary says so.
    let late = run(&dupthresh_after_rack_deadline(Conn::new(), 40010, 120.0));
    assert_eq!(retrans_kinds(&late), vec!["fast"]);
    let srv = &late.server_settings[0];
    assert_eq!((srv.rack_dupthresh_late, srv.rack), (1, "off"));
    // 51 ms after it (within SRTT + 2 ms of the deadline: RACK's reordering timer could still
    // have been pending) says nothing.
    let soon = run(&dupthresh_after_rack_deadline(Conn::new(), 40010, 51.0));
    assert_eq!((soon.server_settings[0].rack_dupthresh_late, soon.server_settings[0].rack), (0, "unknown"));
}

#[test]
fn a_resend_just_after_a_sack_is_an_rto_when_the_server_shows_rack_off_in_more_flows() {
    // The RTO of a RACK-off server can fire 0.5 ms after a SACK by chance (the default study's
    // tlp_off, 0.7 ms): alone that looks like RACK (and votes RACK on) ...
    let alone = run(&another_flow_showing_rack(Conn::new(), 40020, 0.5));
    assert_eq!(retrans_kinds(&alone), vec!["fast"]);
    assert_eq!(alone.server_settings[0].rack, "on");
    // ... but after two flows that showed RACK off (an RTO RACK would have prevented, a late
    // DupThresh recovery) the server is RACK off, and the RTO sent it.
    let c = another_flow_showing_rack(Conn::new(), 40021, 150.0);
    let c = dupthresh_after_rack_deadline(c, 40022, 120.0);
    let off = run(&another_flow_showing_rack(c, 40023, 0.5));
    assert_eq!(off.server_settings[0].rack, "off");
    assert_eq!(
        (off.server_settings[0].rack_resends, off.server_settings[0].rack_rtos_prevented, off.server_settings[0].rack_dupthresh_late),
        (1, 1, 1)
    );
    assert_eq!(retrans_kinds(&off), vec!["timeout", "fast", "timeout"]);
}

#[test]
fn a_lost_retransmission_resent_at_an_ack_before_the_timer_can_be_due_is_racks_held_by_prr() {
    // Fast recovery: b and b+1 lost; b re-sent at the third SACK, b+1 at the next dup ACK and
    // lost again. New data sent after that copy is SACKed (RACK marks the copy lost), but PRR
    // lets the re-send out only at a later ACK, 55 ms (> SRTT + 2 ms) after that first SACK,
    // 109 ms after the copy: the retransmission timer (≥ 200 ms after its arming) cannot have
    // fired (the crowdlive per_type_connections shape of session 16, port 32803 at 14.19 s).
    let mut c = conn();
    let b = s(4);
    let m = MSS as u64;
    c.server_burst(10, MSS); // b .. b+10·m; b and b+m lost
    c.wait_ms(50.0);
    for _ in 0..3 {
        c.client_ack_sack(b, &[(b + 2 * m, b + 10 * m)]);
        c.wait_ms(0.01);
    }
    c.server_resend(b, MSS);
    c.wait_ms(16.0);
    c.client_ack_sack(b, &[(b + 2 * m, b + 10 * m)]);
    c.wait_ms(0.01);
    c.server_resend(b + m, MSS); // lost again
    c.wait_ms(4.0);
    c.server_send(MSS); // new data after that copy
    c.wait_ms(30.0);
    c.client_ack_sack(b + m, &[(b + 2 * m, b + 10 * m)]); // b's copy arrived
    c.wait_ms(20.0);
    c.client_ack_sack(b + m, &[(b + 2 * m, b + 11 * m)]); // the new segment: RACK marks b+m lost
    c.wait_ms(5.0);
    c.server_send(MSS);
    c.wait_ms(50.0);
    c.client_ack_sack(b + m, &[(b + 2 * m, b + 12 * m)]);
    c.wait_ms(0.01);
    c.server_resend(b + m, MSS); // released by PRR at this ACK
    c.wait_ms(50.0);
    c.client_ack(b + 12 * m);
    let a = run(&c);
    assert_eq!(retrans_kinds(&a), vec!["fast", "fast", "fast"]);
    assert_eq!(a.flows[0].timeout_retrans, 0);
}

/// A small frame, the next one 200 ms later SACKed (the first is overdue for RACK at that SACK:
/// sent 250 ms before it, SRTT 50), the first re-sent `resend_ms` after the SACK with no client
/// packet between, then everything acknowledged.
fn overdue_frame_resent_after_the_sack(resend_ms: f64) -> Conn {
    let mut c = conn();
    c.server_send(500);
    c.wait_ms(200.0);
    c.server_send(500);
    c.wait_ms(50.0);
    c.client_ack_sack(s(4), &[(s(4) + 500, s(4) + 1000)]);
    c.wait_ms(resend_ms);
    c.server_resend(s(4), 500);
    c.wait_ms(50.0);
    c.client_ack(s(4) + 1000);
    c
}

#[test]
fn an_overdue_segment_resent_long_after_the_last_departure_and_not_at_an_ack_is_an_rto_even_with_rack_on() {
    // Issue 15 (the simulator's SACK compression, crowdlive tlp_off): re-sent 25 ms after the
    // SACK, 75 ms after the server's last departure. RACK, on by default, marked it lost at the
    // SACK and nothing could hold it that long: no ACK released a window, no pacing gap is longer
    // than SRTT.
    let mut c = overdue_frame_resent_after_the_sack(25.0);
    c.wait_ms(1.0);
    c.server_burst(4, MSS); // the stream goes on: not the flow's tail
    c.wait_ms(50.0);
    c.client_ack(s(8) + 1000);
    assert_eq!(retrans_kinds(&run(&c)), vec!["timeout"]);
    // The same re-send 1 ms after the SACK is RACK's (paced or at the ACK itself).
    assert_eq!(retrans_kinds(&run(&overdue_frame_resent_after_the_sack(1.0))), vec!["fast"]);
}
