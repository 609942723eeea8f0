//! Test-capture builder: writes pcap (µs or ns, either byte order) or pcapng files from
//! hand-built TCP packet sequences, so each stall class and each timeout-retransmission type
//! can be pinned by a test with exact timestamps.
//!
//! The vantage point is the server, as in seed 000: a packet "from the client" is stamped when
//! it arrives at the server, a packet "from the server" when it leaves. [`Conn`] keeps both
//! sides' sequence numbers, so tests speak in stream offsets (`server_send(1448)`,
//! `client_ack(2896)`), in the smoltcp spirit of one-line segment builders. Frames are real
//! Ethernet/IPv4 (or IPv6, VLAN, Linux SLL/SLL2, raw IP) with correct IP and TCP checksums, so
//! Wireshark and tshark read the files too.

use crate::decode::flags;

/// Link layer of the frames written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    Ethernet,
    EthernetVlan(u16),
    /// Ethernet, an optional 802.1Q tag, then an MPLS label stack of this many labels (RFC 3032)
    /// in front of the IP packet, as a carrier backbone or a span port on one delivers it.
    EthernetMpls {
        vlan: Option<u16>,
        labels: u8,
    },
    Sll,
    Sll2,
    Raw,
}

impl Link {
    pub fn linktype(self) -> u32 {
        match self {
            Link::Ethernet | Link::EthernetVlan(_) | Link::EthernetMpls { .. } => 1,
            Link::Sll => 113,
            Link::Sll2 => 276,
            Link::Raw => 101,
        }
    }
}

/// Output container.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Container {
    PcapMicros,
    PcapNanos,
    PcapMicrosBigEndian,
    Pcapng,
}

/// Collects frames and writes them as one capture file.
#[derive(Clone, Debug)]
pub struct CaptureWriter {
    pub link: Link,
    pub snaplen: u32,
    frames: Vec<(u64, Vec<u8>)>,
}

impl CaptureWriter {
    pub fn new(link: Link) -> Self {
        CaptureWriter { link, snaplen: 262_144, frames: Vec::new() }
    }

    /// Add a frame (already including its link header) captured at `ts_ns`.
    pub fn frame(&mut self, ts_ns: u64, data: Vec<u8>) {
        self.frames.push((ts_ns, data));
    }

    pub fn len(&self) -> usize {
        self.frames.len()
    }
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Every frame captured `copies` times, the copies `gap_ns` apart (a span port or a merge of
    /// overlapping captures: byte-identical frames microseconds apart).
    pub fn with_duplicates(&self, copies: usize, gap_ns: u64) -> CaptureWriter {
        let mut w = CaptureWriter { link: self.link, snaplen: self.snaplen, frames: Vec::new() };
        for (ts, d) in &self.frames {
            for k in 0..copies.max(1) {
                w.frames.push((ts + k as u64 * gap_ns, d.clone()));
            }
        }
        w
    }

    /// Serialise in the given container (frames in insertion order, cut to `snaplen`).
    pub fn to_bytes(&self, c: Container) -> Vec<u8> {
        let mut out = Vec::new();
        match c {
            Container::PcapMicros | Container::PcapNanos | Container::PcapMicrosBigEndian => {
                let be = c == Container::PcapMicrosBigEndian;
                let w32 = |o: &mut Vec<u8>, v: u32| o.extend_from_slice(&if be { v.to_be_bytes() } else { v.to_le_bytes() });
                let w16 = |o: &mut Vec<u8>, v: u16| o.extend_from_slice(&if be { v.to_be_bytes() } else { v.to_le_bytes() });
                let nanos = c == Container::PcapNanos;
                w32(&mut out, if nanos { 0xA1B23C4D } else { 0xA1B2C3D4 });
                w16(&mut out, 2);
                w16(&mut out, 4);
                w32(&mut out, 0);
                w32(&mut out, 0);
                w32(&mut out, self.snaplen);
                w32(&mut out, self.link.linktype());
                for (ts, d) in &self.frames {
                    let cap = d.len().min(self.snaplen as usize);
                    w32(&mut out, (ts / 1_000_000_000) as u32);
                    w32(&mut out, if nanos { (ts % 1_000_000_000) as u32 } else { (ts % 1_000_000_000 / 1000) as u32 });
                    w32(&mut out, cap as u32);
                    w32(&mut out, d.len() as u32);
                    out.extend_from_slice(&d[..cap]);
                }
            }
            Container::Pcapng => {
                let block = |o: &mut Vec<u8>, t: u32, body: &[u8]| {
                    let pad = (4 - body.len() % 4) % 4;
                    let len = (12 + body.len() + pad) as u32;
                    o.extend_from_slice(&t.to_le_bytes());
                    o.extend_from_slice(&len.to_le_bytes());
                    o.extend_from_slice(body);
                    o.extend(std::iter::repeat_n(0, pad));
                    o.extend_from_slice(&len.to_le_bytes());
                };
                let mut shb = Vec::new();
                shb.extend_from_slice(&0x1A2B3C4Du32.to_le_bytes());
                shb.extend_from_slice(&1u16.to_le_bytes());
                shb.extend_from_slice(&0u16.to_le_bytes());
                shb.extend_from_slice(&(-1i64).to_le_bytes());
                block(&mut out, 0x0A0D0D0A, &shb);
                // IDB with if_tsresol = 9 (nanoseconds).
                let mut idb = Vec::new();
                idb.extend_from_slice(&(self.link.linktype() as u16).to_le_bytes());
                idb.extend_from_slice(&0u16.to_le_bytes());
                idb.extend_from_slice(&self.snaplen.to_le_bytes());
                idb.extend_from_slice(&9u16.to_le_bytes());
                idb.extend_from_slice(&1u16.to_le_bytes());
                idb.extend_from_slice(&[9, 0, 0, 0]);
                idb.extend_from_slice(&[0, 0, 0, 0]);
                block(&mut out, 1, &idb);
                for (ts, d) in &self.frames {
                    let cap = d.len().min(self.snaplen as usize);
                    let mut epb = Vec::new();
                    epb.extend_from_slice(&0u32.to_le_bytes());
                    epb.extend_from_slice(&((ts >> 32) as u32).to_le_bytes());
                    epb.extend_from_slice(&(*ts as u32).to_le_bytes());
                    epb.extend_from_slice(&(cap as u32).to_le_bytes());
                    epb.extend_from_slice(&(d.len() as u32).to_le_bytes());
                    epb.extend_from_slice(&d[..cap]);
                    block(&mut out, 6, &epb);
                }
            }
        }
        out
    }
}

fn csum_add(mut sum: u32, b: &[u8]) -> u32 {
    let mut i = 0;
    while i + 1 < b.len() {
        sum += u16::from_be_bytes([b[i], b[i + 1]]) as u32;
        i += 2;
    }
    if i < b.len() {
        sum += (b[i] as u32) << 8;
    }
    sum
}
fn csum_fold(mut sum: u32) -> u16 {
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// A TCP segment to build.
#[derive(Clone, Debug, Default)]
pub struct Seg {
    pub from_server: bool,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub window: u16,
    pub mss: Option<u16>,
    pub wscale: Option<u8>,
    pub sack_perm: bool,
    pub ts: Option<(u32, u32)>,
    pub sack: Vec<(u32, u32)>,
    pub payload: Vec<u8>,
}

/// One TCP connection seen at the server.
#[derive(Clone, Debug)]
pub struct Conn {
    pub client: (u128, u16),
    pub server: (u128, u16),
    pub v6: bool,
    pub c_isn: u32,
    pub s_isn: u32,
    /// Next client / server stream offsets (highest sent).
    pub c_nxt: u64,
    pub s_nxt: u64,
    /// What the server last acknowledged of client data / client of server data.
    pub s_acked: u64,
    pub c_acked: u64,
    pub now: u64,
    pub timestamps: bool,
    pub client_window: u16,
    pub server_window: u16,
    tsval: u32,
    /// IPv4 identification of the next frame: incremented per frame as Linux does per socket,
    /// so a retransmission differs from its original while a captured duplicate does not.
    ip_id: u16,
    pub w: CaptureWriter,
}

impl Conn {
    /// A connection 10.0.0.2:40000 → 10.0.0.1:80 over Ethernet, starting at t = 1 s.
    pub fn new() -> Conn {
        Conn::with(Link::Ethernet, false, 80)
    }

    pub fn with(link: Link, v6: bool, server_port: u16) -> Conn {
        let (c, s) = if v6 {
            (0x2001_0db8_0000_0000_0000_0000_0000_0002u128, 0x2001_0db8_0000_0000_0000_0000_0000_0001u128)
        } else {
            (0xffff_0a00_0002u128, 0xffff_0a00_0001u128)
        };
        Conn {
            client: (c, 40000),
            server: (s, server_port),
            v6,
            c_isn: 0xfffff000, // wraps soon: exercises sequence unwrapping
            s_isn: 1_000_000,
            c_nxt: 0,
            s_nxt: 0,
            s_acked: 0,
            c_acked: 0,
            now: 1_000_000_000,
            timestamps: false,
            client_window: 65535,
            server_window: 65535,
            tsval: 1000,
            ip_id: 1,
            w: CaptureWriter::new(link),
        }
    }

    /// Move the clock forward.
    pub fn wait_ms(&mut self, ms: f64) -> &mut Self {
        self.now += (ms * 1e6) as u64;
        self
    }
    pub fn wait_ns(&mut self, ns: u64) -> &mut Self {
        self.now += ns;
        self
    }

    /// Write one segment at the current time.
    pub fn emit(&mut self, mut s: Seg) -> &mut Self {
        if self.timestamps && s.ts.is_none() {
            self.tsval = self.tsval.wrapping_add(1);
            s.ts = Some((self.tsval, 0));
        }
        let frame = self.frame(&s);
        self.w.frame(self.now, frame);
        self.ip_id = self.ip_id.wrapping_add(1);
        self
    }

    /// Three-way handshake seen at the server: SYN, SYN+ACK right away, the client's ACK one
    /// RTT later.
    pub fn handshake(&mut self, rtt_ms: f64) -> &mut Self {
        self.handshake_split(0.0, rtt_ms)
    }

    /// Three-way handshake seen from anywhere on the path: the SYN+ACK `syn_to_synack_ms` after
    /// the SYN (twice the capture point's distance to the server), the ACK `synack_to_ack_ms`
    /// after it (twice its distance to the client). At the server (0, RTT); at the client
    /// (RTT, ~0); mid-path both are positive and add up to the RTT.
    pub fn handshake_split(&mut self, syn_to_synack_ms: f64, synack_to_ack_ms: f64) -> &mut Self {
        self.client_syn();
        self.wait_ms(syn_to_synack_ms);
        self.server_synack();
        self.wait_ms(synack_to_ack_ms);
        self.emit(Seg {
            seq: self.c_isn.wrapping_add(1),
            ack: self.s_isn.wrapping_add(1),
            flags: flags::ACK,
            window: self.client_window,
            ..Default::default()
        })
    }

    /// The client's SYN (sent again on a SYN timeout).
    pub fn client_syn(&mut self) -> &mut Self {
        let sp = self.timestamps;
        self.emit(Seg {
            seq: self.c_isn,
            flags: flags::SYN,
            window: 65535,
            mss: Some(1460),
            wscale: Some(0),
            sack_perm: true,
            ts: sp.then_some((1, 0)),
            ..Default::default()
        })
    }

    /// The server's SYN+ACK (sent again when it is lost).
    pub fn server_synack(&mut self) -> &mut Self {
        let sp = self.timestamps;
        self.emit(Seg {
            from_server: true,
            seq: self.s_isn,
            ack: self.c_isn.wrapping_add(1),
            flags: flags::SYN | flags::ACK,
            window: 65535,
            mss: Some(1460),
            wscale: Some(0),
            sack_perm: true,
            ts: sp.then_some((1, 1)),
            ..Default::default()
        })
    }

    /// The client's ACK of the SYN+ACK, completing the handshake.
    pub fn client_handshake_ack(&mut self) -> &mut Self {
        self.emit(Seg {
            seq: self.c_isn.wrapping_add(1),
            ack: self.s_isn.wrapping_add(1),
            flags: flags::ACK,
            window: self.client_window,
            ..Default::default()
        })
    }

    /// The server refuses the connection: RST+ACK to the SYN.
    pub fn server_refuse(&mut self) -> &mut Self {
        self.emit(Seg { from_server: true, seq: 0, ack: self.c_isn.wrapping_add(1), flags: flags::RST | flags::ACK, ..Default::default() })
    }

    fn sseq(&self, off: u64) -> u32 {
        self.s_isn.wrapping_add(1).wrapping_add(off as u32)
    }
    fn cseq(&self, off: u64) -> u32 {
        self.c_isn.wrapping_add(1).wrapping_add(off as u32)
    }

    /// Server sends `len` new bytes (zeros).
    pub fn server_send(&mut self, len: usize) -> &mut Self {
        self.server_send_bytes(&vec![0u8; len])
    }

    /// Server sends these new bytes.
    pub fn server_send_bytes(&mut self, data: &[u8]) -> &mut Self {
        let off = self.s_nxt;
        self.s_nxt += data.len() as u64;
        self.emit(Seg {
            from_server: true,
            seq: self.sseq(off),
            ack: self.cseq(self.s_acked),
            flags: flags::ACK | flags::PSH,
            window: self.server_window,
            payload: data.to_vec(),
            ..Default::default()
        })
    }

    /// Server sends `n` full segments of `mss` bytes back to back (1 µs apart).
    pub fn server_burst(&mut self, n: usize, mss: usize) -> &mut Self {
        for i in 0..n {
            if i > 0 {
                self.wait_ns(1000);
            }
            self.server_send(mss);
        }
        self
    }

    /// Server (re)sends bytes [off, off+len) — a retransmission when off < s_nxt.
    pub fn server_resend(&mut self, off: u64, len: usize) -> &mut Self {
        self.s_nxt = self.s_nxt.max(off + len as u64);
        self.emit(Seg {
            from_server: true,
            seq: self.sseq(off),
            ack: self.cseq(self.s_acked),
            flags: flags::ACK,
            window: self.server_window,
            payload: vec![0u8; len],
            ..Default::default()
        })
    }

    /// Client acknowledges server data up to stream offset `off`.
    pub fn client_ack(&mut self, off: u64) -> &mut Self {
        self.c_acked = off;
        self.emit(Seg {
            seq: self.cseq(self.c_nxt),
            ack: self.sseq(off),
            flags: flags::ACK,
            window: self.client_window,
            ..Default::default()
        })
    }

    /// Client ACK with SACK blocks (stream offsets, [start, end)).
    pub fn client_ack_sack(&mut self, off: u64, blocks: &[(u64, u64)]) -> &mut Self {
        self.c_acked = off;
        let sack = blocks.iter().map(|&(s, e)| (self.sseq(s), self.sseq(e))).collect();
        self.emit(Seg {
            seq: self.cseq(self.c_nxt),
            ack: self.sseq(off),
            flags: flags::ACK,
            window: self.client_window,
            sack,
            ..Default::default()
        })
    }

    /// Client ACK with an explicit timestamp echo (for Eifel tests).
    pub fn client_ack_ts(&mut self, off: u64, tsval: u32, tsecr: u32) -> &mut Self {
        self.c_acked = off;
        self.emit(Seg {
            seq: self.cseq(self.c_nxt),
            ack: self.sseq(off),
            flags: flags::ACK,
            window: self.client_window,
            ts: Some((tsval, tsecr)),
            ..Default::default()
        })
    }

    /// Server segment with an explicit TSval.
    pub fn server_resend_ts(&mut self, off: u64, len: usize, tsval: u32) -> &mut Self {
        self.s_nxt = self.s_nxt.max(off + len as u64);
        self.emit(Seg {
            from_server: true,
            seq: self.sseq(off),
            ack: self.cseq(self.s_acked),
            flags: flags::ACK,
            window: self.server_window,
            payload: vec![0u8; len],
            ts: Some((tsval, 0)),
            ..Default::default()
        })
    }
    pub fn server_send_ts(&mut self, len: usize, tsval: u32) -> &mut Self {
        let off = self.s_nxt;
        self.s_nxt += len as u64;
        self.emit(Seg {
            from_server: true,
            seq: self.sseq(off),
            ack: self.cseq(self.s_acked),
            flags: flags::ACK,
            window: self.server_window,
            payload: vec![0u8; len],
            ts: Some((tsval, 0)),
            ..Default::default()
        })
    }

    /// Client sends `len` new bytes (upload).
    pub fn client_send(&mut self, len: usize) -> &mut Self {
        self.client_send_bytes(&vec![0u8; len])
    }
    pub fn client_send_bytes(&mut self, data: &[u8]) -> &mut Self {
        let off = self.c_nxt;
        self.c_nxt += data.len() as u64;
        self.emit(Seg {
            seq: self.cseq(off),
            ack: self.sseq(self.c_acked),
            flags: flags::ACK | flags::PSH,
            window: self.client_window,
            payload: data.to_vec(),
            ..Default::default()
        })
    }
    /// Client sends bytes [off, off+len) (out of order or again).
    pub fn client_send_at(&mut self, off: u64, len: usize) -> &mut Self {
        self.c_nxt = self.c_nxt.max(off + len as u64);
        self.emit(Seg {
            seq: self.cseq(off),
            ack: self.sseq(self.c_acked),
            flags: flags::ACK,
            window: self.client_window,
            payload: vec![0u8; len],
            ..Default::default()
        })
    }

    /// Server acknowledges client data up to `off`.
    pub fn server_ack(&mut self, off: u64) -> &mut Self {
        self.s_acked = off;
        self.emit(Seg {
            from_server: true,
            seq: self.sseq(self.s_nxt),
            ack: self.cseq(off),
            flags: flags::ACK,
            window: self.server_window,
            ..Default::default()
        })
    }

    /// Server TCP keep-alive probe (SEG.SEQ = SND.NXT − 1, no data).
    pub fn server_keepalive(&mut self) -> &mut Self {
        let s = self.sseq(self.s_nxt).wrapping_sub(1);
        self.emit(Seg {
            from_server: true,
            seq: s,
            ack: self.cseq(self.s_acked),
            flags: flags::ACK,
            window: self.server_window,
            ..Default::default()
        })
    }

    /// Client advertises `win` (a window update; 0 closes the window).
    pub fn client_window_update(&mut self, win: u16) -> &mut Self {
        self.client_window = win;
        let a = self.c_acked;
        self.client_ack(a)
    }

    pub fn server_fin(&mut self) -> &mut Self {
        self.emit(Seg {
            from_server: true,
            seq: self.sseq(self.s_nxt),
            ack: self.cseq(self.s_acked),
            flags: flags::ACK | flags::FIN,
            window: self.server_window,
            ..Default::default()
        })
    }
    pub fn client_fin(&mut self) -> &mut Self {
        self.emit(Seg {
            seq: self.cseq(self.c_nxt),
            ack: self.sseq(self.c_acked),
            flags: flags::ACK | flags::FIN,
            window: self.client_window,
            ..Default::default()
        })
    }
    /// Client RST+ACK with window 0 (what Linux sends when it aborts a connection).
    pub fn client_rst_ack(&mut self) -> &mut Self {
        self.emit(Seg {
            seq: self.cseq(self.c_nxt),
            ack: self.sseq(self.c_acked),
            flags: flags::RST | flags::ACK,
            window: 0,
            ..Default::default()
        })
    }
    pub fn client_rst(&mut self) -> &mut Self {
        self.emit(Seg { seq: self.cseq(self.c_nxt), ack: 0, flags: flags::RST, ..Default::default() })
    }

    /// The capture as pcap (µs).
    pub fn pcap(&self) -> Vec<u8> {
        self.w.to_bytes(Container::PcapMicros)
    }

    /// Build the link-layer frame of a segment.
    pub fn frame(&self, s: &Seg) -> Vec<u8> {
        let (src, dst) = if s.from_server { (self.server, self.client) } else { (self.client, self.server) };
        let mut tcp = Vec::with_capacity(60 + s.payload.len());
        tcp.extend_from_slice(&src.1.to_be_bytes());
        tcp.extend_from_slice(&dst.1.to_be_bytes());
        tcp.extend_from_slice(&s.seq.to_be_bytes());
        tcp.extend_from_slice(&s.ack.to_be_bytes());
        tcp.extend_from_slice(&[0, s.flags]);
        tcp.extend_from_slice(&s.window.to_be_bytes());
        tcp.extend_from_slice(&[0, 0, 0, 0]);
        let mut o = Vec::new();
        if let Some(m) = s.mss {
            o.extend_from_slice(&[2, 4]);
            o.extend_from_slice(&m.to_be_bytes());
        }
        if s.sack_perm {
            o.extend_from_slice(&[4, 2]);
        }
        if let Some((v, e)) = s.ts {
            o.extend_from_slice(&[1, 1, 8, 10]);
            o.extend_from_slice(&v.to_be_bytes());
            o.extend_from_slice(&e.to_be_bytes());
        }
        if let Some(w) = s.wscale {
            o.extend_from_slice(&[1, 3, 3, w]);
        }
        if !s.sack.is_empty() {
            o.extend_from_slice(&[1, 1, 5, 2 + 8 * s.sack.len() as u8]);
            for (a, b) in &s.sack {
                o.extend_from_slice(&a.to_be_bytes());
                o.extend_from_slice(&b.to_be_bytes());
            }
        }
        while o.len() % 4 != 0 {
            o.push(0);
        }
        tcp.extend_from_slice(&o);
        tcp[12] = (((20 + o.len()) / 4) << 4) as u8;
        tcp.extend_from_slice(&s.payload);
        let mut ip = Vec::new();
        if self.v6 {
            ip.extend_from_slice(&[0x60, 0, 0, 0]);
            ip.extend_from_slice(&(tcp.len() as u16).to_be_bytes());
            ip.extend_from_slice(&[6, 64]);
            ip.extend_from_slice(&src.0.to_be_bytes());
            ip.extend_from_slice(&dst.0.to_be_bytes());
            let mut sum = csum_add(0, &ip[8..40]);
            sum += tcp.len() as u32 + 6;
            let c = csum_fold(csum_add(sum, &tcp));
            tcp[16..18].copy_from_slice(&c.to_be_bytes());
        } else {
            let total = (20 + tcp.len()) as u16;
            ip.extend_from_slice(&[0x45, 0]);
            ip.extend_from_slice(&total.to_be_bytes());
            ip.extend_from_slice(&self.ip_id.to_be_bytes());
            ip.extend_from_slice(&[0x40, 0, 64, 6, 0, 0]);
            ip.extend_from_slice(&(src.0 as u32).to_be_bytes());
            ip.extend_from_slice(&(dst.0 as u32).to_be_bytes());
            let c = csum_fold(csum_add(0, &ip));
            ip[10..12].copy_from_slice(&c.to_be_bytes());
            let mut sum = csum_add(0, &ip[12..20]);
            sum += tcp.len() as u32 + 6;
            let c = csum_fold(csum_add(sum, &tcp));
            tcp[16..18].copy_from_slice(&c.to_be_bytes());
        }
        ip.extend_from_slice(&tcp);
        let et: u16 = if self.v6 { 0x86dd } else { 0x0800 };
        let mut f = Vec::with_capacity(ip.len() + 24);
        match self.w.link {
            Link::Ethernet | Link::EthernetVlan(_) | Link::EthernetMpls { .. } => {
                let (sm, dm) =
                    if s.from_server { ([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]) } else { ([2, 0, 0, 0, 0, 2], [2, 0, 0, 0, 0, 1]) };
                f.extend_from_slice(&dm);
                f.extend_from_slice(&sm);
                let vlan = match self.w.link {
                    Link::EthernetVlan(v) => Some(v),
                    Link::EthernetMpls { vlan, .. } => vlan,
                    _ => None,
                };
                if let Some(v) = vlan {
                    f.extend_from_slice(&0x8100u16.to_be_bytes());
                    f.extend_from_slice(&v.to_be_bytes());
                }
                if let Link::EthernetMpls { labels, .. } = self.w.link {
                    // MPLS unicast ethertype, then 32-bit entries: label 20 bits, TC 3, S 1, TTL 8.
                    f.extend_from_slice(&0x8847u16.to_be_bytes());
                    for k in 0..labels.max(1) {
                        let bottom = (k + 1 == labels.max(1)) as u32;
                        let entry = ((100 + k as u32) << 12) | (bottom << 8) | 64;
                        f.extend_from_slice(&entry.to_be_bytes());
                    }
                } else {
                    f.extend_from_slice(&et.to_be_bytes());
                }
            }
            Link::Sll => {
                f.extend_from_slice(&(if s.from_server { 4u16 } else { 0u16 }).to_be_bytes());
                f.extend_from_slice(&1u16.to_be_bytes());
                f.extend_from_slice(&6u16.to_be_bytes());
                f.extend_from_slice(&[2, 0, 0, 0, 0, 1, 0, 0]);
                f.extend_from_slice(&et.to_be_bytes());
            }
            Link::Sll2 => {
                f.extend_from_slice(&et.to_be_bytes());
                f.extend_from_slice(&[0, 0]);
                f.extend_from_slice(&2u32.to_be_bytes());
                f.extend_from_slice(&1u16.to_be_bytes());
                f.push(if s.from_server { 4 } else { 0 });
                f.push(6);
                f.extend_from_slice(&[2, 0, 0, 0, 0, 1, 0, 0]);
            }
            Link::Raw => {}
        }
        f.extend_from_slice(&ip);
        f
    }
}

impl Default for Conn {
    fn default() -> Self {
        Conn::new()
    }
}
