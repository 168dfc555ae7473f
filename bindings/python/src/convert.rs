//! Conversions at the boundary: argument types with clear errors (a wrong
//! type is a `TypeError`, a bad value a `ValueError`, each saying what was
//! expected) and the Python enums of `raftlet._enums`.

use bytes::Bytes;
use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyByteArray, PyBytes, PyList, PyString, PyType};

/// The name of `obj`'s type, for error messages.
pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".to_string())
}

/// A non-negative integer that fits in 64 bits (ids, terms, indexes, sizes).
#[derive(Debug, Clone, Copy)]
pub struct U64(pub u64);

impl<'a, 'py> FromPyObject<'a, 'py> for U64 {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        match obj.extract::<u64>() {
            Ok(v) => Ok(U64(v)),
            Err(e) if e.is_instance_of::<PyOverflowError>(obj.py()) => {
                Err(PyValueError::new_err(format!(
                    "expected a non-negative integer below 2**64, got {}",
                    obj.repr().map(|r| r.to_string()).unwrap_or_default()
                )))
            }
            Err(_) => Err(PyTypeError::new_err(format!(
                "expected an int, got {}",
                type_name(&obj)
            ))),
        }
    }
}

/// A [`U64`] that must also fit in `usize` (tick counts, message counts).
#[derive(Debug, Clone, Copy)]
pub struct Usize(pub usize);

impl<'a, 'py> FromPyObject<'a, 'py> for Usize {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let U64(v) = obj.extract()?;
        usize::try_from(v).map(Usize).map_err(|_| {
            PyValueError::new_err(format!(
                "expected a non-negative integer that fits in usize, got {v}"
            ))
        })
    }
}

/// A `u32` argument: like [`U64`], and `ValueError` above 2**32 - 1.
pub struct U32(pub u32);

impl<'a, 'py> FromPyObject<'a, 'py> for U32 {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let U64(v) = obj.extract()?;
        u32::try_from(v).map(U32).map_err(|_| {
            PyValueError::new_err(format!(
                "expected a non-negative integer below 2**32, got {v}"
            ))
        })
    }
}

/// The number of a raftpb enum (an `IntEnum` member or a plain int in the
/// 32-bit range).
#[derive(Debug, Clone, Copy)]
pub struct EnumNum(pub i32);

impl<'a, 'py> FromPyObject<'a, 'py> for EnumNum {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        match obj.extract::<i32>() {
            Ok(v) => Ok(EnumNum(v)),
            Err(e) if e.is_instance_of::<PyOverflowError>(obj.py()) => {
                Err(PyValueError::new_err(format!(
                    "expected an enum value in the 32-bit range, got {}",
                    obj.repr().map(|r| r.to_string()).unwrap_or_default()
                )))
            }
            Err(_) => Err(PyTypeError::new_err(format!(
                "expected an enum member or int, got {}",
                type_name(&obj)
            ))),
        }
    }
}

/// Bytes-like data (`bytes`, `bytearray` or `memoryview`), copied once.
#[derive(Debug, Clone)]
pub struct BytesArg(pub Bytes);

impl<'a, 'py> FromPyObject<'a, 'py> for BytesArg {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(b) = obj.cast::<PyBytes>() {
            return Ok(BytesArg(raftlet::copy_payload(b.as_bytes())));
        }
        if let Ok(b) = obj.cast::<PyByteArray>() {
            return Ok(BytesArg(raftlet::payload_from_vec(b.to_vec())));
        }
        if obj.is_instance_of::<PyString>() {
            return Err(PyTypeError::new_err(
                "expected bytes, got str (encode it first, for example with s.encode())",
            ));
        }
        let memoryview = obj.py().import("builtins")?.getattr("memoryview")?;
        if obj.is_instance(&memoryview)? {
            let b = obj.call_method0("tobytes")?;
            let b = b.cast::<PyBytes>()?;
            return Ok(BytesArg(raftlet::copy_payload(b.as_bytes())));
        }
        Err(PyTypeError::new_err(format!(
            "expected bytes-like data (bytes, bytearray or memoryview), got {}",
            type_name(&obj)
        )))
    }
}

/// A sequence of ids (any iterable of ints except str and bytes).
#[derive(Debug, Clone, Default)]
pub struct Ids(pub Vec<u64>);

impl<'a, 'py> FromPyObject<'a, 'py> for Ids {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
            return Err(PyTypeError::new_err(format!(
                "expected an iterable of node ids (ints), got {}",
                type_name(&obj)
            )));
        }
        let iter = obj.try_iter().map_err(|_| {
            PyTypeError::new_err(format!(
                "expected an iterable of node ids (ints), got {}",
                type_name(&obj)
            ))
        })?;
        let mut ids = Vec::new();
        for item in iter {
            let U64(id) = item?.extract()?;
            ids.push(id);
        }
        Ok(Ids(ids))
    }
}

/// Extracts every item of an iterable as the pyclass `T` and maps it with
/// `f`; `what` names the expected class in the error.
pub fn extract_each<'py, T, R>(
    obj: &Bound<'py, PyAny>,
    what: &str,
    mut f: impl FnMut(&T) -> R,
) -> PyResult<Vec<R>>
where
    T: pyo3::PyClass<Frozen = pyo3::pyclass::boolean_struct::False>,
{
    let not_iterable = || {
        PyTypeError::new_err(format!(
            "expected an iterable of {what} objects, got {}",
            type_name(obj)
        ))
    };
    if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
        return Err(not_iterable());
    }
    let mut out = match obj.cast::<PyList>() {
        Ok(l) => Vec::with_capacity(l.len()),
        Err(_) => Vec::new(),
    };
    for (i, item) in obj.try_iter().map_err(|_| not_iterable())?.enumerate() {
        let item = item?;
        let cell = item.cast::<T>().map_err(|_| {
            PyTypeError::new_err(format!(
                "expected {what} objects, got {} at position {i}",
                type_name(&item)
            ))
        })?;
        out.push(f(&cell.borrow()));
    }
    Ok(out)
}

/// A cached class of `raftlet._enums`.
pub struct EnumClass {
    name: &'static str,
    cell: PyOnceLock<Py<PyType>>,
}

impl EnumClass {
    const fn new(name: &'static str) -> EnumClass {
        EnumClass {
            name,
            cell: PyOnceLock::new(),
        }
    }

    /// The member for `value` (an int for the int enums, a str for the
    /// str enums); unnamed raftpb numbers give pseudo-members.
    pub fn member<'py, V>(&self, py: Python<'py>, value: V) -> PyResult<Bound<'py, PyAny>>
    where
        V: IntoPyObject<'py>,
    {
        self.cell
            .import(py, "raftlet._enums", self.name)?
            .call1((value,))
    }
}

/// `raftlet.MessageType`.
pub static MESSAGE_TYPE: EnumClass = EnumClass::new("MessageType");
/// `raftlet.EntryType`.
pub static ENTRY_TYPE: EnumClass = EnumClass::new("EntryType");
/// `raftlet.ConfChangeType`.
pub static CONF_CHANGE_TYPE: EnumClass = EnumClass::new("ConfChangeType");
/// `raftlet.ConfChangeTransition`.
pub static CONF_CHANGE_TRANSITION: EnumClass = EnumClass::new("ConfChangeTransition");
/// `raftlet.StateRole`.
pub static STATE_ROLE: EnumClass = EnumClass::new("StateRole");
/// `raftlet.ReadOnlyOption`.
pub static READ_ONLY_OPTION: EnumClass = EnumClass::new("ReadOnlyOption");

/// The `StateRole` member of a core role.
pub fn state_role<'py>(py: Python<'py>, r: raftlet::StateRole) -> PyResult<Bound<'py, PyAny>> {
    STATE_ROLE.member(py, r.to_string())
}

/// `bytes` for a payload.
pub fn py_bytes<'py>(py: Python<'py>, b: &[u8]) -> Bound<'py, PyBytes> {
    PyBytes::new(py, b)
}

/// A list of ints.
pub fn id_list<'py>(
    py: Python<'py>,
    ids: impl IntoIterator<Item = u64>,
) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, ids.into_iter().collect::<Vec<u64>>())
}
