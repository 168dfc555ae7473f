//! `raftlet._raftlet`: the native module of the `raftlet` Python package
//! (DESIGN §5), built by maturin on the `raftlet` core directly.
//!
//! The public names come out through `raftlet/__init__.py`; the enums and
//! exceptions are defined in Python (`raftlet/_enums.py`,
//! `raftlet/_errors.py`) and converted at the boundary.

use pyo3::prelude::*;

mod config;
mod convert;
mod disk_storage;
mod errors;
mod learner;
mod logging;
mod raw_node;
mod status;
mod storage;
mod types;

/// The version of the package (Cargo's, which is PEP 440 as well).
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The native part of raftlet, a Raft consensus library with the
/// behaviour of etcd raft v3.6. Import from ``raftlet``, not from here.
#[pymodule(name = "_raftlet")]
fn raftlet_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", VERSION)?;
    logging::install(m.py());
    // A test hook: set as an attribute, so that it stays out of __all__
    // and out of the stubs.
    m.setattr(
        "_core_log_level",
        wrap_pyfunction!(logging::_core_log_level, m)?,
    )?;
    m.add_class::<config::PyConfig>()?;
    m.add_class::<storage::PyMemoryStorage>()?;
    m.add_class::<disk_storage::PyDiskStorage>()?;
    m.add_class::<raw_node::PyRawNode>()?;
    m.add_class::<raw_node::PyReady>()?;
    m.add_class::<types::PyEntry>()?;
    m.add_class::<types::PyHardState>()?;
    m.add_class::<types::PySoftState>()?;
    m.add_class::<types::PyConfState>()?;
    m.add_class::<types::PySnapshot>()?;
    m.add_class::<types::PyMessage>()?;
    m.add_class::<types::PyConfChange>()?;
    m.add_class::<types::PyConfChangeSingle>()?;
    m.add_class::<types::PyConfChangeV2>()?;
    m.add_class::<types::PyReadState>()?;
    m.add_class::<status::PyStatus>()?;
    m.add_class::<status::PyBasicStatus>()?;
    m.add_class::<status::PyProgress>()?;
    m.add_class::<learner::PyMembershipEvent>()?;
    m.add_class::<learner::PyNotPromotable>()?;
    m.add_class::<learner::PyLearnerStatus>()?;
    m.add_class::<learner::PyLocalRead>()?;
    Ok(())
}
