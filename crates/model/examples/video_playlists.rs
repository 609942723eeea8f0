//! Write the playlists tcpvideo's video model generates into a directory, for checking them with
//! other people's parsers (`bench/mpd_vs_dashjs.mjs` feeds the MPDs to dash.js's DashParser).
//!
//! Usage: `cargo run -p tcpvideo-model --release --example video_playlists -- OUT_DIR`
//! Content: seed 004's ladder, 2 s segments, 600 segments (20 minutes), CBR; the live playlists
//! are taken 61 s after t0 = 10 s with a 5-segment window; epoch 2026-11-23T00:00:00Z.

use std::time::Duration;

use tcpvideo_model::video::playlist::{dash, hls};
use tcpvideo_model::video::{Content, Ladder, LiveSource};
use tcpvideo_model::Time;

fn main() {
    let Some(out) = std::env::args().nth(1) else {
        eprintln!("usage: video_playlists OUT_DIR");
        std::process::exit(2);
    };
    let d = Duration::from_secs(2);
    let content = Content::cbr(Ladder::seed004(), d, 600).expect("seed 004 content");
    let live = LiveSource::new(Time::from_secs(10), d, 600, 5).expect("live source");
    let now = Time::from_secs(71);
    let epoch_ns = 1_795_392_000 * 1_000_000_000;
    let files = [
        ("master.m3u8", hls::master_playlist(&content)),
        ("vod.m3u8", hls::vod_media_playlist(&content)),
        ("live.m3u8", hls::live_media_playlist(&live, now)),
        ("vod.mpd", dash::vod_mpd(&content)),
        ("live.mpd", dash::live_mpd(&content, &live, now, epoch_ns)),
    ];
    std::fs::create_dir_all(&out).unwrap_or_else(|e| panic!("{out}: {e}"));
    for (name, text) in files {
        let path = std::path::Path::new(&out).join(name);
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        println!("{}", path.display());
    }
}
