//! Capture readers: one streaming pass over a pcap or pcapng file, optionally gzip- or
//! zstd-compressed, yielding raw link-layer records without copying them.
//!
//! Why a hand-written reader: the analyzer's headline goal is speed (millions of records per
//! second, near the `cat` I/O floor), so records are parsed in place from one large reused
//! buffer filled by plain 4 MiB reads (uncompressed files, like `cat`; memory stays bounded for
//! captures of any size) or by the decompressor (gzip/zstd), or from a slice in memory; nothing
//! is allocated per record. Formats follow the pcap file format (draft-ietf-opsawg-pcap, both byte
//! orders, microsecond magic 0xA1B2C3D4 and nanosecond magic 0xA1B23C4D) and pcapng
//! (draft-ietf-opsawg-pcapng: SHB, IDB with if_tsresol/if_tsoffset, EPB, SPB, obsolete PB).
//!
//! Robustness: a record that is truncated, corrupt or of an unknown kind is counted in
//! [`ReadStats`], reported once as a [`Warning`], and skipped; the reader then resynchronises
//! (pcap: scans for the next plausible record header; pcapng: uses the block length) so the
//! analysis of everything else completes. Only an unreadable file header is a hard error.
//!
//! Fuzzing entry points: [`Reader::from_slice`] + [`Reader::next_packet`], and the pure record
//! parsers [`pcap::parse_record`] and [`pcapng::parse_block`].

pub mod decompress;
pub mod mapped;
pub mod pcap;
pub mod pcapng;

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use crate::TraceError;

/// One captured record, borrowed from the reader's buffer (valid until the next call).
#[derive(Clone, Copy, Debug)]
pub struct RawPacket<'a> {
    /// Capture timestamp, nanoseconds since the Unix epoch (or the file's epoch).
    pub ts_ns: u64,
    /// LINKTYPE_* value of the record's interface (1 Ethernet, 113 SLL, 276 SLL2, 101 raw ...).
    pub linktype: u32,
    /// Captured bytes (may be shorter than `orig_len` when a snaplen was set).
    pub data: &'a [u8],
    /// Length of the packet on the wire.
    pub orig_len: u32,
}

/// Counters of what the reader saw and skipped.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReadStats {
    pub records: u64,
    pub bytes: u64,
    pub truncated_records: u64,
    pub corrupt_records: u64,
    pub unknown_blocks: u64,
    pub resync_skipped_bytes: u64,
    /// Every byte of the input that was not delivered as (part of) a record because it was
    /// damaged: resynchronisation skips, truncated records, corrupt blocks. Zero for a healthy
    /// file; `--strict` makes any of it an error.
    pub skipped_bytes: u64,
    /// Bytes of well-formed pcapng blocks of a type this reader does not know (not damage).
    pub unknown_block_bytes: u64,
    /// Bytes of the records delivered (record headers, captured bytes, block padding).
    pub record_bytes: u64,
    /// File header and non-packet pcapng blocks (section/interface descriptions, statistics).
    /// The account balances: input size = meta + record + skipped + unknown-block bytes.
    pub meta_bytes: u64,
}

impl ReadStats {
    /// Whether anything was lost to damage.
    pub fn damaged(&self) -> bool {
        self.skipped_bytes > 0 || self.truncated_records > 0 || self.corrupt_records > 0
    }
}

/// A problem worth telling the user about (each kind reported once per file with a count).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Warning {
    pub file: String,
    pub offset: u64,
    pub message: String,
}

/// Bytes to parse: a borrowed slice, a memory map, or a decompressing stream read into one
/// large reused buffer.
pub(crate) enum Source<'a> {
    Slice {
        data: &'a [u8],
        pos: usize,
    },
    /// A plain file mapped into memory (`mapped`): parsed in place like a slice.
    Mapped {
        map: mapped::Mapping,
        pos: usize,
    },
    /// `base`: absolute input offset of `buf[0]`; `total`: input size when known.
    Stream {
        r: Box<dyn Read + Send + 'a>,
        buf: Vec<u8>,
        start: usize,
        end: usize,
        eof: bool,
        base: u64,
        total: Option<u64>,
    },
}

const STREAM_CHUNK: usize = 4 << 20;

impl<'a> Source<'a> {
    /// Up to `n` bytes from the current position (fewer only at end of input).
    #[inline]
    pub(crate) fn peek(&mut self, n: usize) -> io::Result<&[u8]> {
        match self {
            Source::Slice { data, pos } => {
                let end = (*pos + n).min(data.len());
                Ok(&data[*pos..end])
            }
            Source::Mapped { map, pos } => {
                map.consumed_up_to(*pos);
                let data = map.bytes();
                let end = (*pos + n).min(data.len());
                Ok(&data[*pos..end])
            }
            Source::Stream { r, buf, start, end, eof, base, .. } => {
                if *end - *start < n && !*eof {
                    // Compact, grow if one record is larger than the buffer, then fill.
                    if *start > 0 {
                        buf.copy_within(*start..*end, 0);
                        *end -= *start;
                        *base += *start as u64;
                        *start = 0;
                    }
                    let want = n.max(STREAM_CHUNK);
                    if buf.len() < want {
                        buf.resize(want, 0);
                    }
                    while *end < n && !*eof {
                        let got = loop {
                            match r.read(&mut buf[*end..]) {
                                Ok(g) => break g,
                                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                                Err(e) => return Err(e),
                            }
                        };
                        if got == 0 {
                            *eof = true;
                        }
                        *end += got;
                    }
                }
                let stop = (*start + n).min(*end);
                Ok(&buf[*start..stop])
            }
        }
    }

    #[inline]
    pub(crate) fn consume(&mut self, n: usize) {
        match self {
            Source::Slice { pos, data } => *pos = (*pos + n).min(data.len()),
            Source::Mapped { map, pos } => *pos = (*pos + n).min(map.bytes().len()),
            Source::Stream { start, end, .. } => {
                let n = n.min(*end - *start);
                *start += n;
            }
        }
    }

    /// The whole input and the read position, for inputs held in memory (fast path).
    #[inline]
    pub(crate) fn mem(&mut self) -> Option<(&[u8], &mut usize)> {
        match self {
            Source::Slice { data, pos } => Some((data, pos)),
            Source::Mapped { map, pos } => {
                map.consumed_up_to(*pos);
                Some((map.bytes(), pos))
            }
            Source::Stream { buf, start, end, .. } => Some((&buf[..*end], start)),
        }
    }

    pub(crate) fn offset(&self) -> u64 {
        match self {
            Source::Slice { pos, .. } | Source::Mapped { pos, .. } => *pos as u64,
            Source::Stream { base, start, .. } => *base + *start as u64,
        }
    }

    /// Total input size when known (memory-mapped or in-memory inputs), for progress bars.
    pub(crate) fn len_hint(&self) -> Option<u64> {
        match self {
            Source::Slice { data, .. } => Some(data.len() as u64),
            Source::Mapped { map, .. } => Some(map.bytes().len() as u64),
            Source::Stream { total, .. } => *total,
        }
    }
}

enum Format {
    Pcap(pcap::PcapHeader),
    Pcapng(pcapng::State),
}

/// Streaming reader over one capture.
pub struct Reader<'a> {
    src: Source<'a>,
    fmt: Format,
    name: String,
    pub stats: ReadStats,
    pub warnings: Vec<Warning>,
    warned: u32,
    /// The file a mapped reader came from (so that [`Reader::replica`] can map it again).
    path: Option<std::path::PathBuf>,
}

/// Open a capture file: detects gzip/zstd by magic bytes, then pcap or pcapng.
pub fn open_path(path: &Path) -> Result<Reader<'static>, TraceError> {
    let name = path.display().to_string();
    let file = File::open(path).map_err(|e| TraceError::Io(name.clone(), e))?;
    let mut magic = [0u8; 4];
    let n = (&file).read(&mut magic).map_err(|e| TraceError::Io(name.clone(), e))?;
    let kind = decompress::detect(&magic[..n]);
    let src = match kind {
        decompress::Compression::None => {
            // Mapped (no copy; `mapped` keeps the resident set bounded), or where that is not
            // possible plain reads into one reused 4 MiB buffer (like `cat`); either way
            // records are parsed in place.
            let f = File::open(path).map_err(|e| TraceError::Io(name.clone(), e))?;
            let meta = f.metadata().map_err(|e| TraceError::Io(name.clone(), e))?;
            let len = meta.len();
            if len == 0 && meta.is_file() {
                return Err(TraceError::Format(name, "empty file".into()));
            }
            match meta.is_file().then(|| mapped::Mapping::new(&f, len)).flatten() {
                Some(map) => {
                    let mut r = Reader::new(Source::Mapped { map, pos: 0 }, name)?;
                    r.path = Some(path.to_path_buf());
                    return Ok(r);
                }
                None => Source::Stream {
                    r: Box::new(f),
                    buf: Vec::new(),
                    start: 0,
                    end: 0,
                    eof: false,
                    base: 0,
                    total: (len > 0).then_some(len),
                },
            }
        }
        other => {
            let f = File::open(path).map_err(|e| TraceError::Io(name.clone(), e))?;
            let r = decompress::wrap(other, f).map_err(|e| TraceError::Io(name.clone(), e))?;
            Source::Stream { r, buf: Vec::new(), start: 0, end: 0, eof: false, base: 0, total: None }
        }
    };
    Reader::new(src, name)
}

impl<'a> Reader<'a> {
    /// A reader over bytes in memory (possibly compressed). Used by tests and fuzzers.
    pub fn from_slice(data: &'a [u8]) -> Result<Reader<'a>, TraceError> {
        let src = match decompress::detect(data) {
            decompress::Compression::None => Source::Slice { data, pos: 0 },
            other => Source::Stream {
                r: decompress::wrap(other, data).map_err(|e| TraceError::Io("<memory>".into(), e))?,
                buf: Vec::new(),
                start: 0,
                end: 0,
                eof: false,
                base: 0,
                total: None,
            },
        };
        Reader::new(src, "<memory>".into())
    }

    fn new(mut src: Source<'a>, name: String) -> Result<Reader<'a>, TraceError> {
        let head = src.peek(24).map_err(|e| TraceError::Io(name.clone(), e))?;
        let fmt = if head.len() >= 4 && head[..4] == [0x0A, 0x0D, 0x0D, 0x0A] {
            Format::Pcapng(pcapng::State::default())
        } else {
            let h = pcap::parse_file_header(head).map_err(|m| TraceError::Format(name.clone(), m.to_string()))?;
            src.consume(24);
            Format::Pcap(h)
        };
        let meta_bytes = if matches!(fmt, Format::Pcap(_)) { 24 } else { 0 };
        let stats = ReadStats { meta_bytes, ..Default::default() };
        Ok(Reader { src, fmt, name, stats, warnings: Vec::new(), warned: 0, path: None })
    }

    /// A second, independent reader over the same input from its start, when that costs no
    /// copy (a memory-mapped file or a slice in memory); `None` for decompressed streams. Lets
    /// several threads each scan the whole capture (`shard`).
    pub fn replica(&self) -> Option<Result<Reader<'a>, TraceError>> {
        match self.src {
            Source::Slice { data, .. } => Some(Reader::from_slice(data).map(|mut r| {
                r.name = self.name.clone();
                r
            })),
            // The same mapping: its pages are populated and released once for all readers.
            Source::Mapped { ref map, .. } => {
                Some(Reader::new(Source::Mapped { map: map.share(), pos: 0 }, self.name.clone()).map(|mut r| {
                    r.path = self.path.clone();
                    r
                }))
            }
            Source::Stream { .. } => None,
        }
    }

    /// The file's name (for messages).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Bytes consumed so far and the total when known (progress reporting).
    pub fn progress(&self) -> (u64, Option<u64>) {
        (self.src.offset(), self.src.len_hint())
    }

    fn warn(&mut self, offset: u64, message: String) {
        // Bounded: a badly damaged file must not fill memory with warnings.
        self.warned += 1;
        if self.warned <= 20 {
            self.warnings.push(Warning { file: self.name.clone(), offset, message });
        }
    }

    /// The next record, `Ok(None)` at the end of the capture. Damaged records are skipped
    /// (counted and warned about); only I/O errors of the underlying file are returned.
    #[inline]
    pub fn next_packet(&mut self) -> Result<Option<RawPacket<'_>>, TraceError> {
        // Fast path: a well-formed pcap record in memory is sliced out directly.
        // (Two borrows of the source: the first finds the record, the second returns it.)
        let mut fast = None;
        if let (Format::Pcap(h), Some((buf, pos))) = (&mut self.fmt, self.src.mem()) {
            let b = &buf[*pos..];
            if let Ok(rh) = pcap::parse_record_header(h, b) {
                let total = 16 + rh.incl_len as usize;
                if b.len() >= total {
                    h.last_sec = rh.sec;
                    fast = Some((*pos + 16, rh, h.linktype));
                    *pos += total;
                }
            }
        }
        if let Some((start, rh, linktype)) = fast {
            self.stats.records += 1;
            self.stats.bytes += rh.incl_len as u64;
            self.stats.record_bytes += 16 + rh.incl_len as u64;
            let (buf, _) = self.src.mem().expect("in-memory source");
            let data = &buf[start..start + rh.incl_len as usize];
            return Ok(Some(RawPacket { ts_ns: rh.ts_ns, linktype, data, orig_len: rh.orig_len }));
        }
        self.next_packet_slow()
    }

    fn next_packet_slow(&mut self) -> Result<Option<RawPacket<'_>>, TraceError> {
        // Two-phase borrow: find the record's extent first, then borrow it out of the source.
        loop {
            let off = self.src.offset();
            let step = match &mut self.fmt {
                Format::Pcap(h) => pcap::step(&mut self.src, h),
                Format::Pcapng(st) => pcapng::step(&mut self.src, st),
            }
            .map_err(|e| TraceError::Io(self.name.clone(), e))?;
            match step {
                Step::End => return Ok(None),
                Step::Skip { bytes } => {
                    self.stats.meta_bytes += bytes;
                    continue;
                }
                Step::Problem(p) => {
                    match p {
                        Problem::Truncated { bytes } => {
                            self.stats.truncated_records += 1;
                            self.stats.skipped_bytes += bytes;
                        }
                        Problem::Corrupt { skipped } => {
                            self.stats.corrupt_records += 1;
                            self.stats.resync_skipped_bytes += skipped;
                            self.stats.skipped_bytes += skipped;
                        }
                        Problem::UnknownBlock { bytes, .. } => {
                            self.stats.unknown_blocks += 1;
                            self.stats.unknown_block_bytes += bytes;
                        }
                    }
                    let msg = match p {
                        Problem::Truncated { bytes } => {
                            format!("truncated record at end of file ({bytes} bytes skipped)")
                        }
                        Problem::Corrupt { skipped } => {
                            format!("corrupt record header; skipped {skipped} bytes to resynchronise")
                        }
                        Problem::UnknownBlock { block_type, bytes } => {
                            format!("unknown pcapng block type 0x{block_type:08x} ({bytes} bytes skipped)")
                        }
                    };
                    self.warn(off, msg);
                    continue;
                }
                Step::Record { hdr_len, cap_len, ts_ns, linktype, orig_len, total } => {
                    self.stats.records += 1;
                    self.stats.bytes += cap_len as u64;
                    self.stats.record_bytes += total as u64;
                    // Borrow the record out of the source, then consume it on the next call.
                    let buf = self.src.peek(total).map_err(|e| TraceError::Io(self.name.clone(), e))?;
                    let data = &buf[hdr_len..hdr_len + cap_len];
                    let data: &[u8] = unsafe { std::slice::from_raw_parts(data.as_ptr(), data.len()) };
                    // SAFETY: `data` points into the source buffer, which is not modified until
                    // the next call to `next_packet` (which takes `&mut self`, ending this borrow);
                    // `consume` only moves an index and never touches the bytes.
                    self.src.consume(total);
                    return Ok(Some(RawPacket { ts_ns, linktype, data, orig_len }));
                }
            }
        }
    }
}

/// What one parser step found.
pub(crate) enum Step {
    End,
    /// A well-formed block that is no packet (pcapng SHB, IDB, NRB, ISB, ...), `bytes` long.
    Skip {
        bytes: u64,
    },
    Problem(Problem),
    /// A record at the current position: header length, captured length, total bytes to consume.
    Record {
        hdr_len: usize,
        cap_len: usize,
        ts_ns: u64,
        linktype: u32,
        orig_len: u32,
        total: usize,
    },
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Problem {
    /// The input ended inside a record; `bytes` of it were read and dropped.
    Truncated {
        bytes: u64,
    },
    Corrupt {
        skipped: u64,
    },
    UnknownBlock {
        block_type: u32,
        bytes: u64,
    },
}

/// Read every record of a capture held in memory, calling `f` for each (convenience for tests).
pub fn for_each_packet(data: &[u8], mut f: impl FnMut(&RawPacket<'_>)) -> Result<ReadStats, TraceError> {
    let mut r = Reader::from_slice(data)?;
    while let Some(p) = r.next_packet()? {
        f(&p);
    }
    Ok(r.stats.clone())
}
