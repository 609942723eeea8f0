//! Which file a request path names, and the guarantee that it lies inside the served root.
//!
//! Two gates, so that a mistake in one is caught by the other:
//! 1. **Lexical** ([`decode_request_path`]): the path must be origin-form ("/..."), and after
//!    percent-decoding (RFC 3986 §2.1) it must have no "." or ".." segment, no encoded slash
//!    ("%2F": a segment that is really two), no backslash, no NUL and valid UTF-8. Such requests
//!    are refused (403) before the file system is asked anything.
//! 2. **Beneath** ([`ServedRoot::open`]): the file is opened with `openat2(2)` relative to a
//!    descriptor of the root with `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`: the kernel refuses
//!    (EXDEV) any resolution — a "..", an absolute symlink, a relative symlink climbing out — that
//!    would leave the root, in the same call that opens the file, so there is no window between
//!    a check and the open. A relative symlink inside the root to a file inside it is followed.
//!    Only regular files are served. RESOLVE_BENEATH also refuses absolute symlinks, even those
//!    pointing back inside; for those (EXDEV) the canonical check below decides. Where `openat2` is missing (Linux < 5.6: ENOSYS) the path is
//!    canonicalised (`realpath(3)`) and must start with the canonical root (a check-then-open
//!    window remains there; a root writable by untrusted users is not a supported setup).
//!
//! `openat2` is also the fast path: one syscall where `realpath` costs a `readlink` per path
//! component (it was the origin's largest user-space cost per small request under wrk).

use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use thiserror::Error;

/// Why a request path is not served.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum PathRefused {
    /// The path tries to leave the root or is malformed: 403.
    #[error("path refused: {0}")]
    Forbidden(&'static str),
    /// Nothing (or no regular file) there: 404.
    #[error("not found")]
    NotFound,
}

/// Percent-decode `raw` (the request target's path, without the query) into the segments it names.
pub fn decode_request_path(raw: &str) -> Result<Vec<String>, PathRefused> {
    if !raw.starts_with('/') {
        return Err(PathRefused::Forbidden("not origin-form"));
    }
    let mut segments = Vec::new();
    for raw_segment in raw.split('/').skip(1) {
        let bytes = percent_decode(raw_segment).ok_or(PathRefused::Forbidden("bad percent-encoding"))?;
        if bytes.contains(&b'/') {
            return Err(PathRefused::Forbidden("encoded slash"));
        }
        if bytes.contains(&b'\\') || bytes.contains(&0) {
            return Err(PathRefused::Forbidden("backslash or NUL"));
        }
        let segment = String::from_utf8(bytes).map_err(|_| PathRefused::Forbidden("not UTF-8"))?;
        match segment.as_str() {
            "." | ".." => return Err(PathRefused::Forbidden("dot segment")),
            "" => continue, // "//" and a trailing "/" name nothing extra
            _ => segments.push(segment),
        }
    }
    Ok(segments)
}

fn percent_decode(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b.get(i + 1..i + 3)?;
            let hi = (hex[0] as char).to_digit(16)?;
            let lo = (hex[1] as char).to_digit(16)?;
            out.push((hi * 16 + lo) as u8);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(out)
}

/// The directory the origin serves, canonicalised and opened once at start.
#[derive(Debug)]
pub struct ServedRoot {
    canonical: PathBuf,
    dir: File,
}

/// A file opened for a request.
#[derive(Debug)]
pub struct ServedFile {
    pub file: File,
    pub length: u64,
    pub modified: Option<SystemTime>,
    /// The request's last path segment (its extension gives the content type).
    pub name: String,
}

/// `struct open_how` (include/uapi/linux/openat2.h).
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}
const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
const RESOLVE_BENEATH: u64 = 0x08;

impl ServedRoot {
    /// `dir` must exist and be a directory.
    pub fn new(dir: &Path) -> std::io::Result<ServedRoot> {
        let canonical = std::fs::canonicalize(dir)?;
        if !canonical.is_dir() {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{} is not a directory", dir.display())));
        }
        let dir = File::open(&canonical)?;
        Ok(ServedRoot { canonical, dir })
    }

    pub fn path(&self) -> &Path {
        &self.canonical
    }

    /// Open the regular file `raw_path` names inside the root (O_NONBLOCK: a FIFO placed in the
    /// root must not block the open; it is then refused as not a regular file).
    pub fn open(&self, raw_path: &str) -> Result<ServedFile, PathRefused> {
        let segments = decode_request_path(raw_path)?;
        let name = segments.last().cloned().unwrap_or_default();
        let file = match self.open_beneath(&segments.join("/")) {
            Ok(f) => f,
            // ENOSYS: no openat2. EXDEV: the walk left the root or met an absolute symlink, which
            // RESOLVE_BENEATH refuses even when it points back inside; the canonical check decides.
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSYS) | Some(libc::EXDEV)) => self.open_canonical(&segments)?,
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(PathRefused::Forbidden("symlink loop")),
            Err(_) => return Err(PathRefused::NotFound),
        };
        match file.metadata() {
            Ok(m) if m.is_file() => Ok(ServedFile { length: m.len(), modified: m.modified().ok(), file, name }),
            _ => Err(PathRefused::NotFound),
        }
    }

    fn open_beneath(&self, relative: &str) -> std::io::Result<File> {
        let path = std::ffi::CString::new(if relative.is_empty() { "." } else { relative }).map_err(std::io::Error::other)?;
        let how = OpenHow {
            flags: (libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOCTTY | libc::O_NONBLOCK) as u64,
            mode: 0,
            resolve: RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
        };
        // SAFETY: valid NUL-terminated path and open_how for the duration of the call.
        let fd = unsafe {
            libc::syscall(libc::SYS_openat2, self.dir.as_raw_fd(), path.as_ptr(), &how as *const OpenHow, std::mem::size_of::<OpenHow>())
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: a new fd owned from here on.
        Ok(unsafe { File::from_raw_fd(fd as i32) })
    }

    fn open_canonical(&self, segments: &[String]) -> Result<File, PathRefused> {
        let mut joined = self.canonical.clone();
        for s in segments {
            joined.push(s);
        }
        let canonical = std::fs::canonicalize(&joined).map_err(|_| PathRefused::NotFound)?;
        if !canonical.starts_with(&self.canonical) {
            return Err(PathRefused::Forbidden("resolves outside the root"));
        }
        File::open(&canonical).map_err(|_| PathRefused::NotFound)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_segments_in_any_spelling_are_forbidden() {
        for p in ["/../etc/passwd", "/a/%2e%2e/b", "/a/%2E%2e/b", "/a/.%2e/b", "/a/./b", "/.."] {
            assert_eq!(decode_request_path(p), Err(PathRefused::Forbidden("dot segment")), "{p}");
        }
    }

    #[test]
    fn encoded_slashes_backslashes_and_nul_are_forbidden() {
        assert_eq!(decode_request_path("/a%2f..%2fb"), Err(PathRefused::Forbidden("encoded slash")));
        assert_eq!(decode_request_path("/a%5c..%5cb"), Err(PathRefused::Forbidden("backslash or NUL")));
        assert_eq!(decode_request_path("/a%00.ts"), Err(PathRefused::Forbidden("backslash or NUL")));
        assert_eq!(decode_request_path("/a%zz"), Err(PathRefused::Forbidden("bad percent-encoding")));
        assert_eq!(decode_request_path("relative"), Err(PathRefused::Forbidden("not origin-form")));
    }

    #[test]
    fn ordinary_paths_decode_into_their_segments() {
        assert_eq!(decode_request_path("/live/hd%20cam/seg%31.ts").unwrap(), vec!["live", "hd cam", "seg1.ts"]);
        assert_eq!(decode_request_path("//a///b/").unwrap(), vec!["a", "b"]);
    }

    #[test]
    fn a_symlink_out_of_the_root_is_forbidden_and_one_inside_is_served() {
        let base = std::env::temp_dir().join(format!("tcpvideo-origin-served-path-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("root/sub")).unwrap();
        std::fs::write(base.join("secret.txt"), "outside").unwrap();
        std::fs::write(base.join("root/sub/seg.ts"), "inside").unwrap();
        std::os::unix::fs::symlink(base.join("secret.txt"), base.join("root/leak.txt")).unwrap();
        std::os::unix::fs::symlink(base.join("root/sub/seg.ts"), base.join("root/alias.ts")).unwrap();
        let root = ServedRoot::new(&base.join("root")).unwrap();
        assert_eq!(root.open("/leak.txt").unwrap_err(), PathRefused::Forbidden("resolves outside the root"));
        let alias = root.open("/alias.ts").unwrap();
        assert_eq!((alias.length, alias.name.as_str()), (6, "alias.ts"));
        assert_eq!(root.open("/sub").unwrap_err(), PathRefused::NotFound);
        assert_eq!(root.open("/missing.ts").unwrap_err(), PathRefused::NotFound);
        // The fallback path gives the same answers.
        assert_eq!(root.open_canonical(&["leak.txt".into()]).unwrap_err(), PathRefused::Forbidden("resolves outside the root"));
        assert!(root.open_canonical(&["alias.ts".into()]).is_ok());
        std::fs::remove_dir_all(&base).unwrap();
    }
}
