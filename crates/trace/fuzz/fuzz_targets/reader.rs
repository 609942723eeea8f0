//! Fuzz target: the capture reader (pcap, pcapng, gzip/zstd framing) followed by the link/IP/TCP
//! decoder on every record it yields — the path every byte of an untrusted capture takes.
//!
//! Properties checked beyond "no panic, no hang, no unbounded memory" (trace_api.md: the
//! analyzer never panics on any input; damaged records are counted and skipped):
//! * a record's captured bytes never exceed its length on the wire's claim by being longer than
//!   the input itself, and the reader's byte counter never runs past what it was given
//!   (uncompressed inputs);
//! * a decoded TCP segment's captured payload is never longer than the payload length the IP
//!   header declares, and at most 4 SACK blocks come out of the options (RFC 2018: 40 option
//!   bytes hold at most 4 blocks).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tcpvideo_trace::decode;
use tcpvideo_trace::reader::Reader;

fuzz_target!(|data: &[u8]| {
    let Ok(mut r) = Reader::from_slice(data) else { return };
    let compressed = data.len() >= 2 && (data[..2] == [0x1f, 0x8b] || data.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]));
    // Bounded: a decompressed stream may be longer than the input, but not endless here.
    for _ in 0..100_000 {
        let p = match r.next_packet() {
            Ok(Some(p)) => p,
            Ok(None) | Err(_) => break,
        };
        if !compressed {
            assert!(p.data.len() <= data.len(), "record longer than the whole input");
        }
        if let Ok(t) = decode::decode(p.linktype, p.data) {
            assert!(t.payload.len() as u64 <= t.payload_len as u64, "captured payload > wire payload");
            assert!(t.opts.n_sack <= 4, "more than 4 SACK blocks");
        }
    }
    if !compressed {
        assert!(r.stats.bytes <= data.len() as u64, "read more bytes than given");
    }
});
