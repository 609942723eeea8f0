//! The model's frame-deadline player (`tcpvideo_model::video::frame_player`, seed 001's picture
//! discards and buffer underflows) and the frame sizes of a progressive CBR file, for clients
//! that run outside the simulator (seed 001's real testbed client). Thin: the rules live in the
//! model; this file only converts nanoseconds and errors.

use std::time::Duration;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use tcpvideo_model::video::content::{Content, Ladder};
use tcpvideo_model::video::frame_player::{FramePlayer, FramePlayerConfig};
use tcpvideo_model::video::vbr;
use tcpvideo_model::Time;

fn value_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// The model's `FramePlayer`: feed it the body's bytes as they arrive (`on_bytes`), read its counts.
#[pyclass(name = "FramePlayer", module = "tcpvideo._core")]
pub struct PyFramePlayer {
    player: FramePlayer,
}

#[pymethods]
impl PyFramePlayer {
    #[new]
    #[pyo3(signature = (frame_sizes, frame_rate = 25, startup_threshold_ns = 1_000_000_000, catch_up_speed = 1.5, discard_lateness_ns = 200_000_000))]
    fn new(
        frame_sizes: Vec<u64>,
        frame_rate: u32,
        startup_threshold_ns: u64,
        catch_up_speed: f64,
        discard_lateness_ns: u64,
    ) -> PyResult<Self> {
        let config = FramePlayerConfig {
            startup_threshold: Duration::from_nanos(startup_threshold_ns),
            catch_up_speed,
            discard_lateness: Duration::from_nanos(discard_lateness_ns),
        };
        let player = FramePlayer::new(&frame_sizes, frame_rate, config).map_err(value_error)?;
        Ok(PyFramePlayer { player })
    }

    /// `n` more bytes of the file arrived at `now_ns` (any monotonic clock, nanoseconds).
    fn on_bytes(&mut self, now_ns: u64, n: u64) {
        self.player.on_bytes(Time::from_nanos(now_ns), n);
    }

    #[getter]
    fn total_bytes(&self) -> u64 {
        self.player.total_bytes()
    }

    /// When playback started (ns), None before.
    #[getter]
    fn start_ns(&self) -> Option<u64> {
        self.player.started_at().map(|t| t.as_nanos())
    }

    #[getter]
    fn shown(&self) -> u64 {
        self.player.frames_shown()
    }

    #[getter]
    fn discarded(&self) -> u64 {
        self.player.picture_discards()
    }

    #[getter]
    fn frames_missing(&self) -> u64 {
        self.player.frames_missing()
    }

    /// Underflows as (start_ns, end_ns or None, first missing frame).
    #[getter]
    fn underflows(&self) -> Vec<(u64, Option<u64>, u64)> {
        self.player.underflows().iter().map(|u| (u.start.as_nanos(), u.end.map(|e| e.as_nanos()), u.frame)).collect()
    }
}

/// One chunk's frames: an I-frame of `i_to_p_ratio` P-frames, then equal P-frames (model `vbr`).
#[pyfunction]
#[pyo3(signature = (total_bytes, frames, i_to_p_ratio = 5.0))]
fn split_into_frames(total_bytes: u64, frames: u64, i_to_p_ratio: f64) -> Vec<u64> {
    vbr::split_into_frames(total_bytes, frames, i_to_p_ratio)
}

/// Frame sizes of a CBR file of `media_s` at `rate_bps` in `chunk_s` pieces (the last rounded up
/// to a whole chunk), as the simulator's progressive server builds it (`ProgressiveDef::content`).
#[pyfunction]
#[pyo3(signature = (rate_bps, media_s, chunk_s = 1.0))]
fn progressive_frames(rate_bps: u64, media_s: f64, chunk_s: f64) -> PyResult<Vec<u64>> {
    let chunk_ok = chunk_s.is_finite() && chunk_s > 0.0;
    if !chunk_ok {
        return Err(value_error(format!("chunk_s: must be positive and finite, got {chunk_s}")));
    }
    let media_ok = media_s.is_finite() && media_s >= 0.0;
    if !media_ok {
        return Err(value_error(format!("media_s: must be zero or positive and finite, got {media_s}")));
    }
    let chunk = Duration::from_secs_f64(chunk_s);
    let media = Duration::from_secs_f64(media_s);
    let n = media.as_nanos().div_ceil(chunk.as_nanos()).max(1) as u64;
    let ladder = Ladder::from_kbps("rate_bps", &[rate_bps as f64 / 1000.0]).map_err(value_error)?;
    Ok(Content::cbr(ladder, chunk, n).map_err(value_error)?.progressive_frames(0))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyFramePlayer>()?;
    m.add_function(wrap_pyfunction!(split_into_frames, m)?)?;
    m.add_function(wrap_pyfunction!(progressive_frames, m)?)?;
    Ok(())
}
