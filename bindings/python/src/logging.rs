//! Forwards the core's log records to Python's `logging.getLogger("raftlet")`.
//!
//! The core calls its sink on whatever thread drives a node, possibly with
//! the GIL released, so the sink only queues the record (no GIL taken);
//! the queue is drained into the `logging` module after each `RawNode`
//! call, while the GIL is held.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use raftlet::logging::{set_log_sink, Level, LogRecord};

/// Records waiting for the GIL, oldest first; bounded so a host that never
/// calls back into raftlet cannot grow it without limit.
static QUEUE: Mutex<VecDeque<(Level, u64, String)>> = Mutex::new(VecDeque::new());
const MAX_QUEUED: usize = 10_000;

/// Installs the queueing sink (at import).
pub(crate) fn install() {
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
    let logger = match py
        .import("logging")
        .and_then(|m| m.call_method1("getLogger", ("raftlet",)))
    {
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
