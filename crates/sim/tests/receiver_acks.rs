//! End-to-end check of the receiver's ACK rate once its advertised window has grown to the whole
//! receive buffer (a regression test for stretch ACKs found by the cc-fidelity review).
//!
//! A Linux receiver whose application keeps up ACKs at least every second full-sized segment for
//! the whole connection (RFC 1122 §4.2.3.2, RFC 5681 §4.2; Linux `__tcp_ack_snd_check`, and
//! `tcp_cleanup_rbuf` when the input path held the ACK back). The simulator used to stop doing so
//! once `rcv_ssthresh` reached the buffer and one ACK had advertised the window of an empty
//! buffer (a delayed ACK, or a window update after a hole fill): from then on the window computed
//! with the new segment still unread was smaller than the one advertised, so the "window would
//! not shrink" clause held every ACK back, the read did not send it either, and only the
//! delayed-ACK timer ACKed — one stretch ACK per timeout, dozens of segments each.
//!
//! Scenario: one bulk CUBIC flow over 20 Mbit/s with a 40 ms RTT and a 400 KiB receive buffer
//! (its window, Linux's share of a fixed buffer — 160/256 of it, 250 KiB — is more than the 100 kB
//! BDP plus the queue, so the window grows to the buffer's share within the first second); the
//! 50-packet bottleneck queue makes CUBIC lose packets now and then, and the recoveries produce
//! the empty-buffer ACKs that used to start the stretch-ACK mode. The client-side capture of the
//! bottleneck link is read back (classic pcap, Ethernet/IPv4/TCP as crates/sim/src/pcap.rs writes
//! it) and every ACK after the window has reached the buffer is checked.

mod common;

use std::path::Path;

use common::out_dir;

use tcpvideo_sim::scenario::load_toml;
use tcpvideo_sim::sim::run_scenario;

const RCV_BUF: u64 = 400 * 1024;
/// The window a fixed buffer allows: Linux's scaling ratio on a 1500-byte path, 160/256
/// (crates/sim/src/tcp/recv.rs `Receiver::for_config`).
const WINDOW: u64 = RCV_BUF * 160 / 256;
/// Payload of a full segment: MSS 1460 minus the 12-byte timestamp option.
const SEG: u64 = 1448;

fn scenario() -> String {
    common::Path {
        rate: "20Mbps",
        queue: 50,
        wan_extra: "",
        flow: r#"tcp = { cc = "cubic", rcv_buf = "400KiB" }"#,
        pcap_at: ("wan", "client"),
        record_extra: "",
    }
    .toml()
}

/// The TCP fields of one captured frame that the check needs.
struct Seg {
    from_client: bool,
    syn: bool,
    payload: u64,
    ack: u32,
    window: u16,
    wscale: Option<u8>,
    sack: bool,
}

/// Frames of a classic little-endian pcap with Ethernet/IPv4/TCP frames; the client is the
/// endpoint that sends the SYN.
fn read_pcap(path: &Path) -> Vec<Seg> {
    let b = std::fs::read(path).expect("pcap");
    let u16be = |i: usize| u16::from_be_bytes([b[i], b[i + 1]]);
    let u32le = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    assert_eq!(u32le(20), 1, "LINKTYPE_ETHERNET");
    let mut out = Vec::new();
    let mut client_ip: Option<[u8; 4]> = None;
    let mut off = 24;
    while off + 16 <= b.len() {
        let incl = u32le(off + 8) as usize;
        let f = off + 16;
        off = f + incl;
        assert_eq!(u16be(f + 12), 0x0800, "IPv4");
        let ip = f + 14;
        let ihl = (b[ip] & 0x0f) as usize * 4;
        let total = u16be(ip + 2) as usize;
        let src = [b[ip + 12], b[ip + 13], b[ip + 14], b[ip + 15]];
        let tcp = ip + ihl;
        let doff = (b[tcp + 12] >> 4) as usize * 4;
        let fl = b[tcp + 13];
        let syn = fl & 0x02 != 0;
        if syn && fl & 0x10 == 0 {
            client_ip = Some(src);
        }
        let (mut wscale, mut sack) = (None, false);
        let mut o = tcp + 20;
        while o < tcp + doff {
            match b[o] {
                0 => break,
                1 => o += 1,
                kind => {
                    let len = (b[o + 1] as usize).max(2);
                    if kind == 3 {
                        wscale = Some(b[o + 2]);
                    }
                    sack |= kind == 5;
                    o += len;
                }
            }
        }
        out.push(Seg {
            from_client: Some(src) == client_ip,
            syn,
            payload: (total - ihl - doff) as u64,
            ack: u32::from_be_bytes([b[tcp + 8], b[tcp + 9], b[tcp + 10], b[tcp + 11]]),
            window: u16be(tcp + 14),
            wscale,
            sack,
        });
    }
    out
}

#[test]
fn receiver_acks_every_second_segment_after_the_window_reaches_the_buffer() {
    let d = out_dir("receiver_acks");
    let sc = load_toml(&scenario(), Some(1)).unwrap_or_else(|e| panic!("scenario: {e}"));
    let r = run_scenario(sc, Some(&d)).expect("run");
    let f = &r.flows[0];
    assert!(f.retrans_fast + f.retrans_timeout > 0, "the 50-packet queue makes CUBIC lose packets: {f:?}");
    let segs = read_pcap(&r.pcap_files[0]);
    let wscale = segs.iter().find(|s| s.syn && s.from_client).and_then(|s| s.wscale).expect("client SYN with window scale");

    // From the first ACK whose window is (nearly) the buffer's whole share — a receiver may keep
    // a few segments of it back, as Linux does — to the end of the run.
    let start = segs
        .iter()
        .position(|s| s.from_client && !s.syn && ((s.window as u64) << wscale) + 4 * SEG >= WINDOW)
        .expect("the advertised window reaches the buffer");
    let (mut data, mut acks, mut stretch) = (0u64, 0u64, Vec::new());
    let mut prev: Option<&Seg> = None;
    for (i, s) in segs.iter().enumerate().skip(start) {
        if !s.from_client {
            data += (s.payload >= SEG) as u64;
            continue;
        }
        if s.payload > 0 {
            continue;
        }
        acks += 1;
        if let Some(p) = prev {
            // An ACK after one with SACK blocks may cover a filled hole: many segments at once.
            let advance = s.ack.wrapping_sub(p.ack) as u64;
            if !p.sack && advance > 2 * SEG {
                stretch.push((i, advance));
            }
        }
        prev = Some(s);
    }
    assert!(data > 10_000, "the flow kept the link busy: {data} data segments after frame {start}");
    assert!(
        stretch.is_empty(),
        "{} of {acks} ACKs acknowledged more than two full segments of in-order data (frame, bytes): {:?}",
        stretch.len(),
        &stretch[..stretch.len().min(10)]
    );
    assert!(data <= 2 * acks + 2, "{acks} ACKs for {data} full-sized data segments (fewer than one per two)");
}
