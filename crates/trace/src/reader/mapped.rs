//! A capture file mapped read-only into memory (POSIX `mmap`), so records are parsed straight
//! from the page cache: no `read` copies into a user buffer (19 % of the analyzer's CPU time on a
//! 5.5 M-packet capture went to the kernel's `_copy_to_iter` with 4 MiB reads, issue 16).
//!
//! Memory stays bounded whatever the file size: the pages behind the read position (of the
//! slowest reader, when several threads share the mapping through [`Mapping::share`]) are handed
//! back with `madvise(MADV_DONTNEED)` every [`RELEASE_EVERY`] bytes (for a read-only file mapping
//! that only drops this process's page-table entries; the page cache keeps the data), so the
//! resident set is at most about one release window. `MADV_SEQUENTIAL` asks for aggressive
//! read-ahead, and `MADV_POPULATE_READ` (Linux ≥ 5.14; ignored elsewhere) maps the next window's
//! pages in one call instead of one minor fault per 64 KiB. Only plain (uncompressed) files are mapped; compressed ones are decompressed
//! into a buffer as before, and so is any file that cannot be mapped (a pipe, a FIFO, a
//! platform without `mmap`).
//!
//! Caveat (as for every mmap reader, tcpdump's `-r` included when built with mmap): if another
//! process truncates the file while it is being read, the next access past the new end raises
//! SIGBUS. Captures being written are appended to, not truncated, and the analyzer reads only up
//! to the length seen at open time.

use std::fs::File;
use std::sync::{Arc, Mutex};

/// Consumed bytes given back to the kernel at a time; the same amount ahead of the read
/// position is populated at once. The resident set stays below about three windows.
pub const RELEASE_EVERY: usize = 16 << 20;

/// The mapping itself, shared by every reader of the file ([`Mapping::share`]); unmapped when
/// the last of them is dropped.
///
/// Why shared: the analyzer's scanning threads each read the whole file (`shard`), and when
/// each mapped it again, populating and releasing its own page-table entries was 18 % of the
/// two-thread run's samples (issue 16); one mapping does that work once.
struct Region {
    ptr: *const u8,
    len: usize,
    /// Bytes per release/populate step ([`RELEASE_EVERY`]; smaller in tests).
    window: usize,
    marks: Mutex<Marks>,
}

/// Where the readers of one region are, and what has been released and populated.
struct Marks {
    /// Last position each reader reported (`usize::MAX` once it is dropped).
    readers: Vec<usize>,
    /// Everything before this offset has been released (page-aligned).
    released: usize,
    /// Pages before this offset have been populated.
    populated: usize,
}

// SAFETY: the mapping is read-only and owned; the marks are behind a mutex.
unsafe impl Send for Region {}
unsafe impl Sync for Region {}

/// One reader's view of a read-only file mapping.
pub struct Mapping {
    region: Arc<Region>,
    /// This reader's index in `Marks::readers`.
    slot: usize,
    /// The next position at which this reader reports where it is.
    next_report: usize,
}

impl Mapping {
    /// Map `file` (of `len` bytes, > 0). `None` when the platform or the file does not allow it.
    pub fn new(file: &File, len: u64) -> Option<Mapping> {
        Mapping::with_window(file, len, RELEASE_EVERY)
    }

    #[cfg(unix)]
    fn with_window(file: &File, len: u64, window: usize) -> Option<Mapping> {
        use std::os::unix::io::AsRawFd;
        let len = usize::try_from(len).ok().filter(|&l| l > 0)?;
        // SAFETY: a fresh private read-only mapping of a valid descriptor; checked for failure.
        let ptr = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_PRIVATE, file.as_raw_fd(), 0) };
        if ptr == libc::MAP_FAILED {
            return None;
        }
        // SAFETY: advice on our own mapping; failure is harmless (only a hint).
        unsafe { libc::madvise(ptr, len, libc::MADV_SEQUENTIAL) };
        let region =
            Region { ptr: ptr as *const u8, len, window, marks: Mutex::new(Marks { readers: vec![0], released: 0, populated: 0 }) };
        let m = Mapping { region: Arc::new(region), slot: 0, next_report: window };
        m.region.populate_to(&mut m.region.marks.lock().expect("marks"), 0);
        Some(m)
    }

    #[cfg(not(unix))]
    fn with_window(_file: &File, _len: u64, _window: usize) -> Option<Mapping> {
        None
    }

    /// Another reader of the same mapping, starting at the beginning (no new mapping: the
    /// pages and their page-table entries are shared).
    pub fn share(&self) -> Mapping {
        let mut marks = self.region.marks.lock().expect("marks");
        marks.readers.push(0);
        let slot = marks.readers.len() - 1;
        Mapping { region: Arc::clone(&self.region), slot, next_report: self.region.window }
    }

    /// The mapped bytes.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` maps `len` readable bytes for as long as the region lives (we hold it).
        unsafe { std::slice::from_raw_parts(self.region.ptr, self.region.len) }
    }

    /// Tell the kernel this reader will not read the bytes before `pos` again (cheap when
    /// called per record: it acts only once per window).
    #[inline]
    pub fn consumed_up_to(&mut self, pos: usize) {
        if pos >= self.next_report {
            self.report(pos);
        }
    }

    /// Record this reader's position; release what every reader has passed, populate ahead of
    /// the leader.
    #[cold]
    fn report(&mut self, pos: usize) {
        let r = &*self.region;
        self.next_report = pos + r.window;
        let mut marks = r.marks.lock().expect("marks");
        marks.readers[self.slot] = pos;
        // Keep the page holding the slowest reader's position: a record may still be borrowed
        // from it.
        let slowest = marks.readers.iter().copied().min().unwrap_or(pos).min(r.len);
        let upto = slowest & !(page_size() - 1);
        if upto >= marks.released + r.window {
            #[cfg(unix)]
            // SAFETY: the range lies inside the mapping and every reader is past it, so nothing
            // borrowed from it is alive; the pages read back from the page cache if touched.
            unsafe {
                libc::madvise(r.ptr.add(marks.released) as *mut libc::c_void, upto - marks.released, libc::MADV_DONTNEED)
            };
            marks.released = upto;
        }
        r.populate_to(&mut marks, pos & !(page_size() - 1));
    }

    /// Bytes before this offset have been given back (for tests).
    #[cfg(test)]
    fn released(&self) -> usize {
        self.region.marks.lock().expect("marks").released
    }
}

impl Region {
    /// Map the pages of the two windows from `from` (page-aligned) ahead of use, those not
    /// populated yet.
    fn populate_to(&self, marks: &mut Marks, from: usize) {
        let start = from.max(marks.populated);
        let end = (from + 2 * self.window).min(self.len);
        if start < end {
            #[cfg(target_os = "linux")]
            // SAFETY: advice on a range inside our mapping; an old kernel answers EINVAL, which
            // only means the pages fault in one by one as before.
            unsafe {
                libc::madvise(self.ptr.add(start) as *mut libc::c_void, end - start, libc::MADV_POPULATE_READ)
            };
            marks.populated = end;
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // A reader that is gone holds nothing back.
        if let Ok(mut marks) = self.region.marks.lock() {
            marks.readers[self.slot] = usize::MAX;
        }
    }
}

fn page_size() -> usize {
    #[cfg(unix)]
    {
        // SAFETY: sysconf has no preconditions.
        let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if p > 0 {
            return p as usize;
        }
    }
    4096
}

impl Drop for Region {
    fn drop(&mut self) {
        #[cfg(unix)]
        // SAFETY: unmapping exactly what `with_window` mapped; the last reader is gone.
        unsafe {
            libc::munmap(self.ptr as *mut libc::c_void, self.len)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A temporary file of `pages` pages plus 17 bytes of known contents, and its bytes.
    fn temp_file(tag: &str, pages: usize) -> (std::path::PathBuf, Vec<u8>) {
        let path = std::env::temp_dir().join(format!("tv_mapped_{tag}_{}", std::process::id()));
        let data: Vec<u8> = (0..pages * page_size() + 17).map(|i| (i * 7 % 251) as u8).collect();
        File::create(&path).unwrap().write_all(&data).unwrap();
        (path, data)
    }

    #[test]
    fn a_mapped_file_reads_back_its_bytes_and_survives_releases() {
        let (path, data) = temp_file("one", 3);
        let f = File::open(&path).unwrap();
        let mut m = Mapping::with_window(&f, data.len() as u64, page_size()).expect("mmap works on a regular file");
        assert_eq!(m.bytes(), &data[..]);
        m.consumed_up_to(2 * page_size() + 5);
        assert_eq!(m.released(), 2 * page_size(), "a lone reader releases what it passed");
        // Released pages read back from the page cache with the same contents.
        assert_eq!(m.bytes(), &data[..]);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn shared_readers_release_only_what_the_slowest_has_passed() {
        let (path, data) = temp_file("shared", 6);
        let f = File::open(&path).unwrap();
        let p = page_size();
        let mut fast = Mapping::with_window(&f, data.len() as u64, p).expect("mmap works on a regular file");
        let mut slow = fast.share();
        fast.consumed_up_to(5 * p);
        assert_eq!(fast.released(), 0, "the second reader is still at the start");
        slow.consumed_up_to(2 * p + 1);
        assert_eq!(slow.released(), 2 * p, "both readers are past two pages");
        assert_eq!(slow.bytes(), &data[..]);
        drop(slow);
        fast.consumed_up_to(6 * p);
        assert_eq!(fast.released(), 6 * p, "a dropped reader holds nothing back");
        assert_eq!(fast.bytes(), &data[..]);
        std::fs::remove_file(&path).unwrap();
    }
}
