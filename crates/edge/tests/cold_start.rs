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
async fn the_bitrate_head_and_later_playlists_reuse_the_first_playlists_connection_and_segments_never_do() {
    // No EXT-X-BITRATE: the edge must HEAD the newest segment (30) for the bitrate. No RTT
    // override: the stream's backhaul sample has to come from TCP_INFO on the playlist's socket.
    let source = Source::start(30, 10_000, 0).await;
    let edge = start_edge(&source, |_| {}).await;
    assert_eq!(get(edge.addr, "/live/stream.m3u8", &[("X-Receiver-Id", "first")]).await.status, 200);
    assert_eq!(get(edge.addr, "/live/stream.m3u8", &[("X-Receiver-Id", "first")]).await.status, 200);
    let playlists = source.requests_for("/live/stream.m3u8");
    let head = source.requests_for("/live/seg30.ts").into_iter().find(|r| r.method == "HEAD").expect("the bitrate HEAD");
    assert_eq!(playlists.len(), 2);
    assert!(playlists.iter().all(|r| r.connection == playlists[0].connection), "{playlists:?}");
    assert_eq!(head.connection, playlists[0].connection, "the HEAD opened a new backhaul connection");
    // The policy was built, so a backhaul sample was read on that connection.
    let metrics = get(edge.addr, "/metrics", &[]).await.text();
    let rtt_line = metrics.lines().find(|l| l.starts_with("ethle_stream_backhaul_rtt_microseconds{stream=\"/live/stream.m3u8\"}"));
    let rtt_us: u64 = rtt_line.and_then(|l| l.rsplit(' ').next()).and_then(|v| v.parse().ok()).unwrap_or(0);
    assert!(rtt_us > 0, "no backhaul RTT from TCP_INFO: {metrics}");
    // Segments (the hold-0 receiver's start-up prefetch) each have a connection of their own.
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
async fn a_new_streams_first_segment_fetches_find_their_connections_already_open() {
    // No EXT-X-BITRATE: the policy (and so the first segment fetches) waits for the bitrate HEAD,
    // which the source answers after 300 ms (a backhaul round trip). The connections the first
    // segment GETs travel on were opened while the HEAD was outstanding, each carries one GET.
    let source = Source::start(30, 10_000, 0).await;
    *source.state.head_delay.lock().unwrap() = Duration::from_millis(300);
    let edge = start_edge(&source, |c| c.backhaul_rtt_override = Some(Duration::from_millis(302))).await;
    assert_eq!(get(edge.addr, "/live/stream.m3u8", &[("X-Receiver-Id", "first")]).await.status, 200);
    let head = source.requests_for("/live/seg30.ts").into_iter().find(|r| r.method == "HEAD").expect("the bitrate HEAD");
    let head_answered = head.at + Duration::from_millis(300);
    eventually(|| source.state.requests.lock().unwrap().iter().any(|r| r.method == "GET" && r.path.ends_with(".ts"))).await;
    let requests = source.state.requests.lock().unwrap().clone();
    let accepted = source.state.accepted_at.lock().unwrap().clone();
    let segment_gets: Vec<_> = requests.iter().filter(|r| r.method == "GET" && r.path.ends_with(".ts")).collect();
    assert!(!segment_gets.is_empty());
    for r in &segment_gets {
        assert!(r.at >= head_answered, "{} fetched before the policy was known", r.path);
        assert!(accepted[r.connection as usize] < head_answered, "{}: its connection was opened after the HEAD returned", r.path);
        assert_eq!(requests.iter().filter(|q| q.connection == r.connection).count(), 1, "{}: a reused connection", r.path);
    }
    // The counter moves when the response headers are back, after the source logged the request.
    eventually(|| edge.edge.client.preconnected.used() >= 1).await;
    assert!(edge.edge.client.preconnected.used() >= 1);
}
