//! A capture file mapped read-only into memory (POSIX `mmap`), so records are parsed straight
//! from the page cache: no `read` copies into a user buffer (19 % of the analyzer's CPU time on a
//! 5.5 M-packet capture went to the kernel's `_copy_to_iter` with 4 MiB reads, issue 16).
//!
//! Memory stays bounded whatever the file size: the pages behind the read position are handed
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

/// Consumed bytes given back to the kernel at a time; the same amount ahead of the read
/// position is populated at once. The resident set stays below about three windows.
pub const RELEASE_EVERY: usize = 16 << 20;

/// A read-only mapping of a whole file; unmapped on drop.
pub struct Mapping {
    ptr: *const u8,
    len: usize,
    /// Everything before this offset has been released (page-aligned).
    released: usize,
}

// SAFETY: the mapping is read-only and owned; no interior mutability is exposed.
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Map `file` (of `len` bytes, > 0). `None` when the platform or the file does not allow it.
    #[cfg(unix)]
    pub fn new(file: &File, len: u64) -> Option<Mapping> {
        use std::os::unix::io::AsRawFd;
        let len = usize::try_from(len).ok().filter(|&l| l > 0)?;
        // SAFETY: a fresh private read-only mapping of a valid descriptor; checked for failure.
        let ptr = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_PRIVATE, file.as_raw_fd(), 0) };
        if ptr == libc::MAP_FAILED {
            return None;
        }
        // SAFETY: advice on our own mapping; failure is harmless (only a hint).
        unsafe { libc::madvise(ptr, len, libc::MADV_SEQUENTIAL) };
        let m = Mapping { ptr: ptr as *const u8, len, released: 0 };
        m.populate(0);
        Some(m)
    }

    #[cfg(not(unix))]
    pub fn new(_file: &File, _len: u64) -> Option<Mapping> {
        None
    }

    /// The mapped bytes.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` maps `len` readable bytes for as long as `self` lives.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// Tell the kernel the bytes before `pos` will not be read again (cheap when called per
    /// record: it acts only once per [`RELEASE_EVERY`] bytes).
    #[inline]
    pub fn consumed_up_to(&mut self, pos: usize) {
        if pos >= self.released + RELEASE_EVERY {
            self.release(pos);
        }
    }

    #[cold]
    fn release(&mut self, pos: usize) {
        // Keep the page holding `pos`: a record may still be borrowed from it.
        let upto = pos & !(page_size() - 1);
        if upto > self.released {
            #[cfg(unix)]
            // SAFETY: the range lies inside our mapping and nothing borrowed from it is alive
            // (callers release only bytes before the current record); the pages read back in
            // from the page cache if touched again.
            unsafe {
                libc::madvise(self.ptr.add(self.released) as *mut libc::c_void, upto - self.released, libc::MADV_DONTNEED)
            };
            self.released = upto;
        }
        self.populate(upto);
    }

    /// Map the pages of the two windows from `from` (page-aligned) ahead of use.
    fn populate(&self, from: usize) {
        let end = (from + 2 * RELEASE_EVERY).min(self.len);
        if from < end {
            #[cfg(target_os = "linux")]
            // SAFETY: advice on a range inside our mapping; an old kernel answers EINVAL, which
            // only means the pages fault in one by one as before.
            unsafe {
                libc::madvise(self.ptr.add(from) as *mut libc::c_void, end - from, libc::MADV_POPULATE_READ)
            };
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

impl Drop for Mapping {
    fn drop(&mut self) {
        #[cfg(unix)]
        // SAFETY: unmapping exactly what `new` mapped; no borrow of it outlives `self`.
        unsafe {
            libc::munmap(self.ptr as *mut libc::c_void, self.len)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_mapped_file_reads_back_its_bytes_and_survives_releases() {
        let dir = std::env::temp_dir().join(format!("tv_mapped_{}", std::process::id()));
        let mut f = File::create(&dir).unwrap();
        let data: Vec<u8> = (0..3 * 4096 + 17).map(|i| (i * 7 % 251) as u8).collect();
        f.write_all(&data).unwrap();
        drop(f);
        let f = File::open(&dir).unwrap();
        let mut m = Mapping::new(&f, data.len() as u64).expect("mmap works on a regular file");
        assert_eq!(m.bytes(), &data[..]);
        m.release(2 * 4096 + 5);
        // Released pages read back from the page cache with the same contents.
        assert_eq!(m.bytes(), &data[..]);
        std::fs::remove_file(&dir).unwrap();
    }
}
