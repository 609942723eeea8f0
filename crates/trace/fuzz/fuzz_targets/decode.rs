//! Fuzz target: the link/IP/TCP decoder alone (`decode::decode`), without pcap framing, so the
//! fuzzer spends its time in Ethernet/VLAN, Linux SLL/SLL2, raw IPv4/IPv6 (extension headers,
//! fragments) and TCP option parsing rather than in file headers. The first input byte picks
//! the link type; the rest is the captured frame.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tcpvideo_trace::decode;

const LINKTYPES: [u32; 8] = [
    decode::LINKTYPE_ETHERNET,
    decode::LINKTYPE_LINUX_SLL,
    decode::LINKTYPE_LINUX_SLL2,
    decode::LINKTYPE_RAW,
    decode::LINKTYPE_IPV4,
    decode::LINKTYPE_IPV6,
    decode::LINKTYPE_NULL,
    147, // a user link type: must be refused, not misread
];

fuzz_target!(|data: &[u8]| {
    let Some((&sel, frame)) = data.split_first() else { return };
    let lt = LINKTYPES[sel as usize % LINKTYPES.len()];
    if let Ok(t) = decode::decode(lt, frame) {
        assert!(t.payload.len() <= frame.len());
        assert!(t.payload.len() as u64 <= t.payload_len as u64);
        assert!(t.opts.n_sack <= 4);
        if !t.v6 {
            // IPv4 addresses are IPv4-mapped IPv6 (::ffff:a.b.c.d).
            assert_eq!(t.src >> 32, 0xffff);
            assert_eq!(t.dst >> 32, 0xffff);
        }
    }
});
