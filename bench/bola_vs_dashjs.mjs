// Run dash.js's own BolaRule.js on the scripted session in
// crates/model/src/video/abr/testdata/bola_dashjs_trace.txt and write its decisions back as
// `expect` lines, which tcpvideo's bola.rs test then must reproduce.
//
// Usage: node bench/bola_vs_dashjs.mjs DASHJS_DIR [TRACE]
//   DASHJS_DIR: a dash.js checkout (read at 5.1.1, commit ccf3b95) whose src/ runs as ES modules:
//     git clone https://github.com/Dash-Industry-Forum/dash.js && cd dash.js &&
//     echo '{"type":"module"}' > src/package.json && npm install --ignore-scripts
//   (its runtime dependencies only are needed: path-browserify, ua-parser-js, imsc, @svta/cml-*, ...)
//
// dash.js objects the rule talks to are stubbed with the scripted values: the buffer level
// (DashMetrics), the safe throughput (ThroughputController, 0.9 × the scripted throughput), the
// representations (AbrController), Date.now() for the placeholder-buffer clock. Events are the
// real EventBus: METRIC_ADDED and MEDIA_FRAGMENT_LOADED after each download, BUFFER_EMPTY on a stall.
import fs from 'node:fs';
import path from 'node:path';
import url from 'node:url';

const [dashDir, traceArg] = process.argv.slice(2);
if (!dashDir) {
    console.error('usage: node bench/bola_vs_dashjs.mjs DASHJS_DIR [TRACE]');
    process.exit(2);
}
const here = path.dirname(url.fileURLToPath(import.meta.url));
const tracePath = traceArg || path.join(here, '../crates/model/src/video/abr/testdata/bola_dashjs_trace.txt');
const src = (p) => url.pathToFileURL(path.join(path.resolve(dashDir), 'src', p)).href;

const BolaRule = (await import(src('streaming/rules/abr/BolaRule.js'))).default;
const AbrController = (await import(src('streaming/controllers/AbrController.js'))).default;
const EventBus = (await import(src('core/EventBus.js'))).default;
const Events = (await import(src('core/events/Events.js'))).default;
const MediaPlayerEvents = (await import(src('streaming/MediaPlayerEvents.js'))).default;

const LADDER_KBPS = [250, 500, 750, 1000, 1500, 3000];
const BUFFER_TARGET_S = 30;
const SEGMENT_S = 2;
const SAFETY = 0.9;

let nowMs = 0;
Date.now = () => nowMs;
let bufferS = 0;
let safeKbps = NaN;
let lastDelayMs = 0;

const context = {};
const mediaInfo = { type: 'video' };
const reps = LADDER_KBPS.map((k, i) => ({ bandwidth: k * 1000, absoluteIndex: i, mediaInfo }));
const abr = AbrController(context).getInstance();
abr.getPossibleVoRepresentationsFilteredBySettings = () => reps;
abr.getOptimalRepresentationForBitrate = (_mi, kbps) => {
    let best = reps[0];
    for (const r of reps) {
        if (r.bandwidth <= kbps * 1000) best = r;
    }
    return best;
};
abr.isPlayingAtTopQuality = (r) => r.absoluteIndex === reps.length - 1;
const eventBus = EventBus(context).getInstance();
const rule = BolaRule(context).create({
    dashMetrics: { getCurrentBufferLevel: () => bufferS },
    mediaPlayerModel: { getBufferTimeDefault: () => BUFFER_TARGET_S },
});
const rulesContext = {
    getMediaType: () => 'video',
    getMediaInfo: () => mediaInfo,
    getStreamInfo: () => ({ id: 's' }),
    getThroughputController: () => ({ getSafeAverageThroughput: () => safeKbps }),
    getScheduleController: () => ({ setTimeToLoadDelay: (ms) => { lastDelayMs = ms; } }),
    getAbrController: () => abr,
};

const out = [];
let lastQuality = 0;
let segmentStart = 0;
for (const line of fs.readFileSync(tracePath, 'utf8').split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f[0] === 'expect') continue;
    out.push(line);
    if (f[0] === 'decide') {
        nowMs = Number(f[1]);
        bufferS = Number(f[2]) / 1000;
        safeKbps = f[3] === '-' ? NaN : Number(f[3]) * SAFETY;
        lastDelayMs = 0;
        const req = rule.getSwitchRequest(rulesContext);
        const q = req.representation ? req.representation.absoluteIndex : null;
        if (q !== null) lastQuality = q;
        out.push(`expect ${q === null ? '-' : q} ${Math.round(lastDelayMs)}`);
    } else if (f[0] === 'download') {
        const [reqMs, finMs, bufMs] = f.slice(1).map(Number);
        nowMs = finMs;
        bufferS = bufMs / 1000;
        const representation = reps[lastQuality];
        eventBus.trigger(Events.MEDIA_FRAGMENT_LOADED, {
            streamId: 's',
            chunk: { start: segmentStart, duration: SEGMENT_S, representation },
        });
        eventBus.trigger(MediaPlayerEvents.METRIC_ADDED, {
            mediaType: 'video',
            metric: 'HttpList',
            value: { type: 'MediaSegment', trace: [{}], _streamId: 's', trequest: new Date(reqMs), _tfinish: new Date(finMs) },
        });
        segmentStart += SEGMENT_S;
    } else if (f[0] === 'stall') {
        nowMs = Number(f[1]);
        eventBus.trigger(MediaPlayerEvents.BUFFER_EMPTY, { mediaType: 'video', streamId: 's' });
    }
}
fs.writeFileSync(tracePath, out.join('\n'));
console.log(out.filter((l) => l.startsWith('expect')).join('\n'));
