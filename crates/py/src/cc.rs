//! Congestion-control registry exposed to Python (`tcpvideo cc list`).

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// List every congestion control with its parameters, as a list of dicts.
#[pyfunction]
fn cc_list(py: Python<'_>) -> PyResult<Py<PyList>> {
    let out = PyList::empty(py);
    for a in tcpvideo_model::cc::ALGORITHMS {
        let d = PyDict::new(py);
        d.set_item("name", a.name)?;
        d.set_item("summary", a.summary)?;
        d.set_item("reference", a.reference)?;
        let params = PyList::empty(py);
        for p in a.params {
            let pd = PyDict::new(py);
            pd.set_item("name", p.name)?;
            pd.set_item("default", p.default)?;
            pd.set_item("unit", p.unit)?;
            pd.set_item("doc", p.doc)?;
            params.append(pd)?;
        }
        d.set_item("params", params)?;
        out.append(d)?;
    }
    Ok(out.unbind())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cc_list, m)?)?;
    Ok(())
}
