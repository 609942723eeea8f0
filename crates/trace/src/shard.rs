//! The analysis loop: read → decode → hand each TCP segment to the flow table of its shard.
//!
//! Flows are sharded by their canonical 5-tuple (the scanning threads deal the first flows
//! round-robin in first-seen order, [`Dealer`]; the pipeline hashes it), so both directions of a
//! flow land in the same shard and shards share nothing. With one thread everything runs inline (no copies:
//! the decoded packet borrows the reader's buffer). With N > 1 threads the calling thread reads
//! and decodes, and N − 1 worker threads (at least one) own the shards; decoded headers and the
//! captured payload bytes travel in reusable batches (a header array plus one payload arena per
//! batch, recycled through a return channel), so steady state allocates nothing per packet.
//!
//! Finished flows leave memory: a flow closed by FIN/RST is finished after `CLOSE_LINGER` of
//! silence, any flow after `idle_timeout`, a flow whose 5-tuple is reused by a new SYN at once.
//! Sweeps run every 10 s of capture time. Output order never depends on hash-map order: the
//! merge in `output` sorts flows by start time and 5-tuple.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::ops::ControlFlow;
use std::sync::mpsc;

use crate::decode::{self, TcpPacket};
use crate::flow::{Flow, FlowKey, FlowOut};
use crate::output::{self, Analysis};
use crate::reader::{Reader, Warning};
use crate::segments::{for_each_segment, ReadTotals};
use crate::{AnalyzeOptions, Progress, TraceError};

const CLOSE_LINGER_NS: u64 = 30_000_000_000;
const SWEEP_EVERY_NS: u64 = 10_000_000_000;
const BATCH: usize = 2048;
/// Entries of the recent-flow cache (a power of two).
const RECENT: usize = 256;

/// Slot of `k` in the recent-flow cache: a cheap mix of the ports and the addresses' low bits
/// (the ports alone tell apart the flows of one client or one server).
#[inline]
fn recent_index(k: &FlowKey) -> usize {
    let x = (k.pa as u32) << 16 ^ k.pb as u32 ^ (k.a as u32).rotate_left(7) ^ (k.b as u32).rotate_left(13);
    (x.wrapping_mul(0x9E37_79B1) >> (32 - RECENT.trailing_zeros())) as usize
}

type Hasher = foldhash::fast::FixedState;

/// The flows of one shard.
pub struct FlowTable {
    /// 5-tuple → slot in `slab` (flows live in a slab so that recent flows can be cached by
    /// index in `recent`).
    map: HashMap<FlowKey, usize, Hasher>,
    slab: Vec<Option<Flow>>,
    free: Vec<usize>,
    /// Direct-mapped cache of recently seen flows, indexed by [`recent_index`]: interleaved
    /// bulk flows miss a last-flow cache on most packets, and the map's hash of the 36-byte
    /// key plus probe was 7 % of the analysis (issue 16); this costs a few XORs and one compare.
    recent: Box<[Option<(FlowKey, usize)>; RECENT]>,
    done: Vec<FlowOut>,
    last_sweep_ns: u64,
    opts: AnalyzeOptions,
    server_ips: Vec<u128>,
    idle_ns: u64,
}

impl FlowTable {
    pub fn new(opts: &AnalyzeOptions) -> FlowTable {
        FlowTable {
            map: HashMap::with_hasher(Hasher::default()),
            slab: Vec::new(),
            free: Vec::new(),
            recent: Box::new([None; RECENT]),
            done: Vec::new(),
            last_sweep_ns: 0,
            opts: opts.clone(),
            server_ips: opts.server_ips.iter().filter_map(|s| decode::parse_addr(s)).collect(),
            idle_ns: opts.idle_timeout.as_nanos() as u64,
        }
    }

    fn insert(&mut self, key: FlowKey, f: Flow) -> usize {
        let i = match self.free.pop() {
            Some(i) => {
                self.slab[i] = Some(f);
                i
            }
            None => {
                self.slab.push(Some(f));
                self.slab.len() - 1
            }
        };
        self.map.insert(key, i);
        i
    }

    fn remove(&mut self, key: &FlowKey) -> Option<Flow> {
        let i = self.map.remove(key)?;
        let r = &mut self.recent[recent_index(key)];
        if r.is_some_and(|(k, _)| k == *key) {
            *r = None;
        }
        self.free.push(i);
        self.slab[i].take()
    }

    /// Process one TCP segment captured at `ts` (ns).
    #[inline]
    pub fn process(&mut self, p: &TcpPacket<'_>, ts: u64) {
        let key = FlowKey::of(p);
        let ri = recent_index(&key);
        let slot = match self.recent[ri] {
            Some((k, i)) if k == key => Some(i),
            _ => self.map.get(&key).copied(),
        };
        match slot {
            Some(i) => {
                let f = self.slab[i].as_mut().expect("live slot");
                let stale = ts.saturating_sub(f.last_ns) > self.idle_ns;
                if stale || f.is_reuse(p) {
                    let old = self.remove(&key).unwrap();
                    self.done.push(old.finish(&self.opts));
                    let mut nf = Flow::new(p, ts, &self.opts, &self.server_ips);
                    nf.on_packet(p, ts, &self.opts);
                    let i = self.insert(key, nf);
                    self.recent[ri] = Some((key, i));
                } else {
                    f.on_packet(p, ts, &self.opts);
                    self.recent[ri] = Some((key, i));
                }
            }
            None => {
                let mut nf = Flow::new(p, ts, &self.opts, &self.server_ips);
                nf.on_packet(p, ts, &self.opts);
                let i = self.insert(key, nf);
                self.recent[ri] = Some((key, i));
            }
        }
        if ts >= self.last_sweep_ns + SWEEP_EVERY_NS {
            self.sweep(ts);
        }
    }

    fn sweep(&mut self, now: u64) {
        self.last_sweep_ns = now;
        let idle = self.idle_ns;
        let slab = &self.slab;
        let mut expired: Vec<FlowKey> = self
            .map
            .iter()
            .filter(|(_, &i)| {
                let f = slab[i].as_ref().expect("live slot");
                let quiet = now.saturating_sub(f.last_ns);
                quiet > idle || f.closed && quiet > CLOSE_LINGER_NS
            })
            .map(|(k, _)| *k)
            .collect();
        expired.sort_unstable();
        for k in expired {
            let f = self.remove(&k).unwrap();
            self.done.push(f.finish(&self.opts));
        }
    }

    /// Flows still in memory (for tests of eviction).
    pub fn live(&self) -> usize {
        self.map.len()
    }

    /// Finish every flow and return all of them.
    pub fn finish(mut self) -> Vec<FlowOut> {
        let opts = self.opts.clone();
        self.map.clear();
        let mut rest: Vec<Flow> = self.slab.drain(..).flatten().collect();
        rest.sort_by_key(|f| f.key);
        for f in rest {
            self.done.push(f.finish(&opts));
        }
        self.done
    }
}

/// A decoded header on its way to a worker; its raw TCP options (`olen` bytes) and captured
/// payload (`plen` bytes) follow each other in the batch arena from `poff`.
struct Item {
    ts: u64,
    pkt: TcpPacket<'static>,
    poff: u32,
    olen: u16,
    plen: u32,
}

#[derive(Default)]
struct Batch {
    items: Vec<Item>,
    arena: Vec<u8>,
}

/// Run the analysis over readers (one after the other).
pub(crate) fn run(readers: Vec<Reader<'_>>, opts: &AnalyzeOptions, progress: &(dyn Fn(Progress) + Sync)) -> Result<Analysis, TraceError> {
    let threads = if opts.threads == 0 { std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) } else { opts.threads };
    // Every thread scans the whole input when it can be read again without a copy (mapped
    // files, slices): see `scan`.
    let replicas = if threads > 1 { replicate(&readers, threads) } else { None };
    if let Some(sets) = replicas {
        drop(readers);
        return run_scanning(sets, opts, progress);
    }
    let (flows, read) = if threads <= 1 {
        let s = scan(readers, opts, None, Some(progress))?;
        (s.flows, s.read)
    } else {
        run_pipelined(readers, threads, opts, progress)?
    };
    finish_run(flows, opts, read)
}

/// Parallel analysis of input that can be read only once (a compressed stream): the calling
/// thread reads and decodes, `threads − 1` workers (at least one) own the shards and receive
/// the segments in batches.
fn run_pipelined(
    readers: Vec<Reader<'_>>,
    threads: usize,
    opts: &AnalyzeOptions,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<(Vec<FlowOut>, ReadTotals), TraceError> {
    let workers = (threads - 1).max(1);
    let copy_payload = opts.app_parse;
    std::thread::scope(|scope| {
        let mut txs = Vec::with_capacity(workers);
        let mut recycle_rx = Vec::with_capacity(workers);
        let mut handles = Vec::with_capacity(workers);
        for _ in 0..workers {
            let (tx, rx) = mpsc::sync_channel::<Batch>(8);
            let (rtx, rrx) = mpsc::channel::<Batch>();
            txs.push(tx);
            recycle_rx.push(rrx);
            let b = std::thread::Builder::new().name("trace-worker".into());
            handles.push(
                b.spawn_scoped(scope, move || {
                    let mut table = FlowTable::new(opts);
                    for mut b in rx {
                        for it in &b.items {
                            let mut p = it.pkt;
                            let o = it.poff as usize;
                            let po = o + it.olen as usize;
                            decode::parse_options(&b.arena[o..po], &mut p.opts);
                            let payload: &[u8] = &b.arena[po..po + it.plen as usize];
                            p.payload = unsafe { std::mem::transmute::<&[u8], &'static [u8]>(payload) };
                            // SAFETY: `p` does not outlive this iteration; the arena is alive
                            // and unmodified until the batch is cleared below.
                            table.process(&p, it.ts);
                        }
                        b.items.clear();
                        b.arena.clear();
                        let _ = rtx.send(b);
                    }
                    table.finish()
                })
                .expect("spawn analysis worker"),
            );
        }
        let hasher = Hasher::default();
        let mut batches: Vec<Batch> = (0..workers).map(|_| Batch::default()).collect();
        // Options are parsed by the worker: the reading thread is the bottleneck.
        let read = for_each_segment(readers, Some(progress), |p, raw_opts, ts| {
            let w = if workers == 1 { 0 } else { (hasher.hash_one(FlowKey::of(p)) % workers as u64) as usize };
            let b = &mut batches[w];
            let poff = b.arena.len() as u32;
            b.arena.extend_from_slice(raw_opts);
            let plen = if copy_payload { p.payload.len() as u32 } else { 0 };
            if copy_payload {
                b.arena.extend_from_slice(p.payload);
            }
            b.items.push(Item { ts, pkt: detach(p), poff, olen: raw_opts.len() as u16, plen });
            if b.items.len() >= BATCH {
                let fresh = recycle_rx[w].try_recv().unwrap_or_default();
                let full = std::mem::replace(b, fresh);
                if txs[w].send(full).is_err() {
                    return ControlFlow::Break(());
                }
            }
            ControlFlow::Continue(())
        });
        for (w, b) in batches.into_iter().enumerate() {
            if !b.items.is_empty() {
                let _ = txs[w].send(b);
            }
        }
        drop(txs);
        let mut all = Vec::new();
        for h in handles {
            all.extend(h.join().expect("analysis worker panicked"));
        }
        Ok((all, read?))
    })
}

/// The analysis's tables from the flows and the reading statistics.
fn finish_run(flows: Vec<FlowOut>, opts: &AnalyzeOptions, read: ReadTotals) -> Result<Analysis, TraceError> {
    let ReadTotals { mut dstats, rstats, mut warnings, packets } = read;
    dstats.packets = packets;
    // Records that were read but could not be decoded down to TCP: one warning per kind.
    for (n, what) in [
        (dstats.unknown_link, "of an unknown link type"),
        (dstats.truncated, "truncated inside the IP/TCP headers"),
        (dstats.bad_header, "with a malformed IP/TCP header"),
    ] {
        if n > 0 {
            warnings.push(Warning { file: String::new(), offset: 0, message: format!("{n} records {what} (skipped)") });
        }
    }
    Ok(output::build(flows, opts, rstats, dstats, warnings))
}

/// Flows dealt round-robin, in first-seen order, before the rest are placed by hash: with a
/// few bulk flows (the speed bench's 4 cubic flows) a hash splits them 1/3 or 0/4 between two
/// scanning threads more often than 2/2, and the busier thread sets the wall time (issue 16:
/// two threads 14.1 M packets/s vs one 12.2 M). Every scanning thread sees the same packets in
/// the same order, so all deal alike without talking. Bounded so that a capture of millions of
/// short flows (where the hash balances by numbers) keeps no owner per flow.
const DEALT_FLOWS: usize = 4096;

/// Which of `n` scanning threads owns each flow (see [`DEALT_FLOWS`]).
struct Dealer {
    n: usize,
    hasher: Hasher,
    owners: HashMap<FlowKey, usize, Hasher>,
    /// Direct-mapped cache of recent owners, as [`FlowTable`]'s: a few XORs and one compare per
    /// packet instead of a hash of the key.
    recent: Box<[Option<(FlowKey, usize)>; RECENT]>,
}

impl Dealer {
    fn new(n: usize) -> Dealer {
        Dealer { n, hasher: Hasher::default(), owners: HashMap::with_hasher(Hasher::default()), recent: Box::new([None; RECENT]) }
    }

    #[inline]
    fn owner(&mut self, key: FlowKey) -> usize {
        let ri = recent_index(&key);
        if let Some((k, w)) = self.recent[ri] {
            if k == key {
                return w;
            }
        }
        let w = match self.owners.get(&key) {
            Some(&w) => w,
            None if self.owners.len() < DEALT_FLOWS => {
                let w = self.owners.len() % self.n;
                self.owners.insert(key, w);
                w
            }
            None => (self.hasher.hash_one(key) % self.n as u64) as usize,
        };
        self.recent[ri] = Some((key, w));
        w
    }
}

/// What one scan of the input produced.
struct Scanned {
    flows: Vec<FlowOut>,
    read: ReadTotals,
}

/// One pass over every reader: dedup, decode and hand each segment to a flow table. With
/// `shard = Some((w, n))` only the flows [`Dealer`] gives to `w` of `n` are analysed; every
/// other counter (records, duplicates, decode skips) covers the whole input, so each shard's
/// counters are the same and the first shard's are the run's.
fn scan(
    readers: Vec<Reader<'_>>,
    opts: &AnalyzeOptions,
    shard: Option<(usize, usize)>,
    progress: Option<&(dyn Fn(Progress) + Sync)>,
) -> Result<Scanned, TraceError> {
    let mut dealer = shard.map(|(_, n)| Dealer::new(n));
    let mut table = FlowTable::new(opts);
    let read = for_each_segment(readers, progress, |p, raw_opts, ts| {
        let mine = match (shard, dealer.as_mut()) {
            (Some((w, _)), Some(d)) => d.owner(FlowKey::of(p)) == w,
            _ => true,
        };
        // Options are parsed only for the segments this shard analyses.
        if mine {
            decode::parse_options(raw_opts, &mut p.opts);
            table.process(p, ts);
        }
        ControlFlow::Continue(())
    })?;
    Ok(Scanned { flows: table.finish(), read })
}

/// `n` independent readers per input, or `None` if some input cannot be re-read without a copy.
fn replicate<'a>(readers: &[Reader<'a>], n: usize) -> Option<Vec<Vec<Reader<'a>>>> {
    let mut sets: Vec<Vec<Reader<'a>>> = (0..n).map(|_| Vec::with_capacity(readers.len())).collect();
    for r in readers {
        for set in sets.iter_mut() {
            set.push(r.replica()?.ok()?);
        }
    }
    Some(sets)
}

/// Parallel analysis by scanning: each of `sets.len()` threads reads the whole input (mapped,
/// so the bytes are shared through the page cache and nothing is copied between threads) and
/// analyses only its shard of the flows. Reading, dedup and header decoding are repeated per
/// thread, which costs less than handing decoded packets to another core (the pipeline below
/// moved ~120 bytes per packet between caches and cost 70 % more CPU than one thread, issue 16).
/// The calling thread runs shard 0 and reports progress.
fn run_scanning(sets: Vec<Vec<Reader<'_>>>, opts: &AnalyzeOptions, progress: &(dyn Fn(Progress) + Sync)) -> Result<Analysis, TraceError> {
    let n = sets.len();
    let results: Vec<Result<Scanned, TraceError>> = std::thread::scope(|scope| {
        let mut it = sets.into_iter();
        let first = it.next().expect("at least one shard");
        let handles: Vec<_> = it
            .enumerate()
            .map(|(i, set)| {
                std::thread::Builder::new()
                    .name("trace-scan".into())
                    .spawn_scoped(scope, move || scan(set, opts, Some((i + 1, n)), None))
                    .expect("spawn analysis thread")
            })
            .collect();
        let mut out = vec![scan(first, opts, Some((0, n)), Some(progress))];
        out.extend(handles.into_iter().map(|h| h.join().expect("analysis thread panicked")));
        out
    });
    let mut results = results.into_iter();
    let head = results.next().expect("shard 0")?;
    let mut flows = head.flows;
    for r in results {
        flows.extend(r?.flows);
    }
    finish_run(flows, opts, head.read)
}

/// Drop the payload borrow so the header can travel to a worker (the payload goes separately
/// through the batch arena).
#[inline]
fn detach(p: &TcpPacket<'_>) -> TcpPacket<'static> {
    TcpPacket {
        src: p.src,
        dst: p.dst,
        v6: p.v6,
        sport: p.sport,
        dport: p.dport,
        seq: p.seq,
        ack: p.ack,
        flags: p.flags,
        window: p.window,
        opts: p.opts,
        payload_len: p.payload_len,
        payload: &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(port: u16) -> FlowKey {
        FlowKey { a: 0x0a00_0001, pa: port, b: 0x0a00_0002, pb: 5201 }
    }

    #[test]
    fn a_few_bulk_flows_are_dealt_evenly_between_two_scanning_threads_in_first_seen_order() {
        let mut d = Dealer::new(2);
        // Packets of 4 flows interleaved as bulk flows are: each flow keeps the owner it got first.
        let seen: Vec<usize> = [40001, 40002, 40003, 40004, 40002, 40001, 40004, 40003].iter().map(|&p| d.owner(key(p))).collect();
        assert_eq!(seen, vec![0, 1, 0, 1, 1, 0, 1, 0]);
    }

    #[test]
    fn flows_beyond_the_dealt_ones_are_placed_by_hash_and_keep_no_owner_entry() {
        let mut d = Dealer::new(2);
        for p in 0..(DEALT_FLOWS as u32 + 500) {
            let k = FlowKey { a: p as u128, pa: 1, b: 1 << 64, pb: 80 };
            let w = d.owner(k);
            assert_eq!(d.owner(k), w, "a flow keeps its owner");
        }
        assert_eq!(d.owners.len(), DEALT_FLOWS);
    }
}
