//! Python bindings: the module `tcpvideo._core`. Thin: convert arguments, call the Rust crates,
//! return columns (dicts of lists) that the Python package turns into Arrow tables. Every Rust
//! error becomes a Python exception; nothing panics across the boundary.

use pyo3::prelude::*;

mod cc;
#[rustfmt::skip] // moving to crates/linkem; formatted there
mod delayline;
#[rustfmt::skip] // moving to crates/linkem; formatted there
mod netns;
#[rustfmt::skip] // moving to crates/linkem; formatted there
mod qdisc_sampler;
mod sim;
mod trace;
#[rustfmt::skip] // moving to crates/linkem; formatted there
mod tun;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    cc::register(m)?;
    sim::register(m)?;
    trace::register(m)?;
    tun::register(m)?;
    delayline::register(m)?;
    qdisc_sampler::register(m)?;
    Ok(())
}
