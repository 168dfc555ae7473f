//! Quiescence (`Config::quiesce`) and the multi-group host helper
//! (`raftlet::multi`): idle groups stop ticking and leave the sweep, wake
//! on proposals and messages, followers of a dead quiesced leader campaign
//! within the documented bound, a quiesced leader serves no lease read
//! from its old lease, and a peer that does not quiesce (as an etcd node)
//! keeps the group awake.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use raftlet::multi::MultiNode;
use raftlet::pb::{ConfState, EntryType};
use raftlet::{Config, MemoryStorage, RawNode, ReadOnlyOption, StateRole};

const ET: usize = 10;

struct Net {
    hosts: BTreeMap<u64, MultiNode<MemoryStorage>>,
    down: BTreeSet<u64>,
    /// Payloads applied, per (node, group).
    applied: BTreeMap<(u64, u64), Vec<Bytes>>,
    reads: BTreeMap<(u64, u64), usize>,
}

fn config(id: u64, group: u64, tweak: &dyn Fn(u64, &mut Config)) -> Config {
    let mut c = Config::new(id);
    c.election_tick = ET;
    c.heartbeat_tick = 1;
    c.quiesce = true;
    c.seed = id * 1_000_003 + group + 1;
    tweak(id, &mut c);
    c
}

impl Net {
    fn new(groups: u64, tweak: &dyn Fn(u64, &mut Config)) -> Net {
        let mut hosts = BTreeMap::new();
        for id in 1..=3 {
            let mut h = MultiNode::new(id, ET, 1);
            for g in 0..groups {
                let s = MemoryStorage::new_with_conf_state(ConfState::from_voters(vec![1, 2, 3]))
                    .unwrap();
                let n = RawNode::new(&config(id, g, tweak), s).unwrap();
                h.add_group(g, n).unwrap();
            }
            for p in 1..=3 {
                h.add_peer(p);
            }
            hosts.insert(id, h);
        }
        let mut net = Net {
            hosts,
            down: BTreeSet::new(),
            applied: BTreeMap::new(),
            reads: BTreeMap::new(),
        };
        for g in 0..groups {
            let leader = g % 3 + 1;
            net.hosts
                .get_mut(&leader)
                .unwrap()
                .with_group(g, |n, _| n.campaign().unwrap());
        }
        net.settle();
        net
    }

    fn handle(&mut self, id: u64) {
        let h = self.hosts.get_mut(&id).unwrap();
        for g in h.take_ready_groups() {
            let applied = self.applied.entry((id, g)).or_default();
            let reads = self.reads.entry((id, g)).or_default();
            h.with_group(g, |n, out| {
                while n.has_ready() {
                    let mut rd = n.ready();
                    let s = n.store().clone();
                    s.wl().append(&rd.entries).unwrap();
                    if let Some(hs) = rd.hard_state {
                        s.wl().set_hard_state(hs);
                    }
                    for e in &rd.committed_entries {
                        assert_eq!(e.entry_type, EntryType::EntryNormal);
                        if !e.data().is_empty() {
                            applied.push(e.data.clone().unwrap());
                        }
                    }
                    *reads += rd.read_states.len();
                    out.send(rd.take_all_messages());
                    n.advance(rd);
                }
            });
        }
    }

    /// Delivers frames and handles Readies until nothing moves.
    fn settle(&mut self) {
        for _ in 0..1000 {
            let ids: Vec<u64> = self.hosts.keys().copied().collect();
            let mut frames = Vec::new();
            for &id in &ids {
                if self.down.contains(&id) {
                    continue;
                }
                self.handle(id);
                for (to, f) in self.hosts.get_mut(&id).unwrap().take_frames() {
                    frames.push((to, f));
                }
            }
            if frames.is_empty() {
                return;
            }
            for (to, f) in frames {
                if self.down.contains(&to) {
                    continue;
                }
                if let Some(h) = self.hosts.get_mut(&to) {
                    h.receive(&Bytes::from(f)).unwrap();
                }
            }
        }
        panic!("the network never settled");
    }

    fn tick(&mut self) {
        for (id, h) in self.hosts.iter_mut() {
            if !self.down.contains(id) {
                h.tick();
            }
        }
        self.settle();
    }

    fn role(&mut self, id: u64, g: u64) -> StateRole {
        self.hosts
            .get_mut(&id)
            .unwrap()
            .with_group(g, |n, _| n.basic_status().soft_state.raft_state)
            .unwrap()
    }

    fn quiesced(&mut self, id: u64, g: u64) -> bool {
        self.hosts
            .get_mut(&id)
            .unwrap()
            .with_group(g, |n, _| n.is_quiesced())
            .unwrap()
    }

    fn awake(&self) -> usize {
        self.hosts.values().map(|h| h.awake_len()).sum()
    }
}

#[test]
fn idle_groups_quiesce_and_leave_the_sweep() {
    let mut net = Net::new(30, &|_, _| {});
    for _ in 0..5 {
        net.tick();
    }
    assert_eq!(net.awake(), 0, "every idle group sleeps");
    for g in 0..30 {
        assert_eq!(net.role(g % 3 + 1, g), StateRole::Leader);
        for id in 1..=3 {
            assert!(net.quiesced(id, g));
        }
    }
    // Asleep, nothing happens however long: no elections, no messages.
    let before: Vec<u64> = net.hosts.values().map(|h| h.stats().group_ticks).collect();
    for _ in 0..10 * ET {
        net.tick();
    }
    let after: Vec<u64> = net.hosts.values().map(|h| h.stats().group_ticks).collect();
    assert_eq!(before, after, "a quiesced group is never ticked");
    assert_eq!(net.awake(), 0);
    for g in 0..30 {
        assert_eq!(net.role(g % 3 + 1, g), StateRole::Leader);
    }
}

#[test]
fn a_proposal_wakes_the_group_commits_and_it_sleeps_again() {
    let mut net = Net::new(9, &|_, _| {});
    for _ in 0..3 {
        net.tick();
    }
    assert_eq!(net.awake(), 0);
    // Propose on a follower: it wakes, forwards, the leader wakes.
    let g = 4; // led by node 2
    net.hosts
        .get_mut(&3)
        .unwrap()
        .with_group(g, |n, _| n.propose(b"hello".to_vec()).unwrap());
    net.settle();
    for _ in 0..3 {
        net.tick();
    }
    for id in 1..=3 {
        assert_eq!(net.applied[&(id, g)], vec![Bytes::from_static(b"hello")]);
        assert!(net.quiesced(id, g), "node {id} sleeps again");
    }
    assert_eq!(net.awake(), 0);
}

/// The leader's node dies while its groups sleep: each follower hears
/// nothing from that node for an election timeout, is woken, and a new
/// leader is elected within the check-quorum bound (2 election
/// timeouts after the last frame from the dead node), with every
/// committed entry kept.
#[test]
fn followers_of_a_dead_quiesced_leader_elect_within_the_bound() {
    let mut net = Net::new(12, &|_, _| {});
    for g in 0..12 {
        net.hosts
            .get_mut(&(g % 3 + 1))
            .unwrap()
            .with_group(g, |n, _| n.propose(format!("v{g}").into_bytes()).unwrap());
    }
    net.settle();
    for _ in 0..3 {
        net.tick();
    }
    assert_eq!(net.awake(), 0);
    net.down.insert(1);
    let led_by_1: Vec<u64> = (0..12).filter(|g| g % 3 == 0).collect();
    let mut campaigned_at = BTreeMap::new();
    let mut elected_at = BTreeMap::new();
    for t in 1..=(6 * ET) as u64 {
        net.tick();
        for &g in &led_by_1 {
            let roles = [net.role(2, g), net.role(3, g)];
            if roles.iter().any(|r| *r != StateRole::Follower) {
                campaigned_at.entry(g).or_insert(t);
            }
            if roles.contains(&StateRole::Leader) {
                elected_at.entry(g).or_insert(t);
            }
        }
    }
    for &g in &led_by_1 {
        let t = campaigned_at[&g];
        // Detection (ET ticks of silence) plus at most one more election
        // timeout: the check-quorum bound of a group that never slept
        // (its followers campaign within 2 ET of the last heartbeat).
        assert!(t < 2 * ET as u64, "group {g} campaigned only at tick {t}");
        assert!(elected_at.contains_key(&g), "group {g} never elected");
        for id in 2..=3 {
            assert_eq!(net.applied[&(id, g)], vec![Bytes::from(format!("v{g}"))]);
        }
    }
    // Groups not led by the dead node keep sleeping under their leaders
    // (their followers on node 1 are gone, which changes nothing).
    for g in (0..12).filter(|g| g % 3 != 0) {
        assert_eq!(net.role(g % 3 + 1, g), StateRole::Leader);
    }
    assert!(net.hosts[&2].stats().woken_by_liveness > 0);
}

/// With lease-based reads, a quiesced leader does not answer a read from
/// the lease it held before it slept: the read wakes the group and waits
/// for a heartbeat round acknowledged by a quorum.
#[test]
fn a_quiesced_leader_serves_no_read_from_its_old_lease() {
    let mut net = Net::new(3, &|_, c| c.read_only_option = ReadOnlyOption::LeaseBased);
    for _ in 0..3 {
        net.tick();
    }
    assert_eq!(net.awake(), 0);
    let g = 0; // led by node 1
               // A read wakes the leader, which gets a lease with the round that
               // confirms it; the idle group then sleeps again within the lease.
    net.hosts
        .get_mut(&1)
        .unwrap()
        .with_group(g, |n, _| n.read_index(Bytes::from_static(b"r0")).unwrap());
    net.settle();
    assert_eq!(net.reads[&(1, g)], 1);
    net.tick();
    assert!(net.quiesced(1, g));
    net.reads.clear();
    // Asleep, the lease is gone: a read is not answered until followers
    // acknowledge a new round.
    let answered_at_once = net
        .hosts
        .get_mut(&1)
        .unwrap()
        .with_group(g, |n, _| {
            assert!(n.is_quiesced());
            n.read_index(Bytes::from_static(b"r1")).unwrap();
            assert!(!n.is_quiesced(), "a read wakes the leader");
            let rd = n.ready();
            let at_once = !rd.read_states.is_empty();
            let s = n.store().clone();
            s.wl().append(&rd.entries).unwrap();
            // Drop this Ready's messages: the followers never hear.
            n.advance(rd);
            at_once
        })
        .unwrap();
    assert!(!answered_at_once, "answered from a lease that slept");
    // Followers unreachable: no answer however long the leader ticks
    // (fewer ticks than check-quorum needs to depose it).
    net.down.insert(2);
    net.down.insert(3);
    for _ in 0..ET / 2 {
        net.tick();
    }
    assert_eq!(net.reads.get(&(1, g)).copied().unwrap_or(0), 0);
    // Followers back: the next round confirms the read.
    net.down.clear();
    for _ in 0..3 {
        net.tick();
    }
    assert_eq!(net.reads[&(1, g)], 1);
}

/// A follower that does not quiesce (quiescence off, as on an etcd peer,
/// which echoes heartbeat contexts) keeps its group awake: the leader
/// stops offering quiescence for the term and the group runs as usual.
#[test]
fn a_peer_that_does_not_quiesce_keeps_the_group_awake() {
    let mut net = Net::new(3, &|id, c| c.quiesce = id != 3);
    for _ in 0..3 * ET {
        net.tick();
    }
    for g in 0..3 {
        let leader = g % 3 + 1;
        assert_eq!(net.role(leader, g), StateRole::Leader, "no election");
        for id in 1..=3 {
            assert!(!net.quiesced(id, g), "group {g} sleeps on node {id}");
        }
    }
    // The groups still commit.
    net.hosts
        .get_mut(&2)
        .unwrap()
        .with_group(1, |n, _| n.propose(b"x".to_vec()).unwrap());
    net.settle();
    net.tick();
    for id in 1..=3 {
        assert_eq!(net.applied[&(id, 1)], vec![Bytes::from_static(b"x")]);
    }
}

#[test]
fn a_malformed_frame_changes_nothing() {
    let mut net = Net::new(3, &|_, _| {});
    for _ in 0..3 {
        net.tick();
    }
    let h = net.hosts.get_mut(&2).unwrap();
    for bad in [
        &b""[..],
        b"RLF\x01",
        b"RLF\x01\x01\0\0\0\0\0\0\0\x05\0\0\0xx",
    ] {
        assert!(h.receive(&Bytes::copy_from_slice(bad)).is_err());
    }
    assert_eq!(h.stats().bad_frames, 3);
    assert_eq!(h.awake_len(), 0);
    assert!(h.take_ready_groups().is_empty());
}
