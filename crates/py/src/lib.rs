//! Python bindings: the module `tcpvideo._core`. Thin: convert arguments, call the Rust crates,
//! return tables as encoded columns (columns.rs) that the Python package turns into Arrow tables. Every Rust
//! error becomes a Python exception; nothing panics across the boundary.

use pyo3::prelude::*;

mod cc;
#[macro_use]
mod columns;
mod ethle;
mod linkem;
mod qdisc_sampler;
mod sim;
mod topology;
mod trace;
mod tun;
mod video;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    cc::register(m)?;
    ethle::register(m)?;
    sim::register(m)?;
    trace::register(m)?;
    tun::register(m)?;
    linkem::register(m)?;
    topology::register(m)?;
    qdisc_sampler::register(m)?;
    video::register(m)?;
    Ok(())
}
