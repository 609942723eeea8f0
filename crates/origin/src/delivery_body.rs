//! A response body delivered the way its mode says: the runtime half of
//! `tcpvideo_model::delivery::Ustreamer` on a real socket.
//!
//! hyper polls the body whenever its write buffer has room, i.e. when the socket took what was
//! queued: that is the model's "socket can take data". Each poll asks `Ustreamer::poll` what to
//! do, with TCP_INFO's srtt, MSS and bytes acknowledged since the response began (Trickle's
//! inputs); the step's write is read from the file and handed over in frames of at most
//! [`FRAME_BYTES`] (hyper flushes a frame before asking for the next, see `server`'s
//! `max_buf_size`), its timer becomes a tokio sleep, and its socket settings (cwnd clamp, max
//! pacing rate) are applied when they change. `cwnd-limit` runs the model's bulk mode with a fixed
//! clamp. At the end (or if the client goes away) the settings are lifted, so the next response
//! on a kept-alive connection starts clean.
//!
//! Memory: one frame in hand plus hyper's buffer per connection, whatever the client's speed.
//! Deviation: "delivered" counts bytes acknowledged on the connection since the body started,
//! which includes the tail of a previous keep-alive response still in flight then (at most one
//! send buffer; irrelevant for the long progressive responses Trickle is about).

use std::fs::File;
use std::future::Future;
use std::os::unix::fs::FileExt;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::body::{Body, Frame};
use tcpvideo_model::delivery::{ConnectionState, DeliveryMode, ServerStep, Ustreamer};
use tcpvideo_model::units::{Bandwidth, Time};
use tracing::debug;

use crate::cwnd_clamp::ClampControl;
use crate::delivery_choice::{DeliveryPlan, OriginMode};
use crate::metrics::Metrics;
use crate::socket_control::SocketHandle;

/// Largest frame handed to hyper at once.
pub const FRAME_BYTES: u64 = 64 * 1024;

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

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
            Ok(()) => Metrics::bump(&self.metrics.clamp_updates),
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
    /// Bytes the model said to write that are not yet handed to hyper.
    pending_bytes: u64,
    started: Instant,
    acked_at_start: Option<u64>,
    wait: Option<Pin<Box<tokio::time::Sleep>>>,
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

    fn read_frame(&mut self) -> Result<Bytes, BoxError> {
        let n = self.pending_bytes.min(FRAME_BYTES).min(self.end_offset - self.next_offset) as usize;
        let mut buf = vec![0u8; n];
        if let Err(e) = self.file.read_exact_at(&mut buf, self.next_offset) {
            Metrics::bump(&self.conn.metrics.body_read_errors);
            return Err(Box::new(e));
        }
        self.next_offset += n as u64;
        self.pending_bytes -= n as u64;
        self.conn.metrics.body_bytes.fetch_add(n as u64, Ordering::Relaxed);
        Ok(Bytes::from(buf))
    }
}

impl Body for DeliveryBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        loop {
            if this.next_offset >= this.end_offset {
                return Poll::Ready(None);
            }
            if this.pending_bytes > 0 {
                return Poll::Ready(Some(this.read_frame().map(Frame::data)));
            }
            if let Some(w) = this.wait.as_mut() {
                if w.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                this.wait = None;
            }
            let step = this.step();
            this.pending_bytes = step.write_bytes;
            if this.pending_bytes == 0 {
                // The model always writes or names a time while bytes remain; 10 ms is a guard.
                let at = step.wake_at.map_or(this.started.elapsed() + Duration::from_millis(10), |t| Duration::from_nanos(t.as_nanos()));
                this.wait = Some(Box::pin(tokio::time::sleep_until((this.started + at).into())));
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.next_offset >= self.end_offset
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        hyper::body::SizeHint::with_exact(self.end_offset - self.next_offset)
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
