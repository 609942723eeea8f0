//! Binding of the simulated ETHLE testbed (`tcpvideo_sim::ethle_testbed`): one run from a JSON
//! configuration, its result as JSON text (summary, receiver segments, backhaul fetches), which
//! `tcpvideo.studies.ethle` turns into Arrow tables. Bad input is a `ValueError` naming the key;
//! the run releases the GIL (the study runs many in worker processes).

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use tcpvideo_sim::ethle_testbed;

/// Run one testbed configuration (JSON text); returns the result as JSON text.
#[pyfunction]
fn ethle_testbed_run(py: Python<'_>, config_json: &str) -> PyResult<String> {
    let text = config_json.to_owned();
    let r = py.allow_threads(move || catch_unwind(AssertUnwindSafe(|| ethle_testbed::run_json(&text))));
    match r {
        Ok(Ok(res)) => serde_json::to_string(&res).map_err(|e| PyRuntimeError::new_err(e.to_string())),
        Ok(Err(msg)) => Err(PyValueError::new_err(msg)),
        Err(_) => Err(PyRuntimeError::new_err("internal simulator error in the ETHLE testbed (please report)")),
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(ethle_testbed_run, m)?)?;
    Ok(())
}
