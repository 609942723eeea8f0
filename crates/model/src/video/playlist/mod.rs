//! Playlists as real text: HLS media and master playlists (RFC 8216) in [`hls`], the DASH MPD
//! (ISO/IEC 23009-1) in [`dash`], and the URL scheme shared by both and by the origin that serves
//! them in [`paths`].

pub mod dash;
pub mod hls;
pub mod paths;
