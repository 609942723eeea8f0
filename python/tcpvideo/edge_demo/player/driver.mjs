// Drive hls.js in Debian's headless chromium (playwright-core, no browser download) and print
// one line `RESULT {json}` with what the player reported (see page.html).
//
//   node driver.mjs --url http://10.72.0.1:8080/live/stream.m3u8 --play-s 180 \
//        [--ran-kbps 100000] [--startup-timeout-s 60] [--chromium /usr/bin/chromium]
//
// The page is served by request interception at <stream origin>/__tcpvideo_player__/ so the
// stream is same-origin (no CORS on the origin or the edge); every other request goes to the
// network. Playback runs until --play-s seconds after the first `playing` event, or gives up
// --startup-timeout-s after loadSource without one.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const opts = { ranKbps: 0, playS: 30, startupTimeoutS: 60, chromium: '/usr/bin/chromium' };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i += 2) {
  const key = argv[i], value = argv[i + 1];
  if (value === undefined) { console.error(`${key}: missing value`); process.exit(2); }
  if (key === '--url') opts.url = value;
  else if (key === '--ran-kbps') opts.ranKbps = Number(value);
  else if (key === '--play-s') opts.playS = Number(value);
  else if (key === '--startup-timeout-s') opts.startupTimeoutS = Number(value);
  else if (key === '--chromium') opts.chromium = value;
  else { console.error(`unknown option ${key}`); process.exit(2); }
}
if (!opts.url) { console.error('--url: required'); process.exit(2); }
for (const k of ['ranKbps', 'playS', 'startupTimeoutS']) {
  if (!Number.isFinite(opts[k]) || opts[k] < 0) { console.error(`--${k}: expected a number >= 0`); process.exit(2); }
}

const pageBase = new URL('/__tcpvideo_player__/', opts.url).href;
const hlsPath = path.join(here, 'node_modules', 'hls.js', 'dist', 'hls.min.js');
const assets = {
  'index.html': ['text/html', fs.readFileSync(path.join(here, 'page.html'))],
  'hls.min.js': ['application/javascript', fs.readFileSync(hlsPath)],
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const browser = await chromium.launch({
  executablePath: opts.chromium,
  // Local Network Access (chromium >= 142) treats the intercepted page, which has no IP
  // address, as public and fails its requests to the 10.x stream (net::ERR_FAILED, no packet
  // sent); the demo's addresses are all private, so the check is switched off.
  args: ['--no-sandbox', '--autoplay-policy=no-user-gesture-required', '--disable-gpu',
         '--mute-audio', '--disable-dev-shm-usage',
         '--disable-features=LocalNetworkAccessChecks,BlockInsecurePrivateNetworkRequests,PrivateNetworkAccessSendPreflights'],
});
let result;
try {
  const page = await browser.newPage();
  page.on('console', (m) => { if (m.text().startsWith('ETHLE ')) console.log(m.text()); });
  page.on('requestfailed', (r) => console.log(`ETHLE requestfailed ${r.url()} ${r.failure()?.errorText}`));
  await page.route(pageBase + '*', (route) => {
    const name = new URL(route.request().url()).pathname.split('/').pop();
    const asset = assets[name];
    if (!asset) return route.fulfill({ status: 404, body: 'not found' });
    return route.fulfill({ status: 200, contentType: asset[0], body: asset[1] });
  });
  await page.goto(pageBase + 'index.html');
  const wallStart = Date.now();
  await page.evaluate(([u, k]) => window.ethleStart(u, k), [opts.url, opts.ranKbps]);
  let playingAt = null;
  while (playingAt === null && (Date.now() - wallStart) / 1000 < opts.startupTimeoutS) {
    await sleep(200);
    const s = await page.evaluate(() => window.ethleSummary());
    playingAt = s.playingAt;
    if (s.fatal) break;
  }
  if (playingAt !== null) {
    const endWall = wallStart + (playingAt + opts.playS) * 1000;
    while (Date.now() < endWall) {
      await sleep(Math.min(1000, endWall - Date.now()));
      const s = await page.evaluate(() => window.ethleSummary());
      if (s.fatal) break;
    }
  }
  result = await page.evaluate(() => window.ethleSummary());
} finally {
  await browser.close();
}
console.log('RESULT ' + JSON.stringify(result));
