//! Which file a request path names, and the guarantee that it lies inside the served root.
//!
//! Two gates, so that a mistake in one is caught by the other:
//! 1. **Lexical** ([`decode_request_path`]): the path must be origin-form ("/..."), and after
//!    percent-decoding (RFC 3986 §2.1) it must have no "." or ".." segment, no encoded slash
//!    ("%2F": a segment that is really two), no backslash, no NUL and valid UTF-8. Such requests
//!    are refused (403) before the file system is asked anything.
//! 2. **Canonical** ([`ServedRoot::resolve`]): the joined path is canonicalised (`realpath(3)`:
//!    every symlink followed) and must still start with the canonical root; a symlink pointing
//!    out of the root is refused (403) even if the target exists. Only regular files are served.
//!
//! Deviation: between the canonical check and `open(2)` a symlink could be swapped in by someone
//! who can write inside the root (a TOCTOU window). The file opened is the canonical path, so the
//! swap would have to replace a directory on that path; a root writable by untrusted users is not
//! a supported setup (nginx's `disable_symlinks` has the same window without `O_PATH` walks).

use std::path::{Path, PathBuf};

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

/// The directory the origin serves, canonicalised once at start.
#[derive(Clone, Debug)]
pub struct ServedRoot {
    canonical: PathBuf,
}

impl ServedRoot {
    /// `dir` must exist and be a directory.
    pub fn new(dir: &Path) -> std::io::Result<ServedRoot> {
        let canonical = std::fs::canonicalize(dir)?;
        if !canonical.is_dir() {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{} is not a directory", dir.display())));
        }
        Ok(ServedRoot { canonical })
    }

    pub fn path(&self) -> &Path {
        &self.canonical
    }

    /// The canonical path of the regular file `raw_path` names inside the root.
    pub fn resolve(&self, raw_path: &str) -> Result<PathBuf, PathRefused> {
        let segments = decode_request_path(raw_path)?;
        let mut joined = self.canonical.clone();
        for s in &segments {
            joined.push(s);
        }
        let canonical = match std::fs::canonicalize(&joined) {
            Ok(p) => p,
            Err(_) => return Err(PathRefused::NotFound),
        };
        if !canonical.starts_with(&self.canonical) {
            return Err(PathRefused::Forbidden("resolves outside the root"));
        }
        match std::fs::metadata(&canonical) {
            Ok(m) if m.is_file() => Ok(canonical),
            _ => Err(PathRefused::NotFound),
        }
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
        assert_eq!(root.resolve("/leak.txt"), Err(PathRefused::Forbidden("resolves outside the root")));
        assert_eq!(root.resolve("/alias.ts").unwrap(), root.path().join("sub/seg.ts"));
        assert_eq!(root.resolve("/sub"), Err(PathRefused::NotFound));
        assert_eq!(root.resolve("/missing.ts"), Err(PathRefused::NotFound));
        std::fs::remove_dir_all(&base).unwrap();
    }
}
