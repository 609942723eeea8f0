//! A response body delivered the way its mode says: the runtime half of
//! `tcpvideo_model::delivery::Ustreamer` on a real socket.
//!
//! The body asks `Ustreamer::poll` what to do whenever the socket took everything the previous
//! step said to write: that is the model's "socket can take data". Each poll passes TCP_INFO's
//! srtt, MSS and bytes acknowledged since the response began (Trickle's inputs); the step's write
//! goes from the file to the socket with sendfile(2) — the page cache straight into the socket,
//! no copy through user memory, as nginx's `sendfile on` —, as many bytes per call as the socket
//! takes (a paced mode's block is a sendfile with that count), its timer becomes a tokio sleep,
//! and its socket settings (cwnd clamp, max pacing rate) are applied when they change.
//! `cwnd-limit` runs the model's bulk mode with a fixed clamp. At the end (or if the client goes
//! away) the settings are lifted, so the next response on a kept-alive connection starts clean.
//!
//! Memory: no body bytes in user memory at all, whatever the client's speed; the kernel's share
//! is the socket's send buffer (bound it with `send_buffer_bytes`).
//! Deviation: "delivered" counts bytes acknowledged on the connection since the body started,
//! which includes the tail of a previous keep-alive response still in flight then (at most one
//! send buffer; irrelevant for the long progressive responses Trickle is about).

use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tcpvideo_model::delivery::{ConnectionState, DeliveryMode, ServerStep, Ustreamer};
use tcpvideo_model::units::{Bandwidth, Time};
use tokio::io::Interest;
use tokio::net::TcpStream;
use tracing::debug;

use crate::cwnd_clamp::ClampControl;
use crate::delivery_choice::{DeliveryPlan, OriginMode};
use crate::metrics::Metrics;
use crate::socket_control::SocketHandle;

/// Most bytes one sendfile(2) call is asked for: a fast client on loopback otherwise keeps one
/// task in the kernel for a whole large file while other connections wait (nginx's
/// `sendfile_max_chunk` default is 2 MiB).
pub const SENDFILE_MAX_BYTES: u64 = 2 * 1024 * 1024;

/// One accepted connection, shared by its responses.
pub struct ConnectionContext {
    pub socket: SocketHandle,
    pub clamp: Arc<ClampControl>,
    pub metrics: Arc<Metrics>,
    cookie: OnceLock<Option<u64>>,
    /// A clamp entry may exist for this socket (forget it when the connection ends).
    clamped: AtomicBool,
}

impl ConnectionContext {
    pub fn new(socket: SocketHandle, clamp: Arc<ClampControl>, metrics: Arc<Metrics>) -> ConnectionContext {
        ConnectionContext { socket, clamp, metrics, cookie: OnceLock::new(), clamped: AtomicBool::new(false) }
    }

    fn cookie(&self) -> Option<u64> {
        *self.cookie.get_or_init(|| self.socket.cookie().ok())
    }

    fn apply_clamp(&self, clamp: Option<u32>, srtt: Duration, mss_bytes: u64) {
        let Some(cookie) = self.cookie() else {
            Metrics::bump(&self.metrics.socket_option_errors);
            return;
        };
        self.clamped.store(true, Ordering::Relaxed);
        match self.clamp.apply(&self.socket, cookie, clamp, srtt, mss_bytes) {
            Ok(()) => {
                Metrics::bump(&self.metrics.clamp_updates);
                debug!(
                    cookie,
                    clamp_packets = clamp.unwrap_or(0),
                    srtt_us = srtt.as_micros() as u64,
                    mss = mss_bytes,
                    "cwnd clamp applied (0 = none)"
                );
            }
            Err(e) => {
                Metrics::bump(&self.metrics.socket_option_errors);
                debug!(error = %e, "cwnd clamp not applied");
            }
        }
    }

    fn apply_pacing(&self, rate: Option<Bandwidth>) {
        match self.socket.set_max_pacing_rate(rate) {
            Ok(()) => Metrics::bump(&self.metrics.clamp_updates),
            Err(_) => Metrics::bump(&self.metrics.socket_option_errors),
        }
    }
}

impl Drop for ConnectionContext {
    fn drop(&mut self) {
        if self.clamped.load(Ordering::Relaxed) {
            if let Some(Some(cookie)) = self.cookie.get() {
                self.clamp.forget(*cookie);
            }
        }
    }
}

/// The body of one response: bytes `first..end` of `file`, delivered per `plan`.
pub struct DeliveryBody {
    file: Arc<File>,
    next_offset: u64,
    end_offset: u64,
    streamer: Ustreamer,
    plan: DeliveryPlan,
    /// Bytes the model said to write that are not yet taken by the socket.
    pending_bytes: u64,
    started: Instant,
    acked_at_start: Option<u64>,
    /// Sleep until this instant before the next step.
    wait: Option<Instant>,
    conn: Arc<ConnectionContext>,
    /// What is on the socket now (None = nothing set).
    clamp_now: Option<u32>,
    pacing_now: Option<Bandwidth>,
}

impl DeliveryBody {
    pub fn new(file: Arc<File>, first: u64, end: u64, plan: DeliveryPlan, conn: Arc<ConnectionContext>) -> DeliveryBody {
        let total = end - first;
        let rate = plan.encoding_rate.unwrap_or(Bandwidth::ZERO);
        let streamer = match plan.mode {
            OriginMode::Model(mode) => Ustreamer::new(mode, rate, total, plan.startup_media),
            OriginMode::CwndLimit { .. } => Ustreamer::new(DeliveryMode::Bulk, rate, total, Duration::ZERO),
        };
        if let OriginMode::Model(m) = plan.mode {
            if let Some(cc) = m.congestion_control() {
                if conn.socket.set_congestion_control(cc).is_err() {
                    Metrics::bump(&conn.metrics.socket_option_errors);
                }
            }
        }
        let acked_at_start = plan.mode.clamps().then(|| conn.socket.tcp_info().map(|i| i.bytes_acked).unwrap_or(0));
        DeliveryBody {
            file,
            next_offset: first,
            end_offset: end,
            streamer,
            plan,
            pending_bytes: 0,
            started: Instant::now(),
            acked_at_start,
            wait: None,
            conn,
            clamp_now: None,
            pacing_now: None,
        }
    }

    fn model_time(&self) -> Time {
        Time::from_nanos(self.started.elapsed().as_nanos().min(u64::MAX as u128) as u64)
    }

    /// Ask the model what to do now and apply its socket settings.
    fn step(&mut self) -> ServerStep {
        let mut conn = ConnectionState { srtt: Duration::ZERO, mss_bytes: 1448, delivered_bytes: 0 };
        if let Some(acked0) = self.acked_at_start {
            if let Ok(i) = self.conn.socket.tcp_info() {
                conn = ConnectionState {
                    srtt: i.srtt,
                    mss_bytes: i.snd_mss_bytes.max(1),
                    delivered_bytes: i.bytes_acked.saturating_sub(acked0),
                };
            }
        }
        let step = self.streamer.poll(self.model_time(), &conn);
        let clamp = match self.plan.mode {
            OriginMode::CwndLimit { packets } => Some(packets),
            OriginMode::Model(DeliveryMode::Trickle { .. }) => step.cwnd_clamp_packets.map(|c| c.min(u32::MAX as u64) as u32),
            OriginMode::Model(_) => None,
        };
        // Only changes are applied: Trickle lifts its clamp by asking for none, and before its
        // first clamp (startup) there is nothing to lift.
        if self.plan.mode.clamps() && clamp != self.clamp_now {
            self.conn.apply_clamp(clamp, conn.srtt, conn.mss_bytes);
            self.clamp_now = clamp;
        }
        if step.max_pacing_rate != self.pacing_now {
            self.conn.apply_pacing(step.max_pacing_rate);
            self.pacing_now = step.max_pacing_rate;
        }
        step
    }

    /// Bulk bodies are sent corked (TCP_CORK around head and body, as nginx's `tcp_nopush`), so
    /// the head and the file leave in full segments; paced modes are not, a cork would hold
    /// their last partial segment of each step.
    pub fn corked(&self) -> bool {
        matches!(self.plan.mode, OriginMode::Model(DeliveryMode::Bulk))
    }

    /// Deliver the whole body on `stream`: ask the model, hand the file bytes it says to write to
    /// the kernel with sendfile(2) (as many as the socket takes per call), wait where it says to.
    /// Returns when every byte is queued on the socket, or the first error (the client left, or
    /// the file shrank: the response is cut short, never padded).
    pub async fn send(&mut self, stream: &TcpStream) -> std::io::Result<()> {
        loop {
            if self.next_offset >= self.end_offset {
                return Ok(());
            }
            if self.pending_bytes > 0 {
                let sent = self.send_some(stream).await?;
                self.next_offset += sent;
                self.pending_bytes -= sent;
                self.conn.metrics.body_bytes.fetch_add(sent, Ordering::Relaxed);
                continue;
            }
            if let Some(at) = self.wait.take() {
                tokio::time::sleep_until(at.into()).await;
            }
            let step = self.step();
            self.pending_bytes = step.write_bytes.min(self.end_offset - self.next_offset);
            if self.pending_bytes == 0 {
                // The model always writes or names a time while bytes remain; 10 ms is a guard.
                let at = step.wake_at.map_or(self.started.elapsed() + Duration::from_millis(10), |t| Duration::from_nanos(t.as_nanos()));
                self.wait = Some(self.started + at);
            }
        }
    }

    /// One sendfile(2) of up to the pending bytes, once the socket is writable.
    async fn send_some(&self, stream: &TcpStream) -> std::io::Result<u64> {
        let count = self.pending_bytes.min(SENDFILE_MAX_BYTES) as usize;
        let (socket_fd, file_fd) = (stream.as_raw_fd(), self.file.as_raw_fd());
        let offset = self.next_offset;
        let sent = stream
            .async_io(Interest::WRITABLE, || loop {
                let mut off = offset as libc::off_t;
                // SAFETY: both fds are open for the call (the stream and the file are borrowed);
                // the kernel reads the file at `off` and writes `count` bytes at most.
                let rc = unsafe { libc::sendfile(socket_fd, file_fd, &mut off, count) };
                if rc >= 0 {
                    return Ok(rc as u64);
                }
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(e);
                }
            })
            .await;
        match sent {
            Ok(0) => {
                Metrics::bump(&self.conn.metrics.body_read_errors);
                Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "file shorter than when the response began"))
            }
            Ok(n) => Ok(n),
            Err(e) => Err(e),
        }
    }
}

impl Drop for DeliveryBody {
    fn drop(&mut self) {
        if self.clamp_now.is_some() {
            self.conn.apply_clamp(None, Duration::ZERO, 1448);
        }
        if self.pacing_now.is_some() {
            self.conn.apply_pacing(None);
        }
    }
}
