//! Content types by file extension for the media an origin serves.
//!
//! Sources: RFC 8216 §4 (HLS playlists `application/vnd.apple.mpegurl`, `.ts` `video/mp2t`, fMP4
//! segments), ISO/IEC 23009-1 Annex C (DASH MPD `application/dash+xml`), RFC 8653 / the IANA
//! registry (`video/iso.segment` for `.m4s`), RFC 4337 (MP4).

use std::path::Path;

/// The `Content-Type` for a file.
pub fn content_type_of(path: &Path) -> &'static str {
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("m3u8") => "application/vnd.apple.mpegurl",
        Some("mpd") => "application/dash+xml",
        Some("ts") => "video/mp2t",
        Some("m4s") => "video/iso.segment",
        Some("mp4" | "m4v" | "cmfv") => "video/mp4",
        Some("m4a" | "cmfa") => "audio/mp4",
        Some("aac") => "audio/aac",
        Some("mp3") => "audio/mpeg",
        Some("webm") => "video/webm",
        Some("flv") => "video/x-flv",
        Some("vtt") => "text/vtt",
        Some("html" | "htm") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript",
        Some("json") => "application/json",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn playlists_and_segments_get_their_registered_types() {
        assert_eq!(content_type_of(Path::new("live/index.M3U8")), "application/vnd.apple.mpegurl");
        assert_eq!(content_type_of(Path::new("vod/manifest.mpd")), "application/dash+xml");
        assert_eq!(content_type_of(Path::new("seg1.ts")), "video/mp2t");
        assert_eq!(content_type_of(Path::new("chunk-1.m4s")), "video/iso.segment");
        assert_eq!(content_type_of(Path::new("movie.mp4")), "video/mp4");
        assert_eq!(content_type_of(Path::new("noext")), "application/octet-stream");
    }
}
