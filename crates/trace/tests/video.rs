//! Video awareness: HTTP-FLV and RTMP parsing on reassembled streams, per-frame-type loss and
//! timeout tables (seed 000 Tables 4–5), HTTP on periods, and upload→download stall pairing by
//! channel (Table 3).

use tcpvideo_trace::fixture::{CaptureWriter, Conn, Container, Link};
use tcpvideo_trace::flv::FrameType;
use tcpvideo_trace::reader::Reader;
use tcpvideo_trace::{analyze_bytes, Analysis, AnalyzeOptions, StallKind};

const MSS: usize = 1448;

fn opts1() -> AnalyzeOptions {
    AnalyzeOptions { threads: 1, ..Default::default() }
}

fn flv_tag(t: u8, first: u8, size: usize) -> Vec<u8> {
    let mut v = vec![t];
    v.extend_from_slice(&(size as u32).to_be_bytes()[1..]);
    v.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0]);
    let mut body = vec![0u8; size];
    body[0] = first;
    if t == 9 && size > 1 {
        body[1] = 1; // AVCPacketType 1: a coded picture (0 would be the sequence header)
    }
    v.extend_from_slice(&body);
    v.extend_from_slice(&(11 + size as u32).to_be_bytes());
    v
}

/// An FLV stream: header, then one GOP: I (20 kB), then (audio 180 B, P 3 kB) × `n`.
fn flv_stream(n: usize) -> (Vec<u8>, usize) {
    let mut s = b"FLV\x01\x05\x00\x00\x00\x09\x00\x00\x00\x00".to_vec();
    let i_at = s.len();
    s.extend(flv_tag(9, 0x17, 20_000));
    for _ in 0..n {
        s.extend(flv_tag(8, 0xaf, 180));
        s.extend(flv_tag(9, 0x27, 3_000));
    }
    (s, i_at)
}

/// Send `data` from the server in MSS segments, each window of 8 acked one RTT later.
fn send_acked(c: &mut Conn, data: &[u8], rtt_ms: f64) {
    for w in data.chunks(8 * MSS) {
        for (k, seg) in w.chunks(MSS).enumerate() {
            if k > 0 {
                c.wait_ns(1000);
            }
            c.server_send_bytes(seg);
        }
        c.wait_ms(rtt_ms);
        let e = c.s_nxt;
        c.client_ack(e);
        c.wait_ms(0.5);
    }
}

#[test]
fn http_flv_packets_are_attributed_to_frames_and_timeouts_typed_per_frame() {
    let mut c = Conn::new();
    c.handshake(40.0);
    c.client_send_bytes(b"GET /live/ch1.flv?token=abc HTTP/1.1\r\nHost: cdn\r\n\r\n");
    c.wait_ms(0.2);
    let head = b"HTTP/1.1 200 OK\r\nContent-Type: video/x-flv\r\nConnection: close\r\n\r\n";
    let (flv, _) = flv_stream(10);
    let mut body = head.to_vec();
    body.extend_from_slice(&flv);
    // First window: two segments of the I frame; the first is lost (tail-less small window).
    let first = body[..MSS].to_vec();
    let second = body[MSS..2 * MSS].to_vec();
    c.server_send_bytes(&first);
    c.server_send_bytes(&second);
    c.wait_ms(40.0);
    c.client_ack_sack(0, &[]); // nothing new: no loss signal without SACK/dupack semantics
    c.wait_ms(260.0);
    // RTO: resend the first segment (with its real bytes; the parser already has them).
    c.server_resend(0, MSS);
    c.wait_ms(40.0);
    c.client_ack(2 * MSS as u64);
    let rest = body[2 * MSS..].to_vec();
    send_acked(&mut c, &rest, 40.0);
    c.server_fin();
    let a = analyze_bytes(&c.pcap(), &opts1()).unwrap();
    let f = &a.flows[0];
    assert_eq!(f.app, "http");
    assert_eq!(f.channel.as_deref(), Some("live/ch1"));
    assert_eq!(f.direction, "download");
    let r = &a.retransmissions[0];
    assert_eq!(r.kind.as_str(), "timeout");
    // Offset 0 holds the HTTP head and FLV header: "meta"; the I frame starts inside it.
    assert_eq!(r.frame, FrameType::Meta);
    let ft = |t: FrameType| a.frame_types.iter().find(|x| x.frame == t).unwrap().clone();
    assert_eq!(ft(FrameType::I).frames, 1);
    assert_eq!(ft(FrameType::P).frames, 10);
    assert_eq!(ft(FrameType::Audio).frames, 10);
    assert_eq!(ft(FrameType::P).mean_size_bytes, Some(3000.0));
    // Every data packet is attributed to some type; I-frame packets are ~20000/1448.
    let total: u64 = a.frame_types.iter().map(|x| x.packets).sum();
    assert_eq!(total, f.data_packets); // retransmissions included in both
    assert!((13..=15).contains(&ft(FrameType::I).packets), "{}", ft(FrameType::I).packets);
    assert!(ft(FrameType::Meta).timeout_retrans == 1);
    assert_eq!(a.http.len(), 1);
    assert_eq!(a.http[0].status, 200);
}

#[test]
fn avc_sequence_header_is_meta_not_an_i_frame() {
    // Key-frame nibble 1, codec 7 (AVC), AVCPacketType 0: the decoder configuration record.
    assert_eq!(FrameType::from_tag_body(9, &[0x17, 0, 0, 0, 0]), FrameType::Meta);
    assert_eq!(FrameType::from_tag_body(9, &[0x17, 1, 0, 0, 0]), FrameType::I);
    assert_eq!(FrameType::from_tag_body(9, &[0x27, 1]), FrameType::P);
    // A whole stream: header, sequence header, I: one I frame, the sequence header is meta.
    let mut c = Conn::with(Link::Ethernet, false, 80);
    c.handshake(20.0);
    c.client_send_bytes(b"GET /live/a.flv HTTP/1.1\r\n\r\n");
    let mut body = b"HTTP/1.1 200 OK\r\nContent-Type: video/x-flv\r\n\r\n".to_vec();
    body.extend_from_slice(b"FLV\x01\x05\x00\x00\x00\x09\x00\x00\x00\x00");
    let mut seq_header = flv_tag(9, 0x17, 40);
    seq_header[11 + 1] = 0; // AVCPacketType 0
    body.extend(seq_header);
    body.extend(flv_tag(9, 0x17, 3000));
    send_acked(&mut c, &body, 20.0);
    let a = tcpvideo_trace::analyze_bytes(&c.pcap(), &opts1()).unwrap();
    let frames: std::collections::BTreeMap<_, _> = a.frame_types.iter().map(|f| (f.frame.as_str(), f.frames)).collect();
    assert_eq!(frames["I"], 1, "{frames:?}");
}

#[test]
fn non_video_http_body_is_unknown_not_meta() {
    let mut c = Conn::with(Link::Ethernet, false, 80);
    c.handshake(20.0);
    c.client_send_bytes(b"GET /index.html HTTP/1.1\r\n\r\n");
    let page = vec![b'x'; 6 * MSS];
    let mut body = format!("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n", page.len()).into_bytes();
    body.extend_from_slice(&page);
    send_acked(&mut c, &body, 20.0);
    let a = tcpvideo_trace::analyze_bytes(&c.pcap(), &opts1()).unwrap();
    let pkts: std::collections::BTreeMap<_, _> = a.frame_types.iter().map(|f| (f.frame.as_str(), f.packets)).collect();
    assert_eq!(pkts["meta"], 1, "only the packet with the head: {pkts:?}");
    assert!(pkts["unknown"] >= 5, "{pkts:?}");
}

#[test]
fn timeout_inside_an_i_frame_counts_for_i() {
    let mut c = Conn::new();
    c.handshake(40.0);
    c.client_send_bytes(b"GET /live/x.flv HTTP/1.1\r\n\r\n");
    let mut body = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
    let (flv, _) = flv_stream(4);
    body.extend_from_slice(&flv);
    send_acked(&mut c, &body[..8 * MSS], 40.0); // first window fine (header + I frame)
                                                // Second window: 8 segments, all in the I frame; the first is lost, others' dupacks lost.
    let base = 8 * MSS;
    for k in 0..8 {
        c.server_send_bytes(&body[base + k * MSS..base + (k + 1) * MSS]);
        c.wait_ns(1000);
    }
    c.wait_ms(300.0);
    c.server_resend(base as u64, MSS);
    c.wait_ms(40.0);
    c.client_ack((base + 8 * MSS) as u64);
    let rest = body[base + 8 * MSS..].to_vec();
    send_acked(&mut c, &rest, 40.0);
    let a = analyze_bytes(&c.pcap(), &opts1()).unwrap();
    let i = a.frame_types.iter().find(|x| x.frame == FrameType::I).unwrap();
    assert_eq!(i.timeout_retrans, 1);
    assert_eq!(i.retrans_packets, 1);
    // ack_delay_loss (the later segments had arrived): Table 5 column I.
    assert_eq!(i.timeout_types[3], 1);
    assert_eq!(a.stalls.iter().filter(|s| s.kind == StallKind::Timeout).count(), 1);
    assert_eq!(a.stalls.iter().find(|s| s.kind == StallKind::Timeout).unwrap().frame, FrameType::I);
}

#[test]
fn http_response_with_content_length_is_one_on_period() {
    let mut c = Conn::new();
    c.handshake(20.0);
    for seg in 0..3 {
        c.client_send_bytes(format!("GET /hls/ch9/seg{seg}.ts HTTP/1.1\r\nHost: a\r\n\r\n").as_bytes());
        c.wait_ms(0.1);
        let mut resp = b"HTTP/1.1 200 OK\r\nContent-Length: 20000\r\n\r\n".to_vec();
        resp.extend(vec![0x47u8; 20_000]);
        send_acked(&mut c, &resp, 20.0);
        c.wait_ms(500.0);
    }
    let a = analyze_bytes(&c.pcap(), &opts1()).unwrap();
    assert_eq!(a.http.len(), 3);
    assert_eq!(a.flows[0].channel.as_deref(), Some("hls/ch9"));
    for h in &a.http {
        assert_eq!(h.response_bytes, 20_000);
        // 15 segments in two windows: on period ≈ one RTT + sending time.
        let on = h.on_period_ns.unwrap();
        assert!(on > 20_000_000 && on < 25_000_000, "{on}");
    }
    let h = &a.summary().0["http"];
    assert_eq!(h["transactions"], 3);
    let off = h["off_period_median_s"].as_f64().unwrap();
    // last byte sent → its ACK one RTT (20 ms) later, 0.5 ms, the 500 ms pause, the request.
    assert!((0.5205..0.5207).contains(&off), "{off}");
    // The 500 ms pauses between segments are resource-constraint stalls (off periods).
    assert!(a.stalls.iter().filter(|s| s.kind == StallKind::ResourceConstraint).count() >= 2);
}

fn amf_str(s: &str) -> Vec<u8> {
    let mut v = vec![2];
    v.extend_from_slice(&(s.len() as u16).to_be_bytes());
    v.extend_from_slice(s.as_bytes());
    v
}
fn amf_num(x: f64) -> Vec<u8> {
    let mut v = vec![0];
    v.extend_from_slice(&x.to_be_bytes());
    v
}

/// RTMP message split into chunks (fmt 0 then fmt 3) with the given chunk size.
fn rtmp_msg(csid: u8, mtype: u8, payload: &[u8], chunk: usize) -> Vec<u8> {
    let mut v = vec![csid];
    v.extend_from_slice(&[0, 0, 0]);
    v.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
    v.push(mtype);
    v.extend_from_slice(&1u32.to_le_bytes());
    for (i, c) in payload.chunks(chunk).enumerate() {
        if i > 0 {
            v.push(0xC0 | csid);
        }
        v.extend_from_slice(c);
    }
    v
}

/// A publisher's upload: handshake, connect(app=live), publish(ch1), then frames with pauses.
fn rtmp_publisher(c: &mut Conn, stall_at_ms: &[f64]) {
    let mut c0c1 = vec![3u8];
    c0c1.extend(vec![0u8; 1536]);
    c.client_send_bytes(&c0c1[..MSS]);
    c.client_send_bytes(&c0c1[MSS..]);
    c.wait_ms(0.1);
    let mut s = vec![3u8];
    s.extend(vec![0u8; 3072]);
    for p in s.chunks(MSS) {
        c.server_send_bytes(p);
    }
    c.wait_ms(40.0);
    c.client_send_bytes(&vec![0u8; 1536]);
    let mut connect = amf_str("connect");
    connect.extend(amf_num(1.0));
    connect.push(3);
    connect.extend_from_slice(&3u16.to_be_bytes());
    connect.extend_from_slice(b"app");
    connect.extend(amf_str("live"));
    connect.extend_from_slice(&[0, 0, 9]);
    let mut m = rtmp_msg(3, 20, &connect, 128);
    // Set Chunk Size 4096 from the client.
    m.extend(rtmp_msg(2, 1, &4096u32.to_be_bytes(), 128));
    let mut publish = amf_str("publish");
    publish.extend(amf_num(2.0));
    publish.push(5);
    publish.extend(amf_str("ch1?key=secret"));
    publish.extend(amf_str("live"));
    m.extend(rtmp_msg(3, 20, &publish, 4096));
    c.client_send_bytes(&m);
    let mut t = 0.0;
    let mut stalls = stall_at_ms.iter().peekable();
    for k in 0..40 {
        // Frame-type/codec byte, then AVCPacketType 1 (a coded picture).
        let mut frame = vec![if k % 10 == 0 { 0x17 } else { 0x27 }, 1];
        frame.extend(vec![0u8; if k % 10 == 0 { 12_000 } else { 2_000 }]);
        let msg = rtmp_msg(6, 9, &frame, 4096);
        for p in msg.chunks(MSS) {
            c.client_send_bytes(p);
        }
        c.client_send_bytes(&rtmp_msg(4, 8, &[0xaf; 150], 4096));
        let e = c.c_nxt;
        c.server_ack(e);
        let pause = if stalls.peek().is_some_and(|&&s| t >= s) {
            stalls.next();
            600.0
        } else {
            40.0
        };
        c.wait_ms(pause);
        t += pause;
    }
}

#[test]
fn rtmp_publish_gives_channel_and_frame_types() {
    let mut c = Conn::with(Link::Ethernet, false, 1935);
    c.handshake(40.0);
    rtmp_publisher(&mut c, &[]);
    let a = analyze_bytes(&c.pcap(), &opts1()).unwrap();
    let f = &a.flows[0];
    assert_eq!(f.app, "rtmp");
    assert_eq!(f.direction, "upload");
    assert_eq!(f.channel.as_deref(), Some("live/ch1"));
    assert_eq!(f.role.as_deref(), Some("publish"));
    let ft = |t: FrameType| a.frame_types.iter().find(|x| x.frame == t).unwrap().clone();
    assert_eq!(ft(FrameType::I).frames, 4);
    assert_eq!(ft(FrameType::P).frames, 36);
    assert_eq!(ft(FrameType::Audio).frames, 40);
    // I frames every 10 frames of ~40 ms: about 0.4 s apart.
    let iv = ft(FrameType::I).mean_interval_s.unwrap();
    assert!((0.39..0.42).contains(&iv), "{iv}");
}

#[test]
fn upload_stall_followed_by_download_stall_on_same_channel_is_paired() {
    // Publisher (upload, RTMP) stalls twice; a viewer (HTTP-FLV download) of the same channel
    // starves 0.3 s later each time; another viewer on another channel is not paired.
    let mut up = Conn::with(Link::Ethernet, false, 1935);
    up.handshake(40.0);
    rtmp_publisher(&mut up, &[300.0, 1500.0]);
    let up_stalls: Vec<u64> = {
        let a = analyze_bytes(&up.pcap(), &opts1()).unwrap();
        a.stalls.iter().map(|s| s.start_ns).collect()
    };
    assert_eq!(up_stalls.len(), 2);
    let viewer = |port: u16, path: &str, stall_starts: &[u64]| {
        let mut c = Conn::new();
        c.client.1 = port;
        c.handshake(30.0);
        c.client_send_bytes(format!("GET {path} HTTP/1.1\r\n\r\n").as_bytes());
        c.server_send_bytes(b"HTTP/1.1 200 OK\r\n\r\nFLV\x01\x05\x00\x00\x00\x09\x00\x00\x00\x00");
        let end_ns = up.now;
        while c.now < end_ns {
            c.server_burst(2, MSS);
            c.wait_ms(30.0);
            let e = c.s_nxt;
            c.client_ack(e);
            let gap = stall_starts.iter().any(|&s| c.now + 300_000_000 >= s && c.now < s + 300_000_000);
            c.wait_ms(if gap { 500.0 } else { 10.0 });
        }
        c
    };
    let v1 = viewer(41000, "/live/ch1.flv", &up_stalls);
    let v2 = viewer(42000, "/live/other.flv", &up_stalls);
    let mut frames = Vec::new();
    for (i, c) in [&up, &v1, &v2].iter().enumerate() {
        let b = c.pcap();
        let mut r = Reader::from_slice(&b).unwrap();
        while let Some(p) = r.next_packet().unwrap() {
            frames.push((p.ts_ns, i, p.data.to_vec()));
        }
    }
    frames.sort_by_key(|f| (f.0, f.1));
    let mut w = CaptureWriter::new(Link::Ethernet);
    for (t, _, d) in frames {
        w.frame(t, d);
    }
    let a: Analysis = analyze_bytes(&w.to_bytes(Container::PcapNanos), &opts1()).unwrap();
    assert_eq!(a.flows.len(), 3);
    assert_eq!(a.pairing.channels, 1);
    assert_eq!(a.pairing.upload_stalls, 2);
    assert_eq!(a.pairing.upload_stalls_causing, 2);
    assert_eq!(a.pairing.caused_kinds.get("resource_constraint"), Some(&2));
    // The other channel's viewer stalls too but is not paired.
    let other = a.flows.iter().find(|f| f.channel.as_deref() == Some("live/other")).unwrap();
    assert!(a.stalls.iter().filter(|s| s.flow_id == other.flow_id).all(|s| !s.paired));
    assert!(a.stalls.iter().any(|s| s.flow_id == other.flow_id));
}

#[test]
fn user_channel_map_overrides_parsed_key() {
    let mut c = Conn::new();
    c.handshake(20.0);
    c.client_send_bytes(b"GET /a/b/c.flv HTTP/1.1\r\n\r\n");
    let o = AnalyzeOptions { channel_map: vec![("/a/b".into(), "chan-7".into())], ..opts1() };
    let a = analyze_bytes(&c.pcap(), &o).unwrap();
    assert_eq!(a.flows[0].channel.as_deref(), Some("chan-7"));
    let o = AnalyzeOptions { channel_map: vec![("10.0.0.2:40000".into(), "by-endpoint".into())], ..opts1() };
    let a = analyze_bytes(&c.pcap(), &o).unwrap();
    assert_eq!(a.flows[0].channel.as_deref(), Some("by-endpoint"));
}

#[test]
fn snaplen_truncated_payloads_leave_frames_unknown_but_counts_exact() {
    let mut c = Conn::new();
    c.handshake(40.0);
    c.client_send_bytes(b"GET /live/x.flv HTTP/1.1\r\n\r\n");
    let mut body = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
    body.extend(flv_stream(3).0);
    send_acked(&mut c, &body, 40.0);
    c.w.snaplen = 96;
    let a = analyze_bytes(&c.w.to_bytes(Container::PcapMicros), &opts1()).unwrap();
    let f = &a.flows[0];
    assert_eq!(f.bytes_down, body.len() as u64);
    assert_eq!(f.data_packets, body.len().div_ceil(MSS) as u64);
    let i = a.frame_types.iter().find(|x| x.frame == FrameType::I).unwrap();
    assert_eq!(i.frames, 0);
}

#[test]
fn worker_threads_see_the_same_payloads() {
    let mut c = Conn::new();
    c.handshake(40.0);
    c.client_send_bytes(b"GET /live/x.flv HTTP/1.1\r\n\r\n");
    let mut body = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
    body.extend(flv_stream(6).0);
    send_acked(&mut c, &body, 40.0);
    let b = c.pcap();
    let a1 = analyze_bytes(&b, &opts1()).unwrap();
    let a2 = analyze_bytes(&b, &AnalyzeOptions { threads: 2, ..Default::default() }).unwrap();
    let j = |a: &Analysis| serde_json::to_string(&a.frame_types).unwrap();
    assert_eq!(j(&a1), j(&a2));
    assert_eq!(a1.frame_types.iter().find(|x| x.frame == FrameType::P).unwrap().frames, 6);
}

#[test]
fn snaplen_at_the_tcp_header_leaves_no_payload_and_no_panic() {
    // Regression (found by the capture engineer's fuzzer): payload on the wire, none captured.
    let mut c = Conn::new();
    c.handshake(10.0);
    c.client_send_bytes(b"GET /live/x.flv HTTP/1.1\r\n\r\n");
    send_acked(&mut c, &[7u8; 5000], 10.0);
    c.w.snaplen = 54; // Ethernet + IPv4 + TCP without options
    let a = analyze_bytes(&c.w.to_bytes(Container::PcapMicros), &opts1()).unwrap();
    assert_eq!(a.flows[0].bytes_down, 5000);
    assert_eq!(a.flows[0].app, "");
}
