// Feed the MPDs tcpvideo's video model writes to dash.js's own DashParser (dash.js 5.1.1, the
// parser dash.js players run) and check what dash.js reads from them.
//
// Usage:
//   cargo run -p tcpvideo-model --release --example video_playlists -- /tmp/playlists
//   node bench/mpd_vs_dashjs.mjs DASHJS_DIR /tmp/playlists
// DASHJS_DIR is prepared as for bench/bola_vs_dashjs.mjs. Exit status 1 on any mismatch.
import fs from 'node:fs';
import path from 'node:path';
import url from 'node:url';

const [dashDir, plDir] = process.argv.slice(2);
if (!dashDir || !plDir) {
    console.error('usage: node bench/mpd_vs_dashjs.mjs DASHJS_DIR PLAYLIST_DIR');
    process.exit(2);
}
globalThis.window = globalThis.window || { performance };
const src = (p) => url.pathToFileURL(path.join(path.resolve(dashDir), 'src', p)).href;
const DashParser = (await import(src('dash/parser/DashParser.js'))).default;
const Debug = (await import(src('core/Debug.js'))).default;

const context = {};
const parser = DashParser(context).create({ debug: Debug(context).getInstance() });
let failures = 0;
const check = (name, got, want) => {
    const ok = JSON.stringify(got) === JSON.stringify(want);
    if (!ok) failures++;
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}: ${JSON.stringify(got)}${ok ? '' : ` (want ${JSON.stringify(want)})`}`);
};

for (const [file, dynamic] of [['vod.mpd', false], ['live.mpd', true]]) {
    const m = parser.parse(fs.readFileSync(path.join(plDir, file), 'utf8'));
    const period = m.Period[0];
    const as = period.AdaptationSet[0];
    const tpl = as.SegmentTemplate;
    check(`${file} type`, m.type, dynamic ? 'dynamic' : 'static');
    check(`${file} profiles`, m.profiles, 'urn:mpeg:dash:profile:isoff-live:2011');
    check(`${file} representations`, as.Representation.map((r) => [r.id, r.bandwidth]),
        [['0', 250000], ['1', 500000], ['2', 750000], ['3', 1000000], ['4', 1500000], ['5', 3000000]]);
    check(`${file} segment template`, [tpl.media, tpl.initialization, tpl.duration, tpl.timescale, tpl.startNumber],
        ['q$RepresentationID$/$Number$.m4s', 'q$RepresentationID$/init.mp4', 2000, 1000, 0]);
    check(`${file} minBufferTime (s)`, m.minBufferTime, 2);
    if (dynamic) {
        check(`${file} availabilityStartTime`, m.availabilityStartTime.toISOString(), '2026-11-23T00:00:10.000Z');
        check(`${file} publishTime`, m.publishTime.toISOString(), '2026-11-23T00:01:11.000Z');
        check(`${file} minimumUpdatePeriod (s)`, m.minimumUpdatePeriod, 2);
        check(`${file} timeShiftBufferDepth (s)`, m.timeShiftBufferDepth, 10);
    } else {
        check(`${file} mediaPresentationDuration (s)`, m.mediaPresentationDuration, 1200);
    }
}
process.exit(failures ? 1 : 0);
