//! Log records of notable events (elections, step-downs, snapshots,
//! membership changes), delivered to a process-wide sink the host installs.
//!
//! This is the library's only global state. Nothing is formatted unless a
//! sink is installed and the record's level is at or above the sink's
//! minimum level, so logging costs one atomic load when it is off.
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use raftlet::logging::{set_log_sink, Level};
//!
//! let seen = Arc::new(Mutex::new(Vec::new()));
//! let s = seen.clone();
//! set_log_sink(Some(Arc::new(move |r: &raftlet::logging::LogRecord<'_>| {
//!     s.lock().unwrap().push(format!("{} {}: {}", r.level, r.node_id, r.message));
//! })), Level::Info);
//! // ... run nodes ...
//! set_log_sink(None, Level::Info);
//! ```

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, RwLock};

/// The severity of a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Detail useful when debugging replication.
    Debug = 0,
    /// Notable state changes (elections, role changes, conf changes).
    Info = 1,
    /// Something unusual that the library handled (a refused snapshot, a
    /// lost quorum).
    Warn = 2,
    /// Something that points at a bug in the host or a peer.
    Error = 3,
}

impl std::fmt::Display for Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Level::Debug => "DEBUG",
            Level::Info => "INFO",
            Level::Warn => "WARN",
            Level::Error => "ERROR",
        })
    }
}

/// One log record.
#[derive(Debug, Clone, Copy)]
pub struct LogRecord<'a> {
    /// The severity.
    pub level: Level,
    /// The id of the node that logged it.
    pub node_id: u64,
    /// The message.
    pub message: &'a str,
}

/// A function that receives log records. It may be called from any thread
/// that drives a node, so it must be thread-safe; it must not call back
/// into the node that logged.
pub type LogSink = Arc<dyn Fn(&LogRecord<'_>) + Send + Sync>;

const OFF: u8 = u8::MAX;

static MIN_LEVEL: AtomicU8 = AtomicU8::new(OFF);
static SINK: RwLock<Option<LogSink>> = RwLock::new(None);

/// Installs (or, with `None`, removes) the process-wide log sink, which
/// receives records at `min_level` and above.
pub fn set_log_sink(sink: Option<LogSink>, min_level: Level) {
    let on = sink.is_some();
    {
        let mut g = SINK.write().unwrap_or_else(|e| e.into_inner());
        *g = sink;
    }
    MIN_LEVEL.store(if on { min_level as u8 } else { OFF }, Ordering::Release);
}

/// Changes the minimum level of the installed sink without replacing it;
/// `None` turns logging off. Without a sink this does nothing (a sink is
/// installed with its level by [`set_log_sink`]).
///
/// A binding whose host filters records itself (Python's `logging`) calls
/// this whenever the host's threshold may have changed, so that the core
/// does not even format the records nobody would keep: [`enabled`] is
/// checked before a record's message is built.
pub fn set_log_level(min_level: Option<Level>) {
    let g = SINK.read().unwrap_or_else(|e| e.into_inner());
    if g.is_some() {
        // Under the read lock: a concurrent set_log_sink (write lock) comes
        // wholly before or after, so the level always belongs to its sink.
        MIN_LEVEL.store(min_level.map_or(OFF, |l| l as u8), Ordering::Release);
    }
}

/// Whether a record at `level` would be delivered.
#[inline]
pub fn enabled(level: Level) -> bool {
    let min = MIN_LEVEL.load(Ordering::Relaxed);
    min != OFF && level as u8 >= min
}

/// Delivers a record to the sink (used through the crate's `rlog!` macro).
#[doc(hidden)]
pub fn emit(level: Level, node_id: u64, args: std::fmt::Arguments<'_>) {
    let sink = {
        let g = SINK.read().unwrap_or_else(|e| e.into_inner());
        g.clone()
    };
    if let Some(sink) = sink {
        let message = args.to_string();
        sink(&LogRecord {
            level,
            node_id,
            message: &message,
        });
    }
}

/// Logs `format!(...)` at `level` for node `id` if a sink wants it.
macro_rules! rlog {
    ($level:expr, $id:expr, $($arg:tt)+) => {
        if $crate::logging::enabled($level) {
            $crate::logging::emit($level, $id, format_args!($($arg)+));
        }
    };
}
pub(crate) use rlog;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pb::ConfState;
    use crate::{Config, MemoryStorage, RawNode};
    use std::sync::atomic::AtomicUsize;
    use std::sync::Mutex;

    /// The sink is process-wide: the tests that install one take turns.
    static TURN: Mutex<()> = Mutex::new(());

    /// A sink receives the role changes of a node; removing it stops delivery.
    #[test]
    fn sink_receives_role_changes() {
        let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
        const ID: u64 = 9_001;
        let seen = Arc::new(Mutex::new(Vec::<String>::new()));
        let s = seen.clone();
        set_log_sink(
            Some(Arc::new(move |r: &LogRecord<'_>| {
                if r.node_id == ID {
                    s.lock().unwrap().push(format!("{} {}", r.level, r.message));
                }
            })),
            Level::Info,
        );
        assert!(enabled(Level::Warn) && !enabled(Level::Debug));
        let storage = MemoryStorage::new_with_conf_state(ConfState::from_voters(vec![ID])).unwrap();
        let mut n = RawNode::new(&Config::new(ID), storage.clone()).unwrap();
        n.campaign().unwrap();
        // Each vote (pre-vote, then vote) counts once it is durable.
        while n.has_ready() {
            let rd = n.ready();
            storage.wl().append(&rd.entries).unwrap();
            if let Some(hs) = rd.hard_state {
                storage.wl().set_hard_state(hs);
            }
            n.advance(rd);
        }
        set_log_sink(None, Level::Info);
        assert!(!enabled(Level::Error));
        let got = seen.lock().unwrap().clone();
        assert!(
            got.iter()
                .any(|l| l == &format!("INFO {ID} became leader at term 1")),
            "{got:?}"
        );
    }

    /// A value that counts how often it is formatted.
    struct Counted<'a>(&'a AtomicUsize);

    impl std::fmt::Display for Counted<'_> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            self.0.fetch_add(1, Ordering::SeqCst);
            f.write_str("counted")
        }
    }

    /// A record below the sink's level is never built: its arguments are
    /// not formatted and the sink is not called. set_log_level moves the
    /// threshold of the installed sink (and None turns it off) without
    /// replacing it; without a sink it does nothing.
    #[test]
    fn records_below_the_level_are_not_built() {
        let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
        const ID: u64 = 9_002;
        let formatted = AtomicUsize::new(0);
        let delivered = Arc::new(AtomicUsize::new(0));
        let d = delivered.clone();
        set_log_sink(
            Some(Arc::new(move |r: &LogRecord<'_>| {
                if r.node_id == ID {
                    d.fetch_add(1, Ordering::SeqCst);
                }
            })),
            Level::Info,
        );
        let seen = || {
            (
                formatted.load(Ordering::SeqCst),
                delivered.load(Ordering::SeqCst),
            )
        };
        rlog!(Level::Debug, ID, "{}", Counted(&formatted));
        assert_eq!(seen(), (0, 0), "a debug record was built at level Info");
        rlog!(Level::Info, ID, "{}", Counted(&formatted));
        assert_eq!(seen(), (1, 1));

        set_log_level(Some(Level::Debug));
        assert!(enabled(Level::Debug));
        rlog!(Level::Debug, ID, "{}", Counted(&formatted));
        assert_eq!(seen(), (2, 2));

        set_log_level(Some(Level::Error));
        rlog!(Level::Warn, ID, "{}", Counted(&formatted));
        assert_eq!(seen(), (2, 2), "a warning was built at level Error");

        set_log_level(None);
        assert!(!enabled(Level::Error));
        rlog!(Level::Error, ID, "{}", Counted(&formatted));
        assert_eq!(seen(), (2, 2), "a record was built with logging off");

        set_log_sink(None, Level::Debug);
        set_log_level(Some(Level::Debug));
        assert!(
            !enabled(Level::Error),
            "set_log_level turned on a missing sink"
        );
    }
}
