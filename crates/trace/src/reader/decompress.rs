//! Transparent decompression of captures stored as gzip (RFC 1952, `tcpdump -w - | gzip`) or
//! zstd (RFC 8878). Detected by magic bytes, not by file name, so `capture.pcap.gz` renamed to
//! `capture.pcap` still works. Decompression streams into the reader's reused buffer; the whole
//! capture is never held in memory. Multi-member gzip files (concatenated gzip streams, as
//! written by rotating tools) are read in full.

use std::io::{self, Read};

/// Which decompressor a file needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Zstd,
}

/// Detect compression from the first bytes of a file.
pub fn detect(magic: &[u8]) -> Compression {
    if magic.len() >= 2 && magic[0] == 0x1f && magic[1] == 0x8b {
        Compression::Gzip
    } else if magic.len() >= 4 && magic[..4] == [0x28, 0xb5, 0x2f, 0xfd] {
        Compression::Zstd
    } else {
        Compression::None
    }
}

/// Wrap a reader in the right decompressor.
pub fn wrap<'a, R: Read + Send + 'a>(c: Compression, r: R) -> io::Result<Box<dyn Read + Send + 'a>> {
    Ok(match c {
        Compression::None => Box::new(r),
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(io::BufReader::with_capacity(1 << 20, r))),
        Compression::Zstd => Box::new(zstd::stream::read::Decoder::new(r)?),
    })
}
