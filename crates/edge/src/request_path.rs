//! Which paths the edge serves, and where a playlist's segment URI points.
//!
//! The edge serves only the upstream's namespace: a request path must be origin-form ("/..."),
//! without ".." or "." segments (also percent-encoded), without a backslash or NUL, and requests
//! in absolute form naming another host are refused. A segment URI found in a playlist is
//! resolved against the playlist's path (RFC 3986 §5.2, paths only) and followed for prefetch only
//! when it stays on the upstream (relative, or absolute on the upstream's own authority).
//!
//! Query parameters the edge consumes (`ran_kbps`, `receiver`) and the LL-HLS delivery directives
//! (`_HLS_msn`, `_HLS_part`, `_HLS_skip`) are not forwarded upstream; others are.

use thiserror::Error;

/// Query parameters for the edge itself, never forwarded.
pub const EDGE_QUERY_KEYS: [&str; 2] = ["ran_kbps", "receiver"];

#[derive(Debug, Error, PartialEq, Eq)]
pub enum PathRejected {
    #[error("path must start with '/': {0:?}")]
    NotOriginForm(String),
    #[error("path has a '..' or '.' segment: {0:?}")]
    DotSegment(String),
    #[error("path has a forbidden character: {0:?}")]
    ForbiddenCharacter(String),
    #[error("absolute URL names another host: {0:?}")]
    OtherHost(String),
}

/// A request path the edge may forward, with the query it forwards.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EdgePath {
    /// The path, as received (still percent-encoded).
    pub path: String,
    /// The query to forward upstream (without the edge's own keys), if any.
    pub forwarded_query: Option<String>,
}

impl EdgePath {
    /// Path and query as sent upstream (relative to the upstream's base path).
    pub fn path_and_query(&self) -> String {
        match &self.forwarded_query {
            Some(q) => format!("{}?{}", self.path, q),
            None => self.path.clone(),
        }
    }
}

/// Check a request target. `authority` is the request's absolute-form authority, if any, and
/// `allowed_authorities` the names the edge answers for (its own listen address and upstream).
pub fn check_request(
    authority: Option<&str>,
    path: &str,
    query: Option<&str>,
    allowed_authorities: &[&str],
) -> Result<EdgePath, PathRejected> {
    if let Some(a) = authority {
        if !allowed_authorities
            .iter()
            .any(|ok| ok.eq_ignore_ascii_case(a))
        {
            return Err(PathRejected::OtherHost(a.to_string()));
        }
    }
    check_path(path)?;
    Ok(EdgePath {
        path: path.to_string(),
        forwarded_query: forwarded_query(query),
    })
}

fn check_path(path: &str) -> Result<(), PathRejected> {
    if !path.starts_with('/') || path.starts_with("//") {
        return Err(PathRejected::NotOriginForm(path.to_string()));
    }
    let lowered = path.to_ascii_lowercase();
    if lowered.contains('\\')
        || lowered.contains("%5c")
        || lowered.contains("%00")
        || lowered.contains('\0')
    {
        return Err(PathRejected::ForbiddenCharacter(path.to_string()));
    }
    let decoded_dots = lowered.replace("%2e", ".");
    if decoded_dots.contains("%2f") {
        return Err(PathRejected::ForbiddenCharacter(path.to_string()));
    }
    if decoded_dots.split('/').any(|seg| seg == ".." || seg == ".") {
        return Err(PathRejected::DotSegment(path.to_string()));
    }
    Ok(())
}

fn forwarded_query(query: Option<&str>) -> Option<String> {
    let kept: Vec<&str> = query?
        .split('&')
        .filter(|kv| {
            let key = kv.split('=').next().unwrap_or("");
            !kv.is_empty() && !EDGE_QUERY_KEYS.contains(&key) && !key.starts_with("_HLS_")
        })
        .collect();
    (!kept.is_empty()).then(|| kept.join("&"))
}

/// The value of query key `key`, if present.
pub fn query_value<'a>(query: Option<&'a str>, key: &str) -> Option<&'a str> {
    query?.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        (k == key).then_some(v)
    })
}

/// Resolve a playlist's `reference` against the playlist's edge path; `None` when it leaves the
/// upstream (another host, or a path the edge would refuse).
pub fn resolve_reference(
    playlist_path: &str,
    reference: &str,
    upstream_authority: &str,
) -> Option<EdgePath> {
    let (target, query) = match reference.split_once('?') {
        Some((t, q)) => (t, Some(q)),
        None => (reference, None),
    };
    let absolute_path = if let Some(rest) = target.strip_prefix("http://") {
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        if !authority.eq_ignore_ascii_case(upstream_authority) {
            return None;
        }
        if path.is_empty() {
            "/".to_string()
        } else {
            path.to_string()
        }
    } else if target.contains("://") || target.starts_with("//") {
        return None;
    } else if target.starts_with('/') {
        target.to_string()
    } else {
        let base_dir = &playlist_path[..playlist_path.rfind('/').map_or(0, |i| i + 1)];
        format!("{base_dir}{target}")
    };
    let normalized = remove_dot_segments(&absolute_path)?;
    check_request(None, &normalized, query, &[]).ok()
}

/// RFC 3986 §5.2.4 on a path; `None` if ".." would climb above the root.
fn remove_dot_segments(path: &str) -> Option<String> {
    let mut out: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    let last = segments.len().saturating_sub(1);
    for (i, seg) in segments.iter().enumerate() {
        match *seg {
            "." => {
                if i == last {
                    out.push("");
                }
            }
            ".." => {
                out.pop()?;
                if i == last {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    Some(format!("/{}", out.join("/")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_dot_in_any_spelling_is_rejected() {
        for p in [
            "/live/../etc/passwd",
            "/live/%2e%2e/x",
            "/live/%2E./x",
            "/..",
            "/a/./b",
        ] {
            assert!(
                matches!(
                    check_request(None, p, None, &[]),
                    Err(PathRejected::DotSegment(_))
                ),
                "{p}"
            );
        }
    }

    #[test]
    fn absolute_urls_to_other_hosts_and_scheme_relative_paths_are_rejected() {
        assert_eq!(
            check_request(Some("evil.example:80"), "/x.ts", None, &["edge:8080"]),
            Err(PathRejected::OtherHost("evil.example:80".into()))
        );
        assert!(check_request(Some("EDGE:8080"), "/x.ts", None, &["edge:8080"]).is_ok());
        assert!(matches!(
            check_request(None, "//evil/x", None, &[]),
            Err(PathRejected::NotOriginForm(_))
        ));
        assert!(matches!(
            check_request(None, "/a%2f..%2fb", None, &[]),
            Err(PathRejected::ForbiddenCharacter(_))
        ));
    }

    #[test]
    fn edge_and_low_latency_query_keys_are_not_forwarded() {
        let p = check_request(
            None,
            "/s.m3u8",
            Some("ran_kbps=40000&token=abc&_HLS_msn=5&receiver=7"),
            &[],
        )
        .unwrap();
        assert_eq!(p.path_and_query(), "/s.m3u8?token=abc");
        assert_eq!(
            query_value(Some("a=1&ran_kbps=40000"), "ran_kbps"),
            Some("40000")
        );
    }

    #[test]
    fn relative_segment_uris_resolve_against_the_playlist_directory() {
        let r = |x| {
            resolve_reference("/live/hd/stream.m3u8", x, "origin:8000").map(|p| p.path_and_query())
        };
        assert_eq!(r("seg7.ts").as_deref(), Some("/live/hd/seg7.ts"));
        assert_eq!(
            r("../sd/seg7.ts?t=1").as_deref(),
            Some("/live/sd/seg7.ts?t=1")
        );
        assert_eq!(r("/other/seg.ts").as_deref(), Some("/other/seg.ts"));
        assert_eq!(
            r("http://origin:8000/live/a.ts").as_deref(),
            Some("/live/a.ts")
        );
        assert_eq!(r("http://cdn.elsewhere/live/a.ts"), None);
        assert_eq!(r("https://origin:8000/live/a.ts"), None);
        assert_eq!(r("../../../../x.ts"), None);
    }
}
