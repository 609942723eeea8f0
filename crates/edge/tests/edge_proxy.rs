//! The edge proxy end to end on loopback, against the scripted source in `common`: coalescing
//! (one upstream fetch per segment for 200 receivers, waiters' first byte right behind the
//! source's), holding (x from the model, prefetch of held segments, 301), faults (5xx, timeout,
//! stall, truncation, reset: an error or a correct copy, never a wrong one), bounds and refusals.

mod common;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::*;
use m3u8_rs::{parse_playlist_res, Playlist};

fn sha(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).into()
}

fn media(text: &str) -> m3u8_rs::MediaPlaylist {
    match parse_playlist_res(text.as_bytes()) {
        Ok(Playlist::MediaPlaylist(p)) => p,
        other => panic!("not a media playlist: {other:?}\n{text}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_receivers_cause_one_upstream_fetch_per_segment_and_get_their_first_bytes_right_behind_the_edge() {
    let len = 64 * 1024;
    let source = Source::start(20, len, 0).await;
    let edge = start_edge_on_own_runtime(&source, |c| c.body_idle_timeout = Duration::from_secs(20)).await;
    let mut lags = Vec::new();
    for (round, n) in [18u64, 19, 20].into_iter().enumerate() {
        // The source sends the head at once and the body only when every receiver is waiting.
        let gate = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
        *source.state.body_gate.lock().unwrap() = Some(gate.clone());
        let path = format!("/live/seg{n}.ts");
        let receivers: Vec<_> = (0..200)
            .map(|i| {
                let path = path.clone();
                let id = format!("r{i}");
                tokio::spawn(async move { get(edge.addr, &path, &[("X-Receiver-Id", &id)]).await })
            })
            .collect();
        let waiting = 199 * (round as u64 + 1);
        let deadline = Instant::now() + Duration::from_secs(20);
        while edge.edge.metrics.coalesced_waits.load(Ordering::Relaxed) < waiting && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(edge.edge.metrics.coalesced_waits.load(Ordering::Relaxed), waiting);
        tokio::time::sleep(Duration::from_millis(50)).await; // let the waiters park
        gate.add_permits(1);
        let expected = sha(&segment_body(n, len));
        let mut got = Vec::new();
        for r in receivers {
            got.push(r.await.unwrap());
        }
        assert_eq!(source.fetches(&path), 1, "{path} fetched more than once");
        let source_wrote = source.state.first_body_write.lock().unwrap()[&path];
        for r in &got {
            assert_eq!(r.status, 200);
            assert!(r.complete);
            assert_eq!(sha(&r.body), expected, "{path}: wrong bytes");
            lags.push(r.first_body_byte_at.unwrap().saturating_duration_since(source_wrote));
        }
    }
    lags.sort();
    let (median, p99, worst) = (lags[lags.len() / 2], lags[lags.len() * 99 / 100], lags[lags.len() - 1]);
    eprintln!(
        "end to end, source's first body write to each waiter's first body byte read: median {median:?}, p99 {p99:?}, worst {worst:?}"
    );
    let m = &edge.edge.metrics;
    assert_eq!(m.cache_misses.load(Ordering::Relaxed), 3);
    // Inside the edge: from its first body byte of the fetch to each waiter's first body byte
    // written to that waiter's socket (the fetch task writes each chunk to every waiting socket
    // itself, `conn_socket`). Goal: every waiter within 5 ms. Met in most runs on this 2-core
    // machine; at load 15–18 one run in three has 80–90 % within 5 ms (the fetch task's thread
    // preempted mid-round; docs/dev/open_items.md, issue 14), and a CI run of 862ca87 beside
    // the rest of the suite had its median at 2.4 ms. How fast is a speed goal, measured by
    // bench/edge_vs_nginx.py against nginx in the same run (cold coalescing), not here; the test pins the
    // property that separates coalescing-by-forwarding from lock polling: every waiter far
    // below nginx's 500 ms proxy_cache_lock poll.
    let h = &m.reader_first_byte_lag;
    let (within_5ms, all) = (h.at_most(5000), h.count.load(Ordering::Relaxed));
    eprintln!(
        "edge-side: {within_5ms}/{all} waiters within 5 ms, {} within 2 ms, {} within 1 ms, mean {:.0} µs",
        h.at_most(2000),
        h.at_most(1000),
        h.sum_us.load(Ordering::Relaxed) as f64 / all as f64
    );
    assert_eq!(all, 600);
    assert_eq!(h.at_most(100_000), all, "a waiter got its first byte more than 100 ms after the edge");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_backhaul_holds_back_x_segments_and_prefetches_them() {
    // 15 Mbit/s, 2 s segments (3.75 MB) over a 302 ms backhaul: doubling STARTUP from one 1448-byte
    // MSS needs log2(1 + 3.75e6/1448) = 11.34 rounds = 3.43 s > 2 s: hold-x, x = ⌈3.43/2⌉ = 2.
    let source = Source::start(30, 10_000, 15_000).await;
    let edge = start_edge(&source, |c| {
        c.backhaul_rtt_override = Some(Duration::from_millis(302));
    })
    .await;
    let r = get(edge.addr, "/live/stream.m3u8", &[("X-Receiver-Id", "far"), ("X-Ran-Throughput-Kbps", "50000")]).await;
    assert_eq!(r.status, 200);
    let served = media(&r.text());
    let upstream = media(&source.media_playlist());
    assert_eq!(served.media_sequence, upstream.media_sequence);
    assert_eq!(served.segments.len() + 2, upstream.segments.len(), "{}", r.text());
    assert_eq!(served.segments.last().unwrap().uri, "seg28.ts");
    assert_eq!(edge.edge.stream_x("/live/stream.m3u8"), Some(2));
    // The held segments 29 and 30 are fetched without any receiver asking for them.
    let deadline = Instant::now() + Duration::from_secs(3);
    while (source.fetches("/live/seg29.ts") == 0 || source.fetches("/live/seg30.ts") == 0) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!((source.fetches("/live/seg29.ts"), source.fetches("/live/seg30.ts")), (1, 1));
    // The source moves on; the receiver's playlist follows two behind and never goes back.
    let mut last_seq = 28;
    for newest in 31..36 {
        source.state.newest.store(newest, Ordering::SeqCst);
        let p = media(&get(edge.addr, "/live/stream.m3u8", &[("X-Receiver-Id", "far")]).await.text());
        let seq = p.media_sequence + p.segments.len() as u64 - 1;
        assert_eq!(seq, newest - 2);
        assert!(seq > last_seq);
        last_seq = seq;
    }
    let metrics = get(edge.addr, "/metrics", &[]).await.text();
    assert!(metrics.contains("ethle_stream_hold_x{stream=\"/live/stream.m3u8\"} 2"), "{metrics}");
    assert!(metrics.contains("ethle_stream_backhaul_rtt_microseconds{stream=\"/live/stream.m3u8\"} 302000"), "{metrics}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fast_ran_on_a_short_backhaul_gets_the_source_playlist_unchanged() {
    // 50 ms backhaul: 11.34 rounds = 0.57 s; at 100 Mbit/s the RAN adds 0.3 s: 0.87 s ≤ 2 s, hold-0.
    let source = Source::start(30, 10_000, 15_000).await;
    let edge = start_edge(&source, |c| c.backhaul_rtt_override = Some(Duration::from_millis(50))).await;
    let fast = get(edge.addr, "/live/stream.m3u8?ran_kbps=100000&receiver=a", &[]).await;
    assert_eq!(fast.text(), source.media_playlist());
    // 20 Mbit/s: 1.5 s on the RAN + 0.57 s > 2 s: hold-x with x = 1.
    let slow = get(edge.addr, "/live/stream.m3u8?ran_kbps=20000&receiver=b", &[]).await;
    assert_eq!(media(&slow.text()).segments.len(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ran_slower_than_the_bitrate_is_redirected_to_the_source_via_the_context_api() {
    let source = Source::start(30, 10_000, 15_000).await;
    let edge = start_edge(&source, |c| c.backhaul_rtt_override = Some(Duration::from_millis(302))).await;
    let put = {
        let mut s = tokio::net::TcpStream::connect(edge.addr).await.unwrap();
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let body = r#"{"ran_throughput_kbps": 8000}"#;
        let req = format!(
            "PUT /ethle/context/receivers/phone-7 HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        s.write_all(req.as_bytes()).await.unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    };
    assert!(put.starts_with("HTTP/1.1 204"), "{put}");
    let r = get(edge.addr, "/live/stream.m3u8", &[("X-Receiver-Id", "phone-7")]).await;
    assert_eq!(r.status, 301);
    assert_eq!(r.header("location"), Some(format!("{}/live/stream.m3u8", source.url()).as_str()));
    let bad = get(edge.addr, "/live/stream.m3u8", &[("X-Ran-Throughput-Kbps", "lots")]).await;
    assert_eq!(bad.status, 400);
    assert!(bad.text().contains("X-Ran-Throughput-Kbps"), "{}", bad.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_faults_give_an_error_or_a_correct_copy_never_a_wrong_one() {
    let len = 200_000;
    let source = Source::start(60, len, 0).await;
    let edge = start_edge(&source, |c| c.retries = 1).await;
    let cases: [(u64, Vec<Fault>); 6] = [
        (50, vec![Fault::Status500]),
        (51, vec![Fault::HangBeforeHeaders(Duration::from_secs(2))]),
        (52, vec![Fault::StallMidBody(Duration::from_secs(1))]),
        (53, vec![Fault::Truncate(len / 3)]),
        (54, vec![Fault::ResetAfter(len / 2)]),
        (55, vec![Fault::Status500, Fault::Status500, Fault::Status500]),
    ];
    for (n, faults) in &cases {
        source.inject(&format!("/live/seg{n}.ts"), faults);
    }
    for (n, _) in &cases {
        let path = format!("/live/seg{n}.ts");
        let expected = sha(&segment_body(*n, len));
        // Several receivers at once, then one more after the dust settles.
        let first: Vec<_> = (0..5)
            .map(|_| {
                let p = path.clone();
                tokio::spawn(async move { get(edge.addr, &p, &[]).await })
            })
            .collect();
        let mut outcomes = Vec::new();
        for r in first {
            outcomes.push(r.await.unwrap());
        }
        outcomes.push(get(edge.addr, &path, &[]).await);
        let mut good = 0;
        for r in &outcomes {
            if r.status == 200 && r.complete {
                assert_eq!(sha(&r.body), expected, "{path}: a complete body with the wrong bytes");
                good += 1;
            } else {
                assert!(r.status != 200 || !r.complete, "{path}: {r:?}");
            }
        }
        let last = outcomes.last().unwrap();
        assert!(
            last.status == 200 && last.complete || *n == 55,
            "{path}: the retry after the fault did not give a copy: {} {}",
            last.status,
            last.complete
        );
        eprintln!("{path}: {good}/6 complete copies, {} upstream fetches", source.fetches(&path));
    }
    // 5xx then success is retried inside one fetch: every receiver gets the copy.
    assert_eq!(source.fetches("/live/seg50.ts"), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_memory_stays_under_its_bound_and_old_segments_leave_with_the_window() {
    let len = 100_000;
    let source = Source::start(100, len, 0).await;
    let bound = 350_000;
    let edge = start_edge(&source, |c| c.cache_bytes = bound).await;
    // Playlist first, so the edge knows the window.
    assert_eq!(get(edge.addr, "/live/stream.m3u8", &[]).await.status, 200);
    for n in 95..=100 {
        let r = get(edge.addr, &format!("/live/seg{n}.ts"), &[]).await;
        assert!(r.complete);
        assert!(edge.edge.fetcher.cache_used_bytes() <= bound);
    }
    assert_eq!(edge.edge.fetcher.cache_used_bytes(), 3 * len as u64);
    // Source moves 6 segments on: the window is 101..106, and every cached segment left it.
    source.state.newest.store(106, Ordering::SeqCst);
    assert_eq!(get(edge.addr, "/live/stream.m3u8", &[]).await.status, 200);
    assert_eq!(edge.edge.fetcher.cache_used_bytes(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_and_huge_playlists_and_mpds_are_rejected_while_other_streams_are_served() {
    let source = Source::start(10, 1000, 0).await;
    let edge = start_edge(&source, |c| c.max_playlist_bytes = 1 << 20).await;
    assert_eq!(get(edge.addr, "/bad/stream.m3u8", &[]).await.status, 502);
    assert_eq!(get(edge.addr, "/huge/stream.m3u8", &[]).await.status, 502);
    assert_eq!(get(edge.addr, "/bad/stream.mpd", &[]).await.status, 502);
    assert_eq!(edge.edge.metrics.playlists_rejected.load(Ordering::Relaxed), 3);
    let ok = get(edge.addr, "/live/stream.m3u8", &[]).await;
    assert_eq!(ok.status, 200);
    assert_eq!(ok.text(), source.media_playlist());
    assert!(get(edge.addr, "/live/seg10.ts", &[]).await.complete);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_outside_the_upstream_namespace_are_refused() {
    let source = Source::start(10, 1000, 0).await;
    let edge = start_edge(&source, |_| {}).await;
    for target in ["/live/../secret", "/live/%2e%2e/secret", "http://evil.example/live/seg10.ts", "//evil.example/x"] {
        let r = get(edge.addr, target, &[]).await;
        assert_eq!(r.status, 400, "{target}");
    }
    assert_eq!(source.fetches("/secret"), 0);
    assert_eq!(source.state.fetches.lock().unwrap().len(), 0, "something reached the source");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn master_playlists_pass_through_and_lend_their_bandwidth_to_the_variant() {
    let source = Source::start(30, 10_000, 0).await; // no EXT-X-BITRATE: BANDWIDTH is the only rate
    let edge = start_edge(&source, |c| c.backhaul_rtt_override = Some(Duration::from_millis(302))).await;
    let master = get(edge.addr, "/live/master.m3u8", &[]).await;
    assert!(master.text().contains("BANDWIDTH=15000000"));
    let p = media(&get(edge.addr, "/live/stream.m3u8", &[("X-Receiver-Id", "m")]).await.text());
    assert_eq!(p.segments.len(), 4, "15 Mbit/s from BANDWIDTH over 302 ms should hold 2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_stops_accepting_and_serve_returns() {
    let source = Source::start(10, 1000, 0).await;
    let mut edge = start_edge(&source, |_| {}).await;
    assert_eq!(get(edge.addr, "/healthz", &[]).await.status, 200);
    edge.stop.take().unwrap().send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(2), edge.task).await.expect("serve did not return").unwrap();
    assert!(tokio::net::TcpStream::connect(edge.addr).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dash_receiver_far_from_the_source_sees_the_stream_start_x_segment_times_later() {
    // 15 Mbit/s, 2-s segments over 302 ms: x = 2 (as the HLS test), so availabilityStartTime + 4 s.
    let source = Source::start(30, 10_000, 0).await;
    let edge = start_edge(&source, |c| c.backhaul_rtt_override = Some(Duration::from_millis(302))).await;
    let r = get(edge.addr, "/live/stream.mpd", &[("X-Receiver-Id", "far"), ("X-Ran-Throughput-Kbps", "50000")]).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/dash+xml"));
    assert_eq!(edge.edge.dash.stream_x("/live/stream.mpd"), Some(2));
    let served = dash_mpd_core::parse(&r.text()).unwrap();
    assert_eq!(served.availabilityStartTime.unwrap().to_rfc3339(), "2026-11-24T02:00:04+00:00");
    assert_eq!(served.periods, dash_mpd_core::parse(common::LIVE_MPD).unwrap().periods);
    // The two segments the held MPD hides are fetched without anyone asking: with the MPD's
    // AST of 02:00:00 today and 2-s segments from number 1, the newest available now is
    // (seconds since then) / 2.
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs().saturating_sub(1_795_485_600);
    let newest = since / 2;
    let chunk = |n: u64| format!("/live/chunk-0-{n:05}.m4s");
    let deadline = Instant::now() + Duration::from_secs(3);
    let fetched = || (newest - 3..=newest + 1).filter(|&n| source.fetches(&chunk(n)) > 0).collect::<Vec<_>>();
    while fetched().len() < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let got = fetched();
    assert_eq!(got.len(), 2, "held segments fetched around {newest}: {got:?}");
    assert_eq!(got[1], got[0] + 1);
    // newest was computed after the edge served the MPD: the edge's newest is it or one before
    assert!(got[1] + 1 >= newest && got[1] <= newest, "{got:?} vs newest {newest}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dash_receiver_with_a_fast_ran_near_the_source_gets_the_upstream_mpd_unchanged() {
    // As the HLS case: 0.57 s backhaul + 0.3 s RAN ≤ 2 s → hold-0; a 20 Mbit/s RAN → hold-1.
    let source = Source::start(30, 10_000, 0).await;
    let edge = start_edge(&source, |c| c.backhaul_rtt_override = Some(Duration::from_millis(50))).await;
    let r = get(edge.addr, "/live/stream.mpd", &[("X-Receiver-Id", "near"), ("X-Ran-Throughput-Kbps", "100000")]).await;
    assert_eq!((r.status, r.text()), (200, common::LIVE_MPD.to_string()));
    let slow = get(edge.addr, "/live/stream.mpd", &[("X-Receiver-Id", "slow"), ("X-Ran-Throughput-Kbps", "20000")]).await;
    let served = dash_mpd_core::parse(&slow.text()).unwrap();
    assert_eq!(served.availabilityStartTime.unwrap().to_rfc3339(), "2026-11-24T02:00:02+00:00");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dash_receiver_moved_from_hold_0_to_hold_x_never_sees_an_earlier_live_edge() {
    // Backhaul 50 ms: 100 Mbit/s RAN → hold-0, 20 Mbit/s → hold-1 (x = 1, AST + 2 s). A receiver
    // first served hold-0 and then moved keeps the upstream AST until the source has produced
    // one more segment, then moves to the held AST (its live edge stays where it was).
    let source = Source::start(30, 10_000, 0).await;
    let edge = start_edge(&source, |c| c.backhaul_rtt_override = Some(Duration::from_millis(50))).await;
    // The LIVE_MPD's newest complete segment (AST 02:00:00 today, 2-s segments).
    let newest = || (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() - 1_795_485_600) / 2;
    let ast_for = |id: &'static str, kbps: &'static str| {
        let addr = edge.addr;
        async move {
            let r = get(addr, "/live/stream.mpd", &[("X-Receiver-Id", id), ("X-Ran-Throughput-Kbps", kbps)]).await;
            assert_eq!(r.status, 200);
            dash_mpd_core::parse(&r.text()).unwrap().availabilityStartTime.unwrap().to_rfc3339()
        }
    };
    let (upstream, held) = ("2026-11-24T02:00:00+00:00", "2026-11-24T02:00:02+00:00");
    let before = newest();
    assert_eq!(ast_for("mover", "100000").await, upstream);
    let moved = ast_for("mover", "20000").await;
    if newest() == before {
        assert_eq!(moved, upstream, "moved receiver's live edge went back by a segment");
    }
    assert_eq!(ast_for("fresh", "20000").await, held, "a new hold-1 receiver is held at once");
    // One segment time later the mover is held too.
    let start = newest();
    while newest() == start {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(ast_for("mover", "20000").await, held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dash_receivers_segment_request_keeps_the_edge_x_segments_ahead_without_an_mpd_reload() {
    // x = 2 (302 ms, 15 Mbit/s, 2-s segments). The receiver loads the MPD once (the edge fetches
    // the two newest, which the held MPD hides), then asks for a segment six behind the source's
    // newest: the edge maps the path back to (representation 0, number m) and fetches m+1 and m+2
    // of that representation at once, before the receiver asks. A hold-0 receiver's request
    // fetches nothing ahead.
    let source = Source::start(30, 10_000, 0).await;
    let edge = start_edge(&source, |c| c.backhaul_rtt_override = Some(Duration::from_millis(302))).await;
    let newest = || (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() - 1_795_485_600) / 2;
    let far = [("X-Receiver-Id", "far"), ("X-Ran-Throughput-Kbps", "50000")];
    assert_eq!(get(edge.addr, "/live/stream.mpd", &far).await.status, 200);
    let chunk = |n: u64| format!("/live/chunk-0-{n:05}.m4s");
    let m = newest() - 6;
    let own = get(edge.addr, &chunk(m), &far).await;
    assert!(own.complete);
    assert_eq!(own.body, common::segment_body(m, 10_000));
    let deadline = Instant::now() + Duration::from_secs(3);
    while (source.fetches(&chunk(m + 1)) == 0 || source.fetches(&chunk(m + 2)) == 0) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!((source.fetches(&chunk(m + 1)), source.fetches(&chunk(m + 2))), (1, 1), "the lead was not refreshed");
    assert_eq!(source.fetches(&chunk(m + 3)), 0, "fetched more than x ahead");
    // The next request is served from the prefetch and moves the lead by one.
    let next = get(edge.addr, &chunk(m + 1), &far).await;
    assert_eq!(next.body, common::segment_body(m + 1, 10_000));
    let deadline = Instant::now() + Duration::from_secs(3);
    while source.fetches(&chunk(m + 3)) == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!([m + 1, m + 2, m + 3].map(|n| source.fetches(&chunk(n))), [1, 1, 1]);
    // A near receiver (hold-0) asking for an old segment makes the edge fetch only that one.
    let near = [("X-Receiver-Id", "near"), ("X-Ran-Throughput-Kbps", "100000")];
    let near_edge = start_edge(&source, |c| c.backhaul_rtt_override = Some(Duration::from_millis(50))).await;
    assert_eq!(get(near_edge.addr, "/live/stream.mpd", &near).await.status, 200);
    let old = m - 10;
    assert!(get(near_edge.addr, &chunk(old), &near).await.complete);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!([old, old + 1].map(|n| source.fetches(&chunk(n))), [1, 0]);
}
