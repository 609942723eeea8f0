//! A cold edge (a stream's first viewer): what the edge sends upstream before and while the first
//! player starts (docs/edge_demo.md "Cold-edge startup"). The scripted source logs which TCP
//! connection carried each request and when it arrived, so these tests see the edge's upstream
//! behaviour from outside the edge.

mod common;

use std::time::{Duration, Instant};

use common::{get, start_edge, Source};

/// Wait until `done` holds or 3 s pass.
async fn eventually(done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(3);
    while !done() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_streams_bitrate_comes_from_its_newest_segments_get_without_a_head_and_playlists_share_one_connection() {
    // No EXT-X-BITRATE: the bitrate is the newest segment's (30) size over its EXTINF, read from
    // the Content-Length of the GET that fetches it anyway. No RTT override: the stream's
    // backhaul sample has to come from TCP_INFO on the playlist's socket.
    let source = Source::start(30, 10_000, 0).await;
    let edge = start_edge(&source, |_| {}).await;
    assert_eq!(get(edge.addr, "/live/stream.m3u8", &[("X-Receiver-Id", "first")]).await.status, 200);
    eventually(|| edge.edge.stream_x("/live/stream.m3u8").is_some()).await;
    assert!(edge.edge.stream_x("/live/stream.m3u8").is_some(), "no policy from the newest segment's size");
    assert_eq!(get(edge.addr, "/live/stream.m3u8", &[("X-Receiver-Id", "first")]).await.status, 200);
    let requests = source.state.requests.lock().unwrap().clone();
    assert!(requests.iter().all(|r| r.method == "GET"), "a request other than GET (the bitrate HEAD?): {requests:?}");
    assert_eq!(source.fetches("/live/seg30.ts"), 1, "the newest segment was fetched twice");
    let playlists = source.requests_for("/live/stream.m3u8");
    assert_eq!(playlists.len(), 2);
    assert!(playlists.iter().all(|r| r.connection == playlists[0].connection), "{playlists:?}");
    let metrics = get(edge.addr, "/metrics", &[]).await.text();
    let rtt_line = metrics.lines().find(|l| l.starts_with("ethle_stream_backhaul_rtt_microseconds{stream=\"/live/stream.m3u8\"}"));
    let rtt_us: u64 = rtt_line.and_then(|l| l.rsplit(' ').next()).and_then(|v| v.parse().ok()).unwrap_or(0);
    assert!(rtt_us > 0, "no backhaul RTT from TCP_INFO: {metrics}");
    // Segments (the start-up prefetch, the size probe among them) each have a connection of their own.
    eventually(|| source.fetches("/live/seg27.ts") > 0).await;
    let mut segment_connections: Vec<u64> = source
        .state
        .requests
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.path.ends_with(".ts") && r.method == "GET")
        .map(|r| r.connection)
        .collect();
    let fetched = segment_connections.len();
    assert!(fetched >= 1, "no segment fetched");
    segment_connections.sort_unstable();
    segment_connections.dedup();
    assert_eq!(segment_connections.len(), fetched, "two segment fetches shared a connection");
    assert!(!segment_connections.contains(&playlists[0].connection), "a segment went over the playlist's keep-alive connection");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cold_edges_first_playlist_also_fetches_where_a_new_hls_js_player_starts() {
    // 15 Mbit/s, 2-s segments, 302 ms: x = 2, so the player is shown up to 28 and hls.js starts
    // 3 target durations before its end (segment 25..28 depending on rounding). The edge fetches
    // 25..=28 with the held 29 and 30, before the player asks for any segment.
    let source = Source::start(30, 10_000, 15_000).await;
    let edge = start_edge(&source, |c| c.backhaul_rtt_override = Some(Duration::from_millis(302))).await;
    let served = get(edge.addr, "/live/stream.m3u8", &[("X-Receiver-Id", "first"), ("X-Ran-Throughput-Kbps", "100000")]).await;
    assert!(served.text().trim_end().ends_with("seg28.ts"), "{}", served.text());
    let startup = ["/live/seg25.ts", "/live/seg26.ts", "/live/seg27.ts", "/live/seg28.ts", "/live/seg29.ts", "/live/seg30.ts"];
    eventually(|| startup.iter().all(|p| source.fetches(p) > 0)).await;
    assert_eq!(startup.map(|p| source.fetches(p)), [1; 6]);
    assert_eq!(source.fetches("/live/seg24.ts"), 0, "fetched further back than hls.js starts");
    // The player's own request for its start segment is served from that fetch (no second one),
    // and the next viewer is not a new start-up: nothing more is fetched for it.
    let first = get(edge.addr, "/live/seg26.ts", &[("X-Receiver-Id", "first")]).await;
    assert!(first.complete);
    assert_eq!(first.body, common::segment_body(26, 10_000));
    get(edge.addr, "/live/stream.m3u8", &[("X-Receiver-Id", "first")]).await;
    assert_eq!(startup.map(|p| source.fetches(p)), [1; 6]);
    assert_eq!(source.fetches("/live/seg24.ts"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_playlist_connections_opened_and_reused_and_segment_fetches_on_preconnected_ones() {
    let source = Source::start(30, 10_000, 15_000).await;
    let edge = start_edge(&source, |c| c.backhaul_rtt_override = Some(Duration::from_millis(302))).await;
    let counter = |text: &str, name: &str| -> Option<u64> {
        text.lines().find(|l| l.starts_with(name) && l[name.len()..].starts_with(' ')).and_then(|l| l.rsplit(' ').next()?.parse().ok())
    };
    let before = get(edge.addr, "/metrics", &[]).await.text();
    assert_eq!(counter(&before, "ethle_upstream_small_connections_opened_total"), Some(0), "{before}");
    assert_eq!(counter(&before, "ethle_upstream_small_requests_reused_total"), Some(0));
    for _ in 0..3 {
        assert_eq!(get(edge.addr, "/live/stream.m3u8", &[("X-Receiver-Id", "first")]).await.status, 200);
    }
    eventually(|| edge.edge.client.preconnected.used() >= 1).await;
    let after = get(edge.addr, "/metrics", &[]).await.text();
    let (opened, reused) = edge.edge.client.small_pool.counts();
    assert_eq!((opened, reused), (1, 2), "three playlists: one connection, reused twice");
    assert_eq!(counter(&after, "ethle_upstream_small_connections_opened_total"), Some(1), "{after}");
    assert_eq!(counter(&after, "ethle_upstream_small_requests_reused_total"), Some(2));
    let used = counter(&after, "ethle_upstream_preconnected_used_total").expect("preconnected counter");
    assert!(used <= edge.edge.client.preconnected.used(), "{after}");
}

/// The emulated backhaul round trip of the timing tests (seed 002's Australia: 302 ms).
const RTT: Duration = Duration::from_millis(300);
/// Slack on top of a whole number of RTTs: loopback, parsing, scheduling on a loaded machine.
const SLACK: Duration = Duration::from_millis(150);

/// A 15.6 Mbit/s, 2-s stream (3.9 MB segments, sizes only from Content-Length) behind an
/// emulated 300 ms backhaul, and a cold edge in front of it (x = 2 once it knows the bitrate).
async fn far_stream_and_cold_edge() -> (Source, common::RunningEdge) {
    let source = Source::start(30, 3_900_000, 0).await;
    *source.state.rtt.lock().unwrap() = RTT;
    let edge = start_edge(&source, |c| {
        c.backhaul_rtt_override = Some(Duration::from_millis(302));
        c.header_timeout = Duration::from_secs(5); // handshake + request: 2 RTTs
        c.body_idle_timeout = Duration::from_secs(2);
    })
    .await;
    (source, edge)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_a_300_ms_backhaul_a_cold_edge_answers_the_first_playlist_in_two_rtts_and_the_first_segment_in_three_as_e2e() {
    // E2E, a player on a new connection to the source: handshake + playlist = 2 RTTs, then its
    // first segment's first byte one RTT later = 3 RTTs. The cold edge used to answer the
    // playlist after 3 (a HEAD for the bitrate after the playlist) and the first segment after 4.
    let (source, edge) = far_stream_and_cold_edge().await;
    let t0 = Instant::now();
    let ran = [("X-Receiver-Id", "player"), ("X-Ran-Throughput-Kbps", "100000")];
    let playlist = get(edge.addr, "/live/stream.m3u8", &ran).await;
    let answered = playlist.first_body_byte_at.expect("a playlist body") - t0;
    assert!(answered >= 2 * RTT, "the emulated backhaul is not in the way: {answered:?}");
    assert!(answered <= 2 * RTT + SLACK, "first playlist after {answered:?}, more than 2 RTTs");
    // The bitrate is not known yet: hold-0, the source's whole window (never waits for it).
    assert!(playlist.text().trim_end().ends_with("seg30.ts"), "{}", playlist.text());
    // hls.js starts 3 target durations before the end: segment 27.
    let first = get(edge.addr, "/live/seg27.ts", &ran).await;
    let first_byte = first.first_body_byte_at.expect("a segment body") - t0;
    assert!(first.complete);
    eprintln!("cold edge, RTT {RTT:?}: first playlist answered after {answered:?}, first segment's first byte after {first_byte:?}");
    assert!(first_byte <= 3 * RTT + SLACK, "first segment's first byte after {first_byte:?}, more than E2E's 3 RTTs");
    // The policy came from the newest segment's GET (its Content-Length), with no HEAD.
    eventually(|| edge.edge.stream_x("/live/stream.m3u8").is_some()).await;
    assert_eq!(edge.edge.stream_x("/live/stream.m3u8"), Some(2));
    assert!(source.state.requests.lock().unwrap().iter().all(|r| r.method == "GET"));
    // Moved hold-0 -> hold-x one way: the live edge it was shown never goes back (30), and it
    // advances again once the source is x segments past it.
    assert!(get(edge.addr, "/live/stream.m3u8", &ran).await.text().trim_end().ends_with("seg30.ts"));
    source.state.newest.store(33, std::sync::atomic::Ordering::SeqCst);
    let later = get(edge.addr, "/live/stream.m3u8", &ran).await.text();
    assert!(later.trim_end().ends_with("seg31.ts"), "not held by x = 2 after the move: {later}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_streams_start_up_segment_connections_are_opened_when_its_first_playlist_request_arrives() {
    // The start-up segments are fetched the moment the playlist arrives (2 RTTs in); their
    // connections, opened on the first request while the playlist is fetched, are ready by then.
    // Opened only once the playlist had arrived, each GET would wait one more RTT.
    let (source, edge) = far_stream_and_cold_edge().await;
    let ran = [("X-Receiver-Id", "player"), ("X-Ran-Throughput-Kbps", "100000")];
    assert_eq!(get(edge.addr, "/live/stream.m3u8", &ran).await.status, 200);
    let startup = ["/live/seg27.ts", "/live/seg28.ts", "/live/seg29.ts", "/live/seg30.ts"];
    eventually(|| startup.iter().all(|p| source.fetches(p) > 0)).await;
    let requests = source.state.requests.lock().unwrap().clone();
    let accepted = source.state.accepted_at.lock().unwrap().clone();
    let playlist_connection_opened = accepted[source.requests_for("/live/stream.m3u8")[0].connection as usize];
    for path in startup {
        let get = requests.iter().find(|r| r.path == path && r.method == "GET").expect("fetched");
        let opened = accepted[get.connection as usize];
        assert!(
            opened < playlist_connection_opened + RTT / 2,
            "{path}: its connection was opened {:?} after the playlist's",
            opened - playlist_connection_opened
        );
        assert_eq!(requests.iter().filter(|q| q.connection == get.connection).count(), 1, "{path}: a reused connection");
    }
    // The counter moves when the response headers are back, after the source logged the request.
    eventually(|| edge.edge.client.preconnected.used() >= 4).await;
    assert!(edge.edge.client.preconnected.used() >= 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_standby_connection_a_cold_edge_answers_the_first_playlist_in_one_rtt_and_the_first_segment_in_two() {
    // A player whose browser opened its connection ahead (the demo's chromium does, to the
    // page's origin) gets the playlist after 1 RTT and its first segment's first byte after 2.
    // The edge's standby connection to the source does the same for a new stream.
    let source = Source::start(30, 3_900_000, 0).await;
    *source.state.rtt.lock().unwrap() = RTT;
    let edge = start_edge(&source, |c| {
        c.backhaul_rtt_override = Some(Duration::from_millis(302));
        c.header_timeout = Duration::from_secs(5);
        c.body_idle_timeout = Duration::from_secs(2);
        c.standby_connection = true;
    })
    .await;
    eventually(|| edge.edge.client.small_pool.counts().0 == 1).await;
    tokio::time::sleep(RTT + RTT / 3).await; // its (emulated) handshake is over
    let t0 = Instant::now();
    let ran = [("X-Receiver-Id", "player"), ("X-Ran-Throughput-Kbps", "100000")];
    let playlist = get(edge.addr, "/live/stream.m3u8", &ran).await;
    let answered = playlist.first_body_byte_at.expect("a playlist body") - t0;
    let first = get(edge.addr, "/live/seg27.ts", &ran).await;
    let first_byte = first.first_body_byte_at.expect("a segment body") - t0;
    eprintln!("cold edge with a standby connection, RTT {RTT:?}: playlist after {answered:?}, first byte after {first_byte:?}");
    assert!(answered >= RTT && answered <= RTT + SLACK, "first playlist after {answered:?}, not 1 RTT");
    assert!(first.complete);
    assert!(first_byte <= 2 * RTT + SLACK, "first segment's first byte after {first_byte:?}, more than 2 RTTs");
    let playlists = source.requests_for("/live/stream.m3u8");
    assert_eq!(playlists[0].connection, 0, "the playlist did not ride the standby connection");
    assert_eq!(edge.edge.client.small_pool.counts().0, 1, "a second small-request connection was opened");
}
