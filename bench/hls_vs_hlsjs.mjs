// Feed the HLS playlists tcpvideo's video model writes to hls.js's own M3U8Parser (the parser
// hls.js players run) and check what hls.js reads from them.
//
// Usage:
//   cargo run -p tcpvideo-model --release --example video_playlists -- /tmp/playlists
//   (cd /tmp/hlsjs && npm install hls.js)            # checked with hls.js 1.7.4
//   node bench/hls_vs_hlsjs.mjs /tmp/hlsjs/node_modules/hls.js /tmp/playlists
// Exit status 1 on any mismatch.
import fs from 'node:fs';
import path from 'node:path';
import url from 'node:url';

const [hlsDir, plDir] = process.argv.slice(2);
if (!hlsDir || !plDir) {
    console.error('usage: node bench/hls_vs_hlsjs.mjs HLSJS_PACKAGE_DIR PLAYLIST_DIR');
    process.exit(2);
}
globalThis.self = globalThis.self || globalThis;
const { M3U8Parser } = await import(url.pathToFileURL(path.join(path.resolve(hlsDir), 'dist/hls.mjs')).href);
const read = (f) => fs.readFileSync(path.join(plDir, f), 'utf8');
let failures = 0;
const check = (name, got, want) => {
    const ok = JSON.stringify(got) === JSON.stringify(want);
    if (!ok) failures++;
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}: ${JSON.stringify(got)}${ok ? '' : ` (want ${JSON.stringify(want)})`}`);
};

const master = M3U8Parser.parseMasterPlaylist(read('master.m3u8'), 'http://origin/master.m3u8');
check('master parsing error', master.playlistParsingError && String(master.playlistParsingError), null);
check('master levels (bitrate, url, codecs)', master.levels.map((l) => [l.bitrate, l.url, l.attrs.CODECS]),
    [250000, 500000, 750000, 1000000, 1500000, 3000000].map((b, q) => [b, `http://origin/q${q}/index.m3u8`, 'avc1.64001f']));

// the live playlist is taken 61 s after t0 = 10 s: segments 25..29 in a 5-segment window
const live = M3U8Parser.parseLevelPlaylist(read('live.m3u8'), 'http://origin/q1/index.m3u8', 0, 'main', 0, null);
check('live: live, first and last sequence number, target duration', [live.live, live.startSN, live.endSN, live.targetduration], [true, 25, 29, 2]);
check('live: fragments (url, duration)', live.fragments.map((f) => [f.url, f.duration]),
    [25, 26, 27, 28, 29].map((k) => [`http://origin/q1/${k}.ts`, 2]));

const vod = M3U8Parser.parseLevelPlaylist(read('vod.m3u8'), 'http://origin/q1/index.m3u8', 0, 'main', 0, null);
check('vod: live, type, first and last sequence number, total duration, fragments',
    [vod.live, vod.type, vod.startSN, vod.endSN, vod.totalduration, vod.fragments.length], [false, 'VOD', 0, 599, 1200, 600]);
process.exit(failures ? 1 : 0);
