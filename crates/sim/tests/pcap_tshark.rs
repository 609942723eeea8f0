//! The pcap writer's frames, read back by tshark (Wireshark's dissectors are the reference for
//! "real headers"): no malformed packet, valid IPv4 and TCP checksums, every option decoded.
//! Skipped (with a message) when tshark is not installed.

use std::process::Command;

use tcpvideo_model::Time;
use tcpvideo_sim::packet::{flags, tests_support::packet, TcpOptions};
use tcpvideo_sim::pcap::{PcapWriter, TsResolution};

fn tshark() -> bool {
    Command::new("tshark").arg("-v").output().map(|o| o.status.success()).unwrap_or(false)
}

fn fields(path: &str, extra: &[&str], fields: &[&str]) -> String {
    let mut cmd = Command::new("tshark");
    cmd.args(["-n", "-r", path, "-o", "tcp.check_checksum:TRUE", "-o", "ip.check_checksum:TRUE", "-T", "fields"]);
    cmd.args(extra);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("tshark runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn synthetic(path: &str, res: TsResolution, snaplen: u32) {
    let f = std::fs::File::create(path).unwrap();
    let mut w = PcapWriter::new(std::io::BufWriter::new(f), snaplen, res).unwrap();
    let mut syn = packet(0, 1, 0);
    syn.flags = flags::SYN;
    syn.seq = 1000;
    syn.window = 64240;
    syn.options = TcpOptions { mss: Some(1460), window_scale: Some(7), sack_permitted: true, timestamps: Some((77, 0)), ..Default::default() };
    w.write(Time::from_millis(1), &syn).unwrap();
    let mut synack = packet(1, 0, 0);
    (synack.src_port, synack.dst_port) = (syn.dst_port, syn.src_port);
    synack.flags = flags::SYN | flags::ACK;
    synack.seq = 5000;
    synack.ack = 1001;
    synack.options = TcpOptions { mss: Some(1460), window_scale: Some(9), sack_permitted: true, timestamps: Some((88, 77)), ..Default::default() };
    w.write(Time::from_millis(51), &synack).unwrap();
    let mut data = packet(0, 1, 1448);
    data.seq = 1001;
    data.ack = 5001;
    data.options.timestamps = Some((127, 88));
    w.write(Time::from_millis(52), &data).unwrap();
    let mut sack = packet(1, 0, 0);
    (sack.src_port, sack.dst_port) = (syn.dst_port, syn.src_port);
    sack.seq = 5001;
    sack.ack = 1001;
    sack.options.timestamps = Some((140, 127));
    sack.options.sack_blocks[0] = (2449, 5345);
    sack.options.sack_blocks[1] = (6793, 8241);
    sack.options.sack_count = 2;
    w.write(Time::from_nanos(102_000_123), &sack).unwrap();
    w.flush().unwrap();
}

#[test]
fn tshark_decodes_synthetic_frames_without_malformed_packets() {
    if !tshark() {
        eprintln!("tshark not installed: skipped");
        return;
    }
    for (res, snap) in [(TsResolution::Micro, 262_144u32), (TsResolution::Nano, 96)] {
        let path = std::env::temp_dir().join(format!("tcpvideo_pcap_{:?}_{snap}.pcap", res));
        let path = path.to_str().unwrap();
        synthetic(path, res, snap);
        assert_eq!(fields(path, &["-Y", "_ws.malformed || _ws.expert.severity >= \"error\""], &["frame.number"]), "");
        let out = fields(path, &[], &["tcp.options.mss_val", "tcp.options.wscale.shift", "tcp.options.sack_perm", "tcp.options.timestamp.tsval", "tcp.options.sack_le", "tcp.len", "ip.checksum.status"]);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(lines[0].starts_with("1460\t7\t"), "{}", lines[0]);
        assert!(lines[0].contains("\t77\t"), "{}", lines[0]);
        assert!(lines[1].starts_with("1460\t9\t"), "{}", lines[1]);
        assert!(lines[2].contains("\t127\t\t1448\t"), "{}", lines[2]);
        assert!(lines[3].contains("1449,5793"), "relative SACK edges: {}", lines[3]);
        if snap > 2000 {
            // Full frames: tshark can verify the TCP checksum (1 = good).
            let cs = fields(path, &[], &["tcp.checksum.status"]);
            assert_eq!(cs.lines().collect::<Vec<_>>(), vec!["1"; 4]);
        }
        assert!(out.lines().all(|l| l.ends_with("\t1")), "IPv4 checksums good: {out}");
        let ts = fields(path, &[], &["frame.time_epoch"]);
        let last = ts.lines().last().unwrap();
        let expect = if res == TsResolution::Nano { "0.102000123" } else { "0.102000000" };
        assert!(last.contains(expect), "{last}");
    }
}
