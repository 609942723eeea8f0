//! The edge's segment cache: complete segments only, bounded in bytes, evicting segments that
//! left their stream's live window.
//!
//! Two eviction rules:
//! - live window: when a stream's upstream playlist no longer lists a segment (its media
//!   sequence is below the window's first), no receiver can be sent to it any more (held
//!   playlists are cut at the end, never extended at the head), so it goes at once;
//! - bound: an insertion that would exceed `bound_bytes` first evicts the oldest insertions
//!   (FIFO: in a live stream the oldest segment is the one nearest to leaving the window).
//!   An object larger than the bound is not cached at all.
//!
//! Only complete bodies whose length matched the upstream's Content-Length are inserted (the
//! server's job), so the cache never holds a truncated copy.

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;

/// A cached segment: key is the edge path plus the Range asked for (byte-range segments).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SegmentKey {
    pub path_and_query: String,
    pub range: Option<String>,
}

/// A complete object as the edge serves it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CachedObject {
    pub status: u16,
    pub content_type: Option<String>,
    pub content_range: Option<String>,
    pub body: Bytes,
}

/// Where a segment sits in its stream (for live-window eviction).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamPosition {
    pub stream: String,
    pub sequence: u64,
}

struct Entry {
    object: CachedObject,
    position: Option<StreamPosition>,
    insertion: u64,
}

pub struct SegmentCache {
    bound_bytes: u64,
    used_bytes: u64,
    entries: HashMap<SegmentKey, Entry>,
    by_insertion: BTreeMap<u64, SegmentKey>,
    next_insertion: u64,
    evictions: u64,
}

impl SegmentCache {
    pub fn new(bound_bytes: u64) -> SegmentCache {
        SegmentCache {
            bound_bytes,
            used_bytes: 0,
            entries: HashMap::new(),
            by_insertion: BTreeMap::new(),
            next_insertion: 0,
            evictions: 0,
        }
    }

    pub fn get(&self, key: &SegmentKey) -> Option<&CachedObject> {
        self.entries.get(key).map(|e| &e.object)
    }

    /// Insert a complete object; false (not cached) when it alone exceeds the bound.
    pub fn insert(
        &mut self,
        key: SegmentKey,
        object: CachedObject,
        position: Option<StreamPosition>,
    ) -> bool {
        let size = object.body.len() as u64;
        if size > self.bound_bytes {
            return false;
        }
        self.remove(&key);
        while self.used_bytes + size > self.bound_bytes {
            let Some((_, oldest)) = self.by_insertion.pop_first() else {
                break;
            };
            if let Some(e) = self.entries.remove(&oldest) {
                self.used_bytes -= e.object.body.len() as u64;
                self.evictions += 1;
            }
        }
        let insertion = self.next_insertion;
        self.next_insertion += 1;
        self.used_bytes += size;
        self.by_insertion.insert(insertion, key.clone());
        self.entries.insert(
            key,
            Entry {
                object,
                position,
                insertion,
            },
        );
        true
    }

    /// Evict `stream`'s segments whose sequence is below `first_in_window`; returns how many.
    pub fn evict_left_window(&mut self, stream: &str, first_in_window: u64) -> usize {
        let gone: Vec<SegmentKey> = self
            .entries
            .iter()
            .filter(|(_, e)| matches!(&e.position, Some(p) if p.stream == stream && p.sequence < first_in_window))
            .map(|(k, _)| k.clone())
            .collect();
        for k in &gone {
            self.remove(k);
            self.evictions += 1;
        }
        gone.len()
    }

    fn remove(&mut self, key: &SegmentKey) {
        if let Some(e) = self.entries.remove(key) {
            self.used_bytes -= e.object.body.len() as u64;
            self.by_insertion.remove(&e.insertion);
        }
    }

    pub fn used_bytes(&self) -> u64 {
        self.used_bytes
    }
    pub fn bound_bytes(&self) -> u64 {
        self.bound_bytes
    }
    pub fn len(&self) -> usize {
        self.entries.len()
    }
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
    pub fn evictions(&self) -> u64 {
        self.evictions
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(p: &str) -> SegmentKey {
        SegmentKey {
            path_and_query: p.into(),
            range: None,
        }
    }
    fn object(n: usize) -> CachedObject {
        CachedObject {
            status: 200,
            content_type: None,
            content_range: None,
            body: Bytes::from(vec![0u8; n]),
        }
    }
    fn at(stream: &str, sequence: u64) -> Option<StreamPosition> {
        Some(StreamPosition {
            stream: stream.into(),
            sequence,
        })
    }

    #[test]
    fn insertions_beyond_the_bound_evict_the_oldest_first() {
        let mut c = SegmentCache::new(1000);
        for i in 0..5 {
            assert!(c.insert(key(&format!("/s{i}.ts")), object(300), None));
            assert!(c.used_bytes() <= 1000);
        }
        assert_eq!(c.len(), 3);
        assert!(c.get(&key("/s1.ts")).is_none());
        assert!(c.get(&key("/s4.ts")).is_some());
        assert_eq!(c.evictions(), 2);
    }

    #[test]
    fn an_object_larger_than_the_bound_is_not_cached_and_evicts_nothing() {
        let mut c = SegmentCache::new(1000);
        c.insert(key("/a"), object(600), None);
        assert!(!c.insert(key("/huge"), object(1001), None));
        assert!(c.get(&key("/a")).is_some());
    }

    #[test]
    fn segments_that_left_the_live_window_are_evicted_only_for_their_stream() {
        let mut c = SegmentCache::new(10_000);
        for seq in 10..16 {
            c.insert(
                key(&format!("/hd/{seq}.ts")),
                object(10),
                at("/hd.m3u8", seq),
            );
            c.insert(
                key(&format!("/sd/{seq}.ts")),
                object(10),
                at("/sd.m3u8", seq),
            );
        }
        assert_eq!(c.evict_left_window("/hd.m3u8", 13), 3);
        assert!(c.get(&key("/hd/12.ts")).is_none());
        assert!(c.get(&key("/hd/13.ts")).is_some());
        assert!(c.get(&key("/sd/10.ts")).is_some());
        assert_eq!(c.used_bytes(), 90);
    }

    #[test]
    fn byte_ranges_of_one_file_are_distinct_entries() {
        let mut c = SegmentCache::new(10_000);
        let a = SegmentKey {
            path_and_query: "/main.mp4".into(),
            range: Some("bytes=0-99".into()),
        };
        let b = SegmentKey {
            path_and_query: "/main.mp4".into(),
            range: Some("bytes=100-199".into()),
        };
        c.insert(a.clone(), object(100), None);
        assert!(c.get(&b).is_none());
        c.insert(b.clone(), object(100), None);
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn reinserting_a_key_replaces_it_without_double_counting() {
        let mut c = SegmentCache::new(1000);
        c.insert(key("/a"), object(400), None);
        c.insert(key("/a"), object(500), None);
        assert_eq!(c.used_bytes(), 500);
        assert_eq!(c.len(), 1);
    }
}
