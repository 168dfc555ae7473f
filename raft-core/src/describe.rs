//! Deterministic one-line descriptions of entries, messages and states, for
//! logs, traces and test output (etcd `util.go` `Describe*`).

use crate::pb::{ConfChangeI, Entry, EntryType, HardState, Message, Snapshot};

/// Describes an entry as etcd does: `term/index type data`.
pub fn describe_entry(e: &Entry) -> String {
    let data = match e.entry_type {
        EntryType::EntryNormal => format!("{:?}", String::from_utf8_lossy(e.data())),
        EntryType::EntryConfChange | EntryType::EntryConfChangeV2 => {
            match ConfChangeI::from_entry(e) {
                Ok(cc) => describe_conf_change(&cc),
                Err(err) => format!("<{err}>"),
            }
        }
        _ => format!("{} bytes", e.data().len()),
    };
    format!("{}/{} {} {}", e.term, e.index, e.entry_type, data)
}

/// Describes a conf change compactly, e.g. `v2 l4 r1` (etcd `ConfChangesToString`).
pub fn describe_conf_change(cc: &ConfChangeI) -> String {
    use crate::pb::ConfChangeType as T;
    let v2 = cc.as_v2();
    let mut s = String::from(if cc.as_v1().is_some() { "v1" } else { "v2" });
    for c in &v2.changes {
        let p = match c.change_type {
            T::ConfChangeAddNode => "v",
            T::ConfChangeRemoveNode => "r",
            T::ConfChangeUpdateNode => "u",
            T::ConfChangeAddLearnerNode => "l",
            _ => "?",
        };
        s.push_str(&format!(" {p}{}", c.node_id));
    }
    if v2.changes.is_empty() {
        s.push_str(" leave-joint");
    }
    s
}

/// Describes a hard state: `Term:1 Vote:2 Commit:3`.
pub fn describe_hard_state(hs: &HardState) -> String {
    format!("Term:{} Vote:{} Commit:{}", hs.term, hs.vote, hs.commit)
}

/// Describes a snapshot's position and configuration.
pub fn describe_snapshot(s: &Snapshot) -> String {
    let m = &s.metadata;
    format!(
        "Index:{} Term:{} ConfState:Voters:{:?} VotersOutgoing:{:?} Learners:{:?} LearnersNext:{:?} AutoLeave:{}",
        m.index,
        m.term,
        m.conf_state.voters,
        m.conf_state.voters_outgoing,
        m.conf_state.learners,
        m.conf_state.learners_next,
        m.conf_state.auto_leave
    )
}

/// Describes a message on one line: `1->2 MsgApp Term:1 Log:1/3 Commit:3 Entries:[...]`.
pub fn describe_message(m: &Message) -> String {
    let mut s = format!(
        "{}->{} {} Term:{} Log:{}/{}",
        m.from, m.to, m.msg_type, m.term, m.log_term, m.index
    );
    if m.reject {
        s.push_str(&format!(" Rejected (Hint: {})", m.reject_hint));
    }
    if m.commit != 0 {
        s.push_str(&format!(" Commit:{}", m.commit));
    }
    if m.vote != 0 {
        s.push_str(&format!(" Vote:{}", m.vote));
    }
    if !m.entries.is_empty() {
        let ents: Vec<String> = m.entries.iter().map(describe_entry).collect();
        s.push_str(&format!(" Entries:[{}]", ents.join(", ")));
    }
    if let Some(snap) = &m.snapshot {
        if !snap.is_empty() {
            s.push_str(&format!(" Snapshot: {}", describe_snapshot(snap)));
        }
    }
    if !m.context().is_empty() {
        s.push_str(&format!(
            " Context:{:?}",
            String::from_utf8_lossy(m.context())
        ));
    }
    s
}
