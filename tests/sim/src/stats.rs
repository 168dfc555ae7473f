//! Counters of what a run did: faults injected and operations performed.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Counters by name, kept in name order so that output is deterministic.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Faults injected, by kind (drops, partitions, crashes, ...).
    pub faults: BTreeMap<&'static str, u64>,
    /// Operations and notable outcomes, by kind (proposals, reads, ...).
    pub ops: BTreeMap<&'static str, u64>,
    /// Largest values seen, by kind (Readies in flight, ...): merged by
    /// taking the maximum.
    pub maxima: BTreeMap<&'static str, u64>,
}

impl Stats {
    /// Counts one fault of `kind`.
    pub fn fault(&mut self, kind: &'static str) {
        *self.faults.entry(kind).or_default() += 1;
    }

    /// Counts one operation of `kind`.
    pub fn op(&mut self, kind: &'static str) {
        self.op_n(kind, 1);
    }

    /// Counts `n` operations of `kind`.
    pub fn op_n(&mut self, kind: &'static str, n: u64) {
        *self.ops.entry(kind).or_default() += n;
    }

    /// Records `v` for `kind` if it is the largest seen.
    pub fn max(&mut self, kind: &'static str, v: u64) {
        let m = self.maxima.entry(kind).or_default();
        *m = (*m).max(v);
    }

    /// Adds `other`'s counters to these (maxima: the larger of the two).
    pub fn merge(&mut self, other: &Stats) {
        for (k, v) in &other.faults {
            *self.faults.entry(k).or_default() += v;
        }
        for (k, v) in &other.ops {
            *self.ops.entry(k).or_default() += v;
        }
        for (k, v) in &other.maxima {
            self.max(k, *v);
        }
    }

    /// The total number of faults injected.
    pub fn total_faults(&self) -> u64 {
        self.faults.values().sum()
    }

    /// The counters as indented `name: count` lines.
    pub fn describe(&self) -> String {
        let mut s = format!("faults injected: {} in total\n", self.total_faults());
        for (k, v) in &self.faults {
            let _ = writeln!(s, "  {k:<30} {v:>12}");
        }
        s.push_str("operations and outcomes:\n");
        for (k, v) in &self.ops {
            let _ = writeln!(s, "  {k:<30} {v:>12}");
        }
        if !self.maxima.is_empty() {
            s.push_str("maxima:\n");
            for (k, v) in &self.maxima {
                let _ = writeln!(s, "  {k:<30} {v:>12}");
            }
        }
        s
    }
}
