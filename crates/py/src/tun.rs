//! `open_tun` for Python: opens a TUN device inside a namespace with tcpvideo-linkem
//! (crates/linkem/src/tun.rs, which explains the device and the namespace handling).

use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;

/// open_tun(name, netns=None) -> int
///
/// Open the existing TUN interface `name` (IFF_TUN | IFF_NO_PI, non-blocking) inside the network
/// namespace file `netns` (e.g. "/var/run/netns/NAME"; None: the caller's namespace). Returns
/// the file descriptor; the caller owns it (os.close). Needs CAP_NET_ADMIN (+ CAP_SYS_ADMIN for
/// the namespace).
#[pyfunction]
#[pyo3(signature = (name, netns=None))]
fn open_tun(py: Python<'_>, name: String, netns: Option<String>) -> PyResult<i32> {
    py.allow_threads(move || tcpvideo_linkem::tun::open_in(&name, netns.as_deref()))
        .map_err(|e| PyOSError::new_err(e.to_string()))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(open_tun, m)?)?;
    Ok(())
}
