//! One way to move a table from Rust to Python: every column is encoded whole for zero-copy
//! loading into Arrow (no Python object per cell), and its Arrow type comes from the Rust type,
//! so an empty table still has its schema. python/tcpvideo/_tables.py decodes it
//! (`table_from_columns`). Used by the simulator's (`sim.rs`) and the analyzer's (`trace.rs`) tables.
//!
//! Encoding: ("i64" | "f64" | "bool", little-endian bytes, validity bytes or None) for numbers,
//! ("dict", i32 codes (−1 = null), (n, i32 offsets, UTF-8 bytes) of the distinct strings) for text.

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3::IntoPyObjectExt;

/// A Rust type that can be sent as a whole column.
pub trait Column: Sized {
    fn column<'a>(py: Python<'_>, it: impl Iterator<Item = &'a Self>) -> PyResult<PyObject>
    where
        Self: 'a;
}

fn numeric(py: Python<'_>, kind: &str, data: Vec<u8>, valid: Option<Vec<u8>>) -> PyResult<PyObject> {
    let valid: PyObject = match valid {
        Some(v) => PyBytes::new(py, &v).into_any().unbind(),
        None => py.None(),
    };
    (kind, PyBytes::new(py, &data), valid).into_py_any(py)
}

macro_rules! int_column {
    ($($t:ty),*) => {$(
        impl Column for $t {
            fn column<'a>(py: Python<'_>, it: impl Iterator<Item = &'a Self>) -> PyResult<PyObject> {
                let mut d = Vec::new();
                for v in it {
                    d.extend_from_slice(&(*v as i64).to_le_bytes());
                }
                numeric(py, "i64", d, None)
            }
        }
        impl Column for Option<$t> {
            fn column<'a>(py: Python<'_>, it: impl Iterator<Item = &'a Self>) -> PyResult<PyObject> {
                let (mut d, mut m) = (Vec::new(), Vec::new());
                for v in it {
                    d.extend_from_slice(&(v.unwrap_or(0) as i64).to_le_bytes());
                    m.push(v.is_some() as u8);
                }
                numeric(py, "i64", d, Some(m))
            }
        }
    )*};
}
int_column!(u64, u32, u16, u8);

impl Column for f64 {
    fn column<'a>(py: Python<'_>, it: impl Iterator<Item = &'a Self>) -> PyResult<PyObject> {
        let mut d = Vec::new();
        for v in it {
            d.extend_from_slice(&v.to_le_bytes());
        }
        numeric(py, "f64", d, None)
    }
}
impl Column for Option<f64> {
    fn column<'a>(py: Python<'_>, it: impl Iterator<Item = &'a Self>) -> PyResult<PyObject> {
        let (mut d, mut m) = (Vec::new(), Vec::new());
        for v in it {
            d.extend_from_slice(&v.unwrap_or(0.0).to_le_bytes());
            m.push(v.is_some() as u8);
        }
        numeric(py, "f64", d, Some(m))
    }
}
impl Column for bool {
    fn column<'a>(py: Python<'_>, it: impl Iterator<Item = &'a Self>) -> PyResult<PyObject> {
        numeric(py, "bool", it.map(|&b| b as u8).collect(), None)
    }
}
impl Column for Option<bool> {
    fn column<'a>(py: Python<'_>, it: impl Iterator<Item = &'a Self>) -> PyResult<PyObject> {
        let (mut d, mut m) = (Vec::new(), Vec::new());
        for v in it {
            d.push(v.unwrap_or(false) as u8);
            m.push(v.is_some() as u8);
        }
        numeric(py, "bool", d, Some(m))
    }
}

/// Text column as dictionary codes (columns here have few distinct values: kinds, directions,
/// addresses).
pub fn text<'s>(py: Python<'_>, it: impl Iterator<Item = Option<&'s str>>) -> PyResult<PyObject> {
    let mut idx: std::collections::HashMap<&'s str, i32> = std::collections::HashMap::new();
    let mut cats: Vec<&'s str> = Vec::new();
    let mut codes = Vec::new();
    for v in it {
        let c = match v {
            None => -1,
            Some(s) => *idx.entry(s).or_insert_with(|| {
                cats.push(s);
                cats.len() as i32 - 1
            }),
        };
        codes.extend_from_slice(&c.to_le_bytes());
    }
    // The distinct strings as an Arrow string array's buffers: i32 offsets and UTF-8 bytes.
    let mut offsets = Vec::with_capacity(4 * (cats.len() + 1));
    let mut bytes = Vec::new();
    offsets.extend_from_slice(&0i32.to_le_bytes());
    for c in &cats {
        bytes.extend_from_slice(c.as_bytes());
        offsets.extend_from_slice(&(bytes.len() as i32).to_le_bytes());
    }
    let cats = (cats.len(), PyBytes::new(py, &offsets), PyBytes::new(py, &bytes));
    ("dict", PyBytes::new(py, &codes), cats).into_py_any(py)
}

impl Column for String {
    fn column<'a>(py: Python<'_>, it: impl Iterator<Item = &'a Self>) -> PyResult<PyObject> {
        text(py, it.map(|s| Some(s.as_str())))
    }
}
impl Column for Option<String> {
    fn column<'a>(py: Python<'_>, it: impl Iterator<Item = &'a Self>) -> PyResult<PyObject> {
        text(py, it.map(|s| s.as_deref()))
    }
}
impl Column for &'static str {
    fn column<'a>(py: Python<'_>, it: impl Iterator<Item = &'a Self>) -> PyResult<PyObject> {
        text(py, it.map(|s| Some(*s)))
    }
}

impl Column for Option<&'static str> {
    fn column<'a>(py: Python<'_>, it: impl Iterator<Item = &'a Self>) -> PyResult<PyObject> {
        text(py, it.copied())
    }
}

/// Encode a column computed per row (`rows.iter().map(f)`), typed by what `f` returns.
pub fn computed<R, T: Column>(py: Python<'_>, rows: &[R], f: impl FnMut(&R) -> T) -> PyResult<PyObject> {
    let col: Vec<T> = rows.iter().map(f).collect();
    T::column(py, col.iter())
}

/// Build a dict of encoded columns from rows, one per named field (in the order given).
macro_rules! table {
    ($py:expr, $rows:expr, [$($f:ident),* $(,)?]) => {{
        let d = pyo3::types::PyDict::new($py);
        $(
            d.set_item(stringify!($f), $crate::columns::Column::column($py, $rows.iter().map(|r| &r.$f))?)?;
        )*
        d
    }};
}

/// Build a dict of encoded columns from rows, one per `"name" => |row| value` (in the order given).
macro_rules! columns {
    ($py:expr, $rows:expr, { $($name:literal => $f:expr),* $(,)? }) => {{
        let d = pyo3::types::PyDict::new($py);
        $(
            d.set_item($name, $crate::columns::computed($py, &$rows, $f)?)?;
        )*
        d
    }};
}
