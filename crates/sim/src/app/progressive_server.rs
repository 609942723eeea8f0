//! The progressive-download server of one connection: YouTube's ustreamer (seed 003 §2–§3) as
//! the model's [`Ustreamer`] state machine decides it, on a simulated socket.
//!
//! When the GET has been read, the server writes the response head (`200 OK`, `video/mp4`,
//! `Content-Length`) and then asks [`Ustreamer::poll`] what to do whenever the socket can take
//! data or a timer it asked for fires: write n bytes (a blocking write: what the send buffer does
//! not take is kept and offered first the next time), wake at t, put this cwnd clamp
//! (`TCP_BPF_SNDCWND_CLAMP` / the paper's per-socket `MAX_CWND`) and this maximum pacing rate
//! (`SO_MAX_PACING_RATE`) on the socket. Settings are applied before the bytes are queued, as a
//! server calls `setsockopt` before `write`.
//!
//! Phase statistics for the study (seed 003 §4.1: "statistics collected during the throttling
//! period only"): the throttling phase is taken to begin when the startup bytes have been
//! acknowledged — not when ustreamer handed them to a multi-megabyte send buffer, which would
//! count the startup burst's slow-start losses as throttling-phase losses. It ends when the whole
//! body is acknowledged, or at the end of the run. RTT_startup (Table 1) is the srtt when the
//! ustreamer wrote its last startup byte (its own phase switch, identical across modes); BW is the
//! startup goodput (startup bytes over the time from the request to their acknowledgement, §4.2).
//!
//! Body bytes on the wire: an ISO BMFF `ftyp` box (brand `isom`, compatible `isom`,`iso2`,`avc1`,
//! `mp41`) and the header of an `mdat` box holding the rest (ISO/IEC 14496-12 §4.2–4.3); the media
//! itself is zeros. Not decodable (no `moov`): real headers, filler content, like the segmented
//! origin's bodies.

use std::sync::Arc;
use std::time::Duration;

use tcpvideo_model::cc::AppInfo;
use tcpvideo_model::delivery::{ConnectionState, Ustreamer};
use tcpvideo_model::{Bandwidth, Time};

use super::http;
use super::progressive::{PlaybackDef, ProgressiveDef};
use crate::payload::{ChunkData, SharedPayloads};
use crate::tcp::TcpEndpoint;

/// srtt assumed before the first sample: Linux's initial RTO (RFC 6298 §2.1), a conservative
/// guess that makes Trickle's first clamp large rather than too small.
const SRTT_BEFORE_FIRST_SAMPLE: Duration = Duration::from_secs(1);

/// Counters of the sending socket at one instant.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SenderSnapshot {
    pub at: Time,
    pub bytes_acked: u64,
    pub data_segments_sent: u64,
    pub retransmissions: u64,
    pub srtt: Option<Duration>,
}

impl SenderSnapshot {
    fn of(now: Time, ep: &TcpEndpoint) -> SenderSnapshot {
        let s = ep.stats();
        SenderSnapshot {
            at: now,
            bytes_acked: s.bytes_acked,
            data_segments_sent: s.data_segments_sent,
            retransmissions: s.retrans_fast + s.retrans_timeout + s.retrans_tlp,
            srtt: ep.srtt(),
        }
    }
}

/// The server side of one progressive connection.
#[derive(Clone, Debug)]
pub struct ProgressiveServer {
    def: ProgressiveDef,
    file_bytes: u64,
    /// Created when the request has been read.
    ustreamer: Option<Ustreamer>,
    request_read_at: Option<Time>,
    head_len: u64,
    /// Bytes handed out by the ustreamer (or the head) and not yet taken by the socket.
    pending: u64,
    /// A wake-up is scheduled at this time.
    pub wake_at: Option<Time>,
    /// Socket counters when the ustreamer finished writing the startup bytes (its own phase switch:
    /// the paper's "srtt at the end of the startup phase", Table 1's RTT_startup).
    pub startup_written: Option<SenderSnapshot>,
    /// Socket counters when the startup bytes were acknowledged (throttling phase begins).
    pub throttle_start: Option<SenderSnapshot>,
    /// Socket counters when the whole body was acknowledged.
    pub body_done: Option<SenderSnapshot>,
    /// The clamp and pacing cap last put on the socket (packets; rate).
    pub clamp_packets: Option<u64>,
    pub max_pacing_rate: Option<Bandwidth>,
    /// Polls at which Trickle's clamp was lifted (goodput behind R) / set.
    pub polls_unclamped: u64,
    pub polls_clamped: u64,
}

impl ProgressiveServer {
    pub fn new(def: ProgressiveDef) -> ProgressiveServer {
        let file_bytes = def.file_bytes();
        ProgressiveServer {
            def,
            file_bytes,
            ustreamer: None,
            request_read_at: None,
            head_len: 0,
            pending: 0,
            wake_at: None,
            startup_written: None,
            throttle_start: None,
            body_done: None,
            clamp_packets: None,
            max_pacing_rate: None,
            polls_unclamped: 0,
            polls_clamped: 0,
        }
    }

    pub fn def(&self) -> &ProgressiveDef {
        &self.def
    }
    pub fn file_bytes(&self) -> u64 {
        self.file_bytes
    }
    pub fn head_len(&self) -> u64 {
        self.head_len
    }
    pub fn request_read_at(&self) -> Option<Time> {
        self.request_read_at
    }
    pub fn startup_bytes(&self) -> u64 {
        self.ustreamer.as_ref().map_or(0, |u| u.startup_bytes())
    }

    /// The response head the server writes.
    pub fn response_head(&self) -> String {
        http::response_head("video/mp4", self.file_bytes, false)
    }

    /// The whole GET (`request_len` bytes) has been read at `now`: write the head, start serving.
    /// Returns a wake-up time if the ustreamer asked for one.
    pub fn on_request(&mut self, now: Time, conn: u32, book: Option<&SharedPayloads>, ep: &mut TcpEndpoint) -> Option<Time> {
        if self.ustreamer.is_some() {
            return None; // one file per connection; a second request is ignored
        }
        let head = self.response_head();
        self.head_len = head.len() as u64;
        if let Some(b) = book {
            let mut b = b.lock().expect("payload book");
            b.append(conn, 1, 0, self.head_len, ChunkData::Text(Arc::from(head.into_bytes())));
            let lead = mp4_leading_bytes(self.file_bytes);
            b.append(conn, 1, self.head_len, lead.len() as u64, ChunkData::Text(Arc::from(lead)));
        }
        self.pending = self.head_len;
        self.request_read_at = Some(now);
        // Seed 001: the server tells its congestion control the video rate (CCPLCA's VR) and,
        // for a frame-deadline client, the client's playout buffer (CCPLB with pob_from_app).
        ep.set_app_info(&self.app_info());
        self.ustreamer = Some(Ustreamer::new(self.def.mode, self.def.rate, self.file_bytes, self.def.startup_media));
        self.serve(now, ep)
    }

    /// What this server knows of the video and its client, for the congestion control.
    pub fn app_info(&self) -> AppInfo {
        let playout_buffer = match self.def.playback {
            PlaybackDef::Frames { startup_threshold } => Some(startup_threshold),
            PlaybackDef::Buffer { .. } => None,
        };
        AppInfo { video_rate: Some(self.def.rate), playout_buffer, playout_buffer_rate: None }
    }

    /// The socket can take data, or a wake-up fired: offer what is pending, then follow the
    /// ustreamer until it waits or the socket is full. Returns the wake-up it asked for.
    pub fn serve(&mut self, now: Time, ep: &mut TcpEndpoint) -> Option<Time> {
        let u = self.ustreamer.as_mut()?;
        loop {
            if self.pending > 0 {
                self.pending -= ep.send(self.pending);
                if self.pending > 0 {
                    return None; // blocked: Writable calls again
                }
            }
            if u.written_bytes() >= self.file_bytes {
                return None;
            }
            let mss = ep.mss_bytes();
            let conn = ConnectionState {
                srtt: ep.srtt().unwrap_or(SRTT_BEFORE_FIRST_SAMPLE),
                mss_bytes: mss,
                delivered_bytes: ep.stats().bytes_acked.saturating_sub(self.head_len),
            };
            let step = u.poll(now, &conn);
            if u.in_throttling_phase() && self.startup_written.is_none() {
                self.startup_written = Some(SenderSnapshot::of(now, ep));
            }
            if u.in_throttling_phase() {
                if step.cwnd_clamp_packets.is_some() {
                    self.polls_clamped += 1;
                } else {
                    self.polls_unclamped += 1;
                }
            }
            if step.cwnd_clamp_packets != self.clamp_packets {
                self.clamp_packets = step.cwnd_clamp_packets;
                ep.set_cwnd_clamp(step.cwnd_clamp_packets.map(|p| p * mss));
            }
            if step.max_pacing_rate != self.max_pacing_rate {
                self.max_pacing_rate = step.max_pacing_rate;
                ep.set_max_pacing_rate(step.max_pacing_rate);
            }
            if step.write_bytes > 0 {
                self.pending += step.write_bytes;
                continue;
            }
            return step.wake_at;
        }
    }

    /// Called after the socket processed a packet: note when the startup bytes and the whole body
    /// have been acknowledged.
    pub fn observe(&mut self, now: Time, ep: &TcpEndpoint) {
        if self.ustreamer.is_none() || self.body_done.is_some() {
            return;
        }
        let acked_body = ep.stats().bytes_acked.saturating_sub(self.head_len);
        if self.throttle_start.is_none() && acked_body >= self.startup_bytes() && self.startup_bytes() < self.file_bytes {
            self.throttle_start = Some(SenderSnapshot::of(now, ep));
        }
        if acked_body >= self.file_bytes {
            self.body_done = Some(SenderSnapshot::of(now, ep));
        }
    }

    /// Socket counters now (for a run that ends before the body is acknowledged).
    pub fn snapshot(now: Time, ep: &TcpEndpoint) -> SenderSnapshot {
        SenderSnapshot::of(now, ep)
    }
}

/// The first bytes of the body: `ftyp` (32 bytes) and the 8-byte header of an `mdat` box that
/// holds the rest of the file (or just the `ftyp` if the file is smaller than both).
pub fn mp4_leading_bytes(file_bytes: u64) -> Vec<u8> {
    let mut b = Vec::with_capacity(40);
    b.extend_from_slice(&32u32.to_be_bytes());
    b.extend_from_slice(b"ftyp");
    b.extend_from_slice(b"isom");
    b.extend_from_slice(&512u32.to_be_bytes()); // minor version
    for brand in [b"isom", b"iso2", b"avc1", b"mp41"] {
        b.extend_from_slice(brand);
    }
    if file_bytes >= 40 && file_bytes - 32 <= u32::MAX as u64 {
        b.extend_from_slice(&((file_bytes - 32) as u32).to_be_bytes());
        b.extend_from_slice(b"mdat");
    }
    b.truncate(file_bytes as usize);
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_deadline_client_s_playout_buffer_and_the_video_rate_go_to_the_congestion_control() {
        let spec = toml::from_str("rate = \"5.24Mbps\"\nmedia = \"10s\"\nplayback = \"frames\"\nstartup_threshold = \"2.19s\"").unwrap();
        let def = super::super::progressive::progressive_of(Some(&spec), "f.progressive").unwrap();
        let info = ProgressiveServer::new(def).app_info();
        assert_eq!(info.video_rate, Some(Bandwidth::from_bps(5_240_000)));
        assert_eq!(info.playout_buffer, Some(Duration::from_millis(2190)));
        let buffer_client = super::super::progressive::progressive_of(None, "f.progressive").unwrap();
        assert_eq!(ProgressiveServer::new(buffer_client).app_info().playout_buffer, None);
    }

    #[test]
    fn the_body_opens_with_an_ftyp_box_and_an_mdat_box_spanning_the_rest() {
        let b = mp4_leading_bytes(1_000_000);
        assert_eq!(b.len(), 40);
        assert_eq!(&b[4..8], b"ftyp");
        assert_eq!(u32::from_be_bytes(b[0..4].try_into().unwrap()), 32);
        assert_eq!(&b[36..40], b"mdat");
        // ftyp + mdat cover the file exactly.
        assert_eq!(32 + u32::from_be_bytes(b[32..36].try_into().unwrap()) as u64, 1_000_000);
        assert_eq!(mp4_leading_bytes(10).len(), 10);
    }
}

#[cfg(test)]
mod run_tests {
    use crate::scenario::load_toml;
    use crate::sim::{run_scenario, Results};

    /// One 1 Mbit/s progressive download over a 10 Mbit/s, 50 ms last mile (100-packet buffer).
    fn run(mode: &str, extra: &str) -> Results {
        let text = format!(
            r#"duration = "25s"
[[node]]
name = "s"
[[node]]
name = "r"
kind = "router"
[[node]]
name = "c"
[[link]]
a = "s"
b = "r"
rate = "1Gbps"
delay = "1ms"
[[link]]
a = "r"
b = "c"
rate = "10Mbps"
delay = "24ms"
queue = 100
[[flow]]
client = "c"
server = "s"
app = "progressive"
progressive = {{ mode = "{mode}", rate = "1Mbps", media = "60s", startup_media = "5s" }}
tcp = {{ snd_buf = "256KB" {extra} }}
[record]
sample_interval = "10ms"
"#
        );
        run_scenario(load_toml(&text, Some(1)).unwrap(), None).unwrap()
    }

    fn throttle_kbps(r: &Results) -> f64 {
        r.progressive[0].throttle_goodput_bps.expect("throttling phase reached") / 1e3
    }

    /// Delivery rate from 5 s after the throttling phase began to the end of the run (past the
    /// catch-up of tokens that accrued while the startup bytes drained).
    fn steady_kbps(r: &Results) -> f64 {
        let t0 = r.progressive[0].throttle_start_ns.unwrap() + 5_000_000_000;
        let a = r.flow_samples.iter().find(|s| s.t_ns >= t0).unwrap();
        let b = r.flow_samples.last().unwrap();
        (b.bytes_acked - a.bytes_acked) as f64 * 8.0 / ((b.t_ns - a.t_ns) as f64 / 1e9) / 1e3
    }

    /// Largest cwnd sampled after the throttling phase began, in packets.
    fn max_throttled_cwnd_packets(r: &Results) -> u64 {
        let t0 = r.progressive[0].throttle_start_ns.unwrap();
        r.flow_samples.iter().filter(|s| s.t_ns > t0 + 1_000_000_000).map(|s| s.cwnd_bytes / 1448).max().unwrap()
    }

    #[test]
    fn baseline_pacing_delivers_125_percent_of_the_encoding_rate_in_the_throttling_phase() {
        let r = run("baseline", "");
        let kbps = throttle_kbps(&r);
        assert!((1250.0 * 0.95..1250.0 * 1.05).contains(&kbps), "{kbps} kbit/s");
        assert_eq!(r.progressive[0].startup_bytes, 625_000);
    }

    #[test]
    fn trickle_holds_cwnd_at_its_10_packet_floor_and_delivers_the_encoding_rate() {
        // 1.2 × 50 ms × 1 Mbit/s / 1448 B = 5.2 packets → floor 10, writes throttled at R.
        let r = run("trickle", "");
        let kbps = steady_kbps(&r);
        assert!((1000.0 * 0.98..1000.0 * 1.02).contains(&kbps), "{kbps} kbit/s");
        assert!(max_throttled_cwnd_packets(&r) <= 10, "cwnd {} packets", max_throttled_cwnd_packets(&r));
        assert_eq!(r.progressive[0].unclamped_share, Some(0.0));
        // The baseline's window is not clamped.
        assert!(max_throttled_cwnd_packets(&run("baseline", "")) > 10);
    }

    #[test]
    fn pacing_cap_spreads_bulk_writes_at_125_percent_of_the_rate() {
        let r = run("pacing-cap", "");
        let kbps = steady_kbps(&r);
        assert!((1250.0 * 0.95..1250.0 * 1.05).contains(&kbps), "{kbps} kbit/s");
    }

    #[test]
    fn the_bbr_mode_runs_bbr_on_the_server_socket_unless_the_scenario_names_a_cc() {
        assert_eq!(run("bbr", "").flows[0].cc, "bbr");
        assert_eq!(run("bbr", ", cc = \"cubic\"").flows[0].cc, "cubic");
    }

    #[test]
    fn a_progressive_run_is_deterministic() {
        assert_eq!(run("trickle", "").progressive, run("trickle", "").progressive);
    }
}
