//! Forwards the core's log records to Python's `logging.getLogger("raftlet")`.
//!
//! The core calls its sink on whatever thread drives a node, possibly with
//! the GIL released, so the sink only queues the record (no GIL taken);
//! the queue is drained into the `logging` module after each `RawNode`
//! call, while the GIL is held.
//!
//! The core builds a record only at or above its sink's level, so that
//! level follows the logger's: [`sync_level`] reads what the logger would
//! keep (its effective level and `logging.disable`) when a node is created
//! and at every `campaign()`, `tick()` and `ready()`, and hands it to the core. With the
//! logger at WARNING (Python's default) no debug or info record is even
//! formatted.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use raftlet::logging::{set_log_level, set_log_sink, Level, LogRecord};

/// Records waiting for the GIL, oldest first; bounded so a host that never
/// calls back into raftlet cannot grow it without limit.
static QUEUE: Mutex<VecDeque<(Level, u64, String)>> = Mutex::new(VecDeque::new());
const MAX_QUEUED: usize = 10_000;

/// `logging.getLogger("raftlet")`, looked up once.
static LOGGER: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn logger(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    LOGGER
        .get_or_try_init(py, || {
            Ok::<_, PyErr>(
                py.import("logging")?
                    .call_method1("getLogger", ("raftlet",))?
                    .unbind(),
            )
        })
        .map(|l| l.bind(py))
}

/// The lowest core level the logger keeps (`None`: it keeps nothing).
fn wanted_level(py: Python<'_>) -> PyResult<Option<Level>> {
    let logger = logger(py)?;
    for level in [Level::Debug, Level::Info, Level::Warn, Level::Error] {
        if logger
            .call_method1("isEnabledFor", (py_level(level),))?
            .is_truthy()?
        {
            return Ok(Some(level));
        }
    }
    Ok(None)
}

/// Sets the core's level to what `logging.getLogger("raftlet")` keeps now.
/// A logging configuration that cannot be read leaves every record on (the
/// logger then filters them as before) and is reported as unraisable.
pub(crate) fn sync_level(py: Python<'_>) {
    match wanted_level(py) {
        Ok(level) => set_log_level(level),
        Err(e) => {
            set_log_level(Some(Level::Debug));
            e.write_unraisable(py, None);
        }
    }
}

/// The core's level now, as a `logging` level (`None` when off); for tests.
#[pyfunction]
pub(crate) fn _core_log_level() -> Option<i32> {
    [Level::Debug, Level::Info, Level::Warn, Level::Error]
        .into_iter()
        .find(|&l| raftlet::logging::enabled(l))
        .map(py_level)
}

/// Installs the queueing sink (at import), at the logger's current level.
pub(crate) fn install(py: Python<'_>) {
    set_log_sink(
        Some(Arc::new(|r: &LogRecord<'_>| {
            let mut q = QUEUE.lock().unwrap_or_else(|e| e.into_inner());
            if q.len() >= MAX_QUEUED {
                q.pop_front();
            }
            q.push_back((r.level, r.node_id, r.message.to_string()));
        })),
        Level::Debug,
    );
    sync_level(py);
}

fn py_level(l: Level) -> i32 {
    match l {
        Level::Debug => 10,
        Level::Info => 20,
        Level::Warn => 30,
        Level::Error => 40,
    }
}

/// Hands queued records to `logging.getLogger("raftlet")`. Errors raised
/// by logging handlers are reported as unraisable, never propagated into
/// the raftlet call that happened to flush.
pub(crate) fn flush(py: Python<'_>) {
    let records: Vec<(Level, u64, String)> = {
        let mut q = QUEUE.lock().unwrap_or_else(|e| e.into_inner());
        if q.is_empty() {
            return;
        }
        q.drain(..).collect()
    };
    let logger = match logger(py) {
        Ok(l) => l,
        Err(e) => {
            e.write_unraisable(py, None);
            return;
        }
    };
    for (level, node_id, msg) in records {
        let kwargs = pyo3::types::PyDict::new(py);
        let extra = pyo3::types::PyDict::new(py);
        let _ = extra.set_item("raft_node_id", node_id);
        let _ = kwargs.set_item("extra", extra);
        if let Err(e) = logger.call_method("log", (py_level(level), "%s", msg), Some(&kwargs)) {
            e.write_unraisable(py, None);
        }
    }
}
