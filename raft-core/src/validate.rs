//! Refusals at the door: checks of what peers and hosts hand the core,
//! run before anything in the node changes.
//!
//! A peer's message, a proposed configuration change, a configuration for
//! the storage or a bootstrap membership is either refused here with a
//! typed error, or is one the rest of the core can handle without
//! overflowing, panicking or poisoning the log. The checks are stateless:
//! they look only at the value itself, so the C ABI can run the message
//! check on bytes before they reach a node (`raftlet_message_decode_header`).
//!
//! # The bound on terms and indexes
//!
//! Every term, log index, log term, commit index, reject hint and snapshot
//! index a peer sends must be at most [`MAX_TERM_OR_INDEX`] (2^63 - 1).
//! The core keeps its own term and log at or below it too: it does not
//! campaign from that term, and a leader does not append past that index.
//! The arithmetic on these values is at most "value + number of entries
//! in one message + 1", which stays below `u64::MAX` by a margin of about
//! 2^63, so nothing wraps and nothing panics. No etcd or raftlet node
//! reaches the bound honestly: every term is one election and every index
//! one appended entry, and 2^63 of either is about 292 years at a billion
//! per second. The value fits an `i64`, which is what the databases hosts
//! persist these numbers in (SQLite `INTEGER`, Postgres `bigint`, Java
//! `long`) offer.

use crate::confchange;
use crate::errors::{Error, Result};
use crate::pb::{ConfChangeI, ConfState, Entry, Message};
use crate::raw_node::sent_by_peer;
use crate::tracker::ProgressTracker;

/// The largest term or index raftlet accepts from a peer or a storage, and
/// the largest its own term and log ever reach: `2^63 - 1` (`i64::MAX`).
/// See the [module documentation](self) for why this bound is safe.
pub const MAX_TERM_OR_INDEX: u64 = i64::MAX as u64;

/// Whether `id` can name a member: not 0 (etcd's "no node") and not
/// `u64::MAX` or `u64::MAX - 1` (etcd's `LocalAppendThread` and
/// `LocalApplyThread`, the ids of its storage threads). [`crate::Config`]
/// refuses the same ids as a node's own.
pub fn is_member_id(id: u64) -> bool {
    id != 0 && id < u64::MAX - 1
}

fn invalid(s: String) -> Error {
    Error::InvalidMessage(s)
}

fn check_bound(what: &str, v: u64) -> Result<()> {
    if v > MAX_TERM_OR_INDEX {
        return Err(invalid(format!(
            "{what} {v} is above the limit {MAX_TERM_OR_INDEX}"
        )));
    }
    Ok(())
}

fn check_entry(e: &Entry) -> Result<()> {
    if e.entry_type.name().is_none() {
        return Err(invalid(format!("unknown entry type {}", e.entry_type.0)));
    }
    check_bound("entry term", e.term)?;
    check_bound("entry index", e.index)
}

/// Checks a message that arrived from the network, before it is stepped:
/// its type is one etcd's raftpb names, every term and index in it is at
/// most [`MAX_TERM_OR_INDEX`], its entries are of a known type, a
/// snapshot's configuration names only member ids, and a message peers
/// send in their own name comes from a member id.
///
/// [`crate::RawNode::step`] runs this check; hosts may run it earlier (for
/// example right after decoding) to drop a bad message before routing it.
///
/// # Errors
/// [`Error::InvalidMessage`] naming the first field found wrong.
pub fn check_message(m: &Message) -> Result<()> {
    if m.msg_type.name().is_none() {
        return Err(invalid(format!("unknown message type {}", m.msg_type.0)));
    }
    check_bound("term", m.term)?;
    check_bound("log term", m.log_term)?;
    check_bound("index", m.index)?;
    check_bound("commit", m.commit)?;
    check_bound("reject hint", m.reject_hint)?;
    if sent_by_peer(m.msg_type) && !is_member_id(m.from) {
        return Err(invalid(format!(
            "{:?} from {}, which is not a member id",
            m.msg_type, m.from
        )));
    }
    for e in &m.entries {
        check_entry(e)?;
    }
    if let Some(s) = &m.snapshot {
        check_bound("snapshot index", s.metadata.index)?;
        check_bound("snapshot term", s.metadata.term)?;
        let cs = &s.metadata.conf_state;
        if let Some(id) = conf_state_ids(cs).find(|id| !is_member_id(*id)) {
            return Err(invalid(format!(
                "snapshot configuration names {id}, which is not a member id"
            )));
        }
    }
    Ok(())
}

fn conf_state_ids(cs: &ConfState) -> impl Iterator<Item = u64> + '_ {
    cs.voters
        .iter()
        .chain(&cs.learners)
        .chain(&cs.voters_outgoing)
        .chain(&cs.learners_next)
        .copied()
}

fn refused(s: String) -> Error {
    Error::ConfChangeRefused(s)
}

/// Checks a configuration change on its own, before it is proposed: every
/// change has a type etcd's raftpb names and a member id (see
/// [`is_member_id`]), and a [`crate::pb::ConfChangeV2`] has a known
/// transition. Whether the change fits the current configuration is
/// checked by the leader later.
///
/// etcd checks none of this: a change of an unknown type would be
/// committed and then fail to apply on every node.
///
/// # Errors
/// [`Error::ConfChangeRefused`] naming the first problem found.
pub fn check_conf_change(cc: &ConfChangeI) -> Result<()> {
    let changes = match cc {
        ConfChangeI::V1(c) => vec![(c.change_type, c.node_id)],
        ConfChangeI::V2(c) => {
            if c.transition.name().is_none() {
                return Err(refused(format!(
                    "unknown conf change transition {}",
                    c.transition.0
                )));
            }
            c.changes
                .iter()
                .map(|s| (s.change_type, s.node_id))
                .collect()
        }
    };
    for (t, id) in changes {
        if t.name().is_none() {
            return Err(refused(format!("unknown conf change type {}", t.0)));
        }
        if !is_member_id(id) {
            return Err(refused(format!(
                "{t:?} of node {id}, which is not a member id"
            )));
        }
    }
    Ok(())
}

/// Checks a change that is about to be applied (it was committed, possibly
/// by an etcd leader, which does not validate): every change has a known
/// type, and no change names `u64::MAX` or `u64::MAX - 1`. A change of node
/// 0 is allowed here: etcd hosts zero the id of a change they decided not
/// to apply, and applying skips it.
pub(crate) fn check_conf_change_to_apply(cc: &crate::pb::ConfChangeV2) -> Result<()> {
    if cc.transition.name().is_none() {
        return Err(refused(format!(
            "unknown conf change transition {}",
            cc.transition.0
        )));
    }
    for c in &cc.changes {
        if c.node_id == 0 {
            continue;
        }
        if c.change_type.name().is_none() {
            return Err(refused(format!(
                "unknown conf change type {}",
                c.change_type.0
            )));
        }
        if !is_member_id(c.node_id) {
            return Err(refused(format!(
                "{:?} of node {}, which is not a member id",
                c.change_type, c.node_id
            )));
        }
    }
    Ok(())
}

/// Checks a configuration before a storage records it or a node starts
/// from it: every id is a member id (see [`is_member_id`]), no id appears
/// twice in a list, no voter is also a learner, and the configuration is
/// one that membership changes can produce (for example a staged learner
/// must be an outgoing voter). The empty configuration is allowed (a
/// storage that holds none yet).
///
/// # Errors
/// [`Error::ConfChangeRefused`] naming the first problem found.
pub fn check_conf_state(cs: &ConfState) -> Result<()> {
    if let Some(id) = conf_state_ids(cs).find(|id| !is_member_id(*id)) {
        return Err(refused(format!(
            "configuration names {id}, which is not a member id"
        )));
    }
    for id in &cs.learners {
        if cs.voters.contains(id) || cs.voters_outgoing.contains(id) {
            return Err(refused(format!("{id} is both a voter and a learner")));
        }
    }
    // Rebuild the configuration from scratch, as a restarting node does,
    // and check that it is the one described: this refuses duplicates and
    // every combination that changes cannot produce.
    let fresh = ProgressTracker::new(1, 0);
    let changer = confchange::Changer {
        tracker: &fresh,
        last_index: 0,
    };
    let (cfg, prs) = confchange::restore(changer, cs)
        .map_err(|e| refused(format!("invalid configuration {cs:?}: {e}")))?;
    let mut rebuilt = ProgressTracker::new(1, 0);
    rebuilt.apply_conf(cfg, prs);
    rebuilt
        .conf_state()
        .equivalent(cs)
        .map_err(|e| refused(format!("invalid configuration {cs:?}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pb::{
        ConfChange, ConfChangeSingle, ConfChangeTransition, ConfChangeType, ConfChangeV2,
        EntryType, MessageType, Snapshot,
    };

    /// The bound itself is accepted and the next value refused, for every
    /// numeric field of a message.
    #[test]
    fn message_bounds_are_inclusive() {
        type Set = fn(&mut Message, u64);
        let fields: [(&str, Set); 5] = [
            ("term", |m, v| m.term = v),
            ("log_term", |m, v| m.log_term = v),
            ("index", |m, v| m.index = v),
            ("commit", |m, v| m.commit = v),
            ("reject_hint", |m, v| m.reject_hint = v),
        ];
        for (name, set) in fields {
            let mut m = Message::new(MessageType::MsgApp, 2, 1);
            m.term = 1;
            set(&mut m, MAX_TERM_OR_INDEX);
            assert_eq!(check_message(&m), Ok(()), "{name} at the bound");
            set(&mut m, MAX_TERM_OR_INDEX + 1);
            assert!(
                matches!(check_message(&m), Err(Error::InvalidMessage(_))),
                "{name} above the bound"
            );
        }
    }

    /// Entries and snapshot metadata are bounded too.
    #[test]
    fn nested_values_are_bounded() {
        let mut m = Message::new(MessageType::MsgApp, 2, 1);
        m.term = 1;
        m.entries.push(Entry::new(1, u64::MAX, vec![]));
        assert!(check_message(&m).is_err());
        m.entries[0] = Entry::new(u64::MAX, 1, vec![]);
        assert!(check_message(&m).is_err());
        m.entries[0] = Entry {
            entry_type: EntryType(9),
            ..Entry::new(1, 1, vec![])
        };
        assert!(check_message(&m).is_err());
        m.entries[0] = Entry::new(1, 1, vec![]);
        assert_eq!(check_message(&m), Ok(()));

        let mut m = Message::new(MessageType::MsgSnap, 2, 1);
        m.term = 1;
        let mut s = Snapshot::default();
        s.metadata.index = u64::MAX;
        m.snapshot = Some(Box::new(s.clone()));
        assert!(check_message(&m).is_err());
        s.metadata.index = 5;
        s.metadata.term = u64::MAX;
        m.snapshot = Some(Box::new(s.clone()));
        assert!(check_message(&m).is_err());
        s.metadata.term = 1;
        s.metadata.conf_state = ConfState::from_voters([1, u64::MAX]);
        m.snapshot = Some(Box::new(s.clone()));
        assert!(check_message(&m).is_err());
        s.metadata.conf_state = ConfState::from_voters([1, 2]);
        m.snapshot = Some(Box::new(s));
        assert_eq!(check_message(&m), Ok(()));
    }

    /// A peer message must come from a member id; forwarded requests may
    /// carry any `from`.
    #[test]
    fn sender_must_be_a_member_id() {
        for from in [0, u64::MAX, u64::MAX - 1] {
            let mut m = Message::new(MessageType::MsgHeartbeat, from, 1);
            m.term = 1;
            assert!(check_message(&m).is_err(), "from {from}");
        }
        let m = Message::new(MessageType::MsgProp, 0, 1);
        assert_eq!(check_message(&m), Ok(()));
    }

    /// Unknown types and reserved ids are refused at propose time; node 0
    /// is skipped (not refused) at apply time, as etcd hosts rely on.
    #[test]
    fn conf_change_checks() {
        let v1 = |t: i32, id: u64| {
            ConfChangeI::V1(ConfChange {
                change_type: ConfChangeType(t),
                node_id: id,
                ..ConfChange::default()
            })
        };
        assert_eq!(check_conf_change(&v1(0, 2)), Ok(()));
        for (t, id) in [(4, 2), (-1, 2), (0, 0), (0, u64::MAX), (3, u64::MAX - 1)] {
            assert!(check_conf_change(&v1(t, id)).is_err(), "{t} {id}");
        }
        let v2 = ConfChangeV2 {
            transition: ConfChangeTransition(3),
            ..ConfChangeV2::default()
        };
        assert!(check_conf_change(&ConfChangeI::V2(v2.clone())).is_err());
        assert!(check_conf_change_to_apply(&v2).is_err());
        let skip = ConfChangeV2 {
            changes: vec![ConfChangeSingle::new(ConfChangeType(42), 0)],
            ..ConfChangeV2::default()
        };
        assert_eq!(check_conf_change_to_apply(&skip), Ok(()));
    }

    /// Configurations a storage may record.
    #[test]
    fn conf_state_checks() {
        let ok = [
            ConfState::default(),
            ConfState::from_voters([1, 2, 3]),
            ConfState {
                voters: vec![1, 2],
                learners: vec![3],
                ..ConfState::default()
            },
            ConfState {
                voters: vec![1, 2],
                voters_outgoing: vec![1, 2, 3],
                learners_next: vec![3],
                auto_leave: true,
                ..ConfState::default()
            },
        ];
        for cs in ok {
            assert_eq!(check_conf_state(&cs), Ok(()), "{cs:?}");
        }
        let bad = [
            ConfState::from_voters([0]),
            ConfState::from_voters([1, u64::MAX]),
            ConfState::from_voters([1, 1]),
            ConfState {
                voters: vec![1],
                learners: vec![1],
                ..ConfState::default()
            },
            ConfState {
                voters: vec![1, 2],
                learners: vec![2],
                ..ConfState::default()
            },
            ConfState {
                voters: vec![1],
                learners_next: vec![2],
                ..ConfState::default()
            },
            ConfState {
                learners: vec![2],
                ..ConfState::default()
            },
        ];
        for cs in bad {
            assert!(
                matches!(check_conf_state(&cs), Err(Error::ConfChangeRefused(_))),
                "{cs:?}"
            );
        }
    }
}
