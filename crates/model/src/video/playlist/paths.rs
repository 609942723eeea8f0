//! The URL scheme of a tcpvideo origin: one place that writes and parses request paths, so the
//! playlists, the origin app and the player agree.
//!
//! ```text
//! /master.m3u8            HLS master playlist
//! /q{quality}/index.m3u8  HLS media playlist of one quality
//! /manifest.mpd           DASH MPD
//! /q{quality}/init.mp4    DASH initialization segment
//! /q{quality}/{k}.ts      HLS media segment k      (MPEG-TS, RFC 8216 §3.2)
//! /q{quality}/{k}.m4s     DASH media segment k     (SegmentTemplate $Number$ = k)
//! /video.mp4              the progressive-download file
//! ```

/// What a request path names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VideoPath {
    Master,
    MediaPlaylist { quality: usize },
    Mpd,
    Init { quality: usize },
    HlsSegment { quality: usize, segment: u64 },
    DashSegment { quality: usize, segment: u64 },
    Progressive,
}

impl VideoPath {
    /// The path, with a leading `/`.
    pub fn to_path(&self) -> String {
        match *self {
            VideoPath::Master => "/master.m3u8".into(),
            VideoPath::MediaPlaylist { quality } => format!("/q{quality}/index.m3u8"),
            VideoPath::Mpd => "/manifest.mpd".into(),
            VideoPath::Init { quality } => format!("/q{quality}/init.mp4"),
            VideoPath::HlsSegment { quality, segment } => format!("/q{quality}/{segment}.ts"),
            VideoPath::DashSegment { quality, segment } => format!("/q{quality}/{segment}.m4s"),
            VideoPath::Progressive => "/video.mp4".into(),
        }
    }

    /// Parse a request path (a query string is ignored); `None` for anything else.
    pub fn parse(path: &str) -> Option<VideoPath> {
        let path = path.split(['?', '#']).next().unwrap_or("");
        match path {
            "/master.m3u8" => return Some(VideoPath::Master),
            "/manifest.mpd" => return Some(VideoPath::Mpd),
            "/video.mp4" => return Some(VideoPath::Progressive),
            _ => {}
        }
        let rest = path.strip_prefix("/q")?;
        let (q, file) = rest.split_once('/')?;
        if q.is_empty() || !q.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let quality: usize = q.parse().ok()?;
        match file {
            "index.m3u8" => Some(VideoPath::MediaPlaylist { quality }),
            "init.mp4" => Some(VideoPath::Init { quality }),
            _ => {
                let (k, ext) = file.split_once('.')?;
                if k.is_empty() || !k.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                let segment: u64 = k.parse().ok()?;
                match ext {
                    "ts" => Some(VideoPath::HlsSegment { quality, segment }),
                    "m4s" => Some(VideoPath::DashSegment { quality, segment }),
                    _ => None,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_path_parses_back_to_itself() {
        for p in [
            VideoPath::Master,
            VideoPath::MediaPlaylist { quality: 3 },
            VideoPath::Mpd,
            VideoPath::Init { quality: 0 },
            VideoPath::HlsSegment {
                quality: 5,
                segment: 599,
            },
            VideoPath::DashSegment {
                quality: 1,
                segment: 0,
            },
            VideoPath::Progressive,
        ] {
            assert_eq!(VideoPath::parse(&p.to_path()), Some(p));
        }
    }

    #[test]
    fn foreign_paths_are_not_video() {
        for p in [
            "/",
            "/q/1.ts",
            "/qx/1.ts",
            "/q1/-1.ts",
            "/q1/1.mp3",
            "/q1/.ts",
            "/q1/1.ts/x",
            "q1/1.ts",
        ] {
            assert_eq!(VideoPath::parse(p), None, "{p}");
        }
        assert_eq!(
            VideoPath::parse("/q1/7.ts?x=1"),
            Some(VideoPath::HlsSegment {
                quality: 1,
                segment: 7
            })
        );
    }
}
