//! The pipelined host ([`HostKind::Pipelined`]): a host that takes every
//! freedom the Ready contract gives, and a disk that holds exactly the
//! durable prefix of its writes.
//!
//! A Ready is taken whenever the node has one and fewer than
//! [`Params::max_in_flight`](crate::Params::max_in_flight) Readies are in
//! flight. Its `messages` leave at once; its write (snapshot, entries, hard
//! state) and its `persisted_messages` join the node's write queue, to
//! become durable after a drawn latency and never before the write ahead of
//! it. Only when a write lands does the host put it on the disk (the
//! node's `MemoryStorage`), send its `persisted_messages` and acknowledge
//! the Ready (`advance_append` or `on_persist_ready`, sometimes a step
//! later, covered by the next acknowledgement). Committed entries and
//! snapshots go to the apply queue when the Ready is taken and are applied
//! at random later steps (`advance_apply_to`), on some seeds before their
//! Ready is durable locally. Meanwhile the node keeps ticking, stepping
//! messages and serving the client.
//!
//! A crash loses the whole queue. The write at its front, the one in
//! progress, may be torn: a prefix of (snapshot, entries in order) lands and
//! its hard state is lost. The node restarts from the disk alone.
//!
//! With disk storage (`super::disk`) the write is issued to the store,
//! unsynced, when the Ready is taken and synced when it lands; a crash
//! leaves it to the filesystem which of the writes issued survive.

use std::fmt::Write as _;

use raftlet::pb::{Entry, Snapshot};
use raftlet::{Ready, Storage};

use super::{describe_ready, host_err, NodeState, Pending, Phase, Res, Sim};
use crate::params::{MAX_WRITE_STALL, UNITS_PER_TICK};

/// A Ready taken by a pipelined host whose write is not durable yet. Its
/// `messages` were sent when it was taken; the rest waits for the write.
pub(super) struct Write {
    /// The Ready, without its `messages`.
    rd: Ready,
    /// When the write becomes durable (never before the one ahead of it).
    durable_at: u64,
    /// When a crash hits the host while this write is in flight, if one
    /// was drawn.
    crash_at: Option<u64>,
    /// The node's term and vote as of this Ready: durable once it is.
    vote: (u64, u64),
}

/// Where a crash hits a pipelined host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PipelineCrash {
    /// Right after taking a Ready, before sending anything of it.
    BeforeSend,
    /// After sending the `messages` of the Ready just taken.
    AfterSend,
    /// While the write at the front of the queue is landing.
    MidWrite,
    /// While the write of a term or vote change is in flight.
    VoteWrite,
}

impl PipelineCrash {
    fn name(self) -> &'static str {
        match self {
            PipelineCrash::BeforeSend => "crash-pipelined-before-send",
            PipelineCrash::AfterSend => "crash-pipelined-after-send",
            PipelineCrash::MidWrite => "crash-pipelined-mid-write",
            PipelineCrash::VoteWrite => "crash-pipelined-term-not-durable",
        }
    }
}

impl Write {
    /// The index of the last entry this write appends, if any.
    /// The index of the snapshot this write carries, if any.
    pub(super) fn snapshot_index(&self) -> Option<u64> {
        self.rd.snapshot.as_ref().map(|s| s.metadata.index)
    }

    pub(super) fn last_index(&self) -> Option<u64> {
        self.rd.entries.last().map(|e| e.index)
    }
}

impl Sim {
    /// One step of `id`'s pipelined host: land the writes that are due,
    /// then take Readies (up to 4 per step) while the pipeline has room.
    pub(super) fn pipelined_readies(&mut self, id: u64) -> Res {
        let crash_due = self.nodes.get(&id).is_some_and(|n| {
            n.writes
                .iter()
                .any(|w| w.crash_at.is_some_and(|t| t <= self.now))
        });
        if crash_due && self.phase == Phase::Chaos {
            return self.crash_pipelined(id, PipelineCrash::VoteWrite);
        }
        self.land_writes(id)?;
        if self.phase != Phase::Chaos {
            // Once the faults stop, hosts apply at once.
            self.apply_queued(id, u64::MAX)?;
        }
        for _ in 0..4 {
            let Some(node) = self.nodes.get(&id) else {
                return Ok(());
            };
            let Some(rn) = node.rn.as_ref() else {
                return Ok(());
            };
            if node.writes.len() >= self.p.max_in_flight || !rn.has_ready() {
                break;
            }
            if !self.take_ready(id)? {
                return Ok(());
            }
            self.land_writes(id)?;
            if self.phase != Phase::Chaos {
                self.apply_queued(id, u64::MAX)?;
            }
        }
        Ok(())
    }

    /// Takes one Ready: sends its `messages`, queues its apply work and its
    /// write. Returns false when the host crashed meanwhile.
    fn take_ready(&mut self, id: u64) -> Res<bool> {
        let node = self.nodes.get_mut(&id).expect("present");
        let rn = node.rn.as_mut().expect("up");
        let mut rd = rn.ready();
        let in_flight = node.writes.len() as u64;
        self.tr(|| {
            format!(
                "{} (writes in flight: {in_flight})",
                describe_ready(id, &rd)
            )
        });
        self.stats.op("readies");
        let vote = self.check_early_messages(id, &rd)?;
        self.check_membership_events(id, &rd)?;
        if in_flight > 0 {
            self.stats.op("readies-taken-with-writes-in-flight");
        }
        self.stats.max("readies-in-flight", in_flight + 1);
        let crash = if self.phase == Phase::Chaos && self.rng.chance(self.p.crash_rate) {
            Some(
                self.rng
                    .pick(&[PipelineCrash::BeforeSend, PipelineCrash::AfterSend]),
            )
        } else {
            None
        };
        if crash == Some(PipelineCrash::BeforeSend) {
            // The Ready is lost with the writes in flight.
            self.nodes
                .get_mut(&id)
                .expect("present")
                .writes
                .push_back(Write {
                    rd,
                    durable_at: u64::MAX,
                    crash_at: None,
                    vote,
                });
            self.crash_pipelined(id, PipelineCrash::BeforeSend)?;
            return Ok(false);
        }
        self.send_all(id, std::mem::take(&mut rd.messages))?;
        if crash == Some(PipelineCrash::AfterSend) {
            self.nodes
                .get_mut(&id)
                .expect("present")
                .writes
                .push_back(Write {
                    rd,
                    durable_at: u64::MAX,
                    crash_at: None,
                    vote,
                });
            self.crash_pipelined(id, PipelineCrash::AfterSend)?;
            return Ok(false);
        }
        // With disk storage the write is issued now and completes later.
        self.disk_issue(id, &rd)?;
        let number = rd.number();
        let node = self.nodes.get_mut(&id).expect("present");
        if let Some(snap) = rd.snapshot.clone() {
            node.apply_queue
                .push_back((number, Pending::Snapshot(snap)));
        }
        for e in rd.committed_entries.drain(..) {
            node.apply_queue.push_back((number, Pending::Entry(e)));
        }
        let latency = self
            .rng
            .range(self.p.write_latency.0, self.p.write_latency.1);
        let node = self.nodes.get_mut(&id).expect("present");
        let after = node.writes.back().map_or(0, |w| w.durable_at);
        let durable_at = (self.now + latency).max(after);
        let read_states = std::mem::take(&mut rd.read_states);
        let vote_write = rd.must_sync && rd.hard_state.is_some();
        let crash_at = (self.phase == super::Phase::Chaos
            && vote_write
            && durable_at > self.now
            && self.rng.chance(self.p.crash_in_vote_write))
        .then(|| self.rng.range(self.now, durable_at - 1));
        let node = self.nodes.get_mut(&id).expect("present");
        node.writes.push_back(Write {
            rd,
            durable_at,
            crash_at,
            vote,
        });
        for rs in &read_states {
            self.check_read(id, rs.index, &rs.request_ctx)?;
        }
        self.serve_reads(id)?;
        self.after_op(id)?;
        Ok(true)
    }

    /// Stalls the disks of pipelined hosts at random (a fault): no write
    /// lands until the stall ends, while the node keeps running.
    pub(super) fn stall_disks(&mut self) {
        if self.p.write_stall <= 0.0 {
            return;
        }
        for id in self.up_ids() {
            if !self.rng.chance(self.p.write_stall) {
                continue;
            }
            let until = self.now + self.rng.range(UNITS_PER_TICK, MAX_WRITE_STALL);
            let node = self.nodes.get_mut(&id).expect("present");
            node.disk_stalled_until = node.disk_stalled_until.max(until);
            self.stats.fault("disk-stalled");
            self.tr(|| format!("n{id} disk STALLED until {until}"));
        }
    }

    /// `id` acts on `term` (it leads in it) while the write that makes the
    /// term durable is still in flight: with the seed's probability of a
    /// crash in such a window, aims one at it, after whatever the node
    /// sends next (its first appends) and before the write lands.
    pub(super) fn aim_crash_at_term_write(&mut self, id: u64, term: u64) {
        if self.phase != Phase::Chaos || !self.rng.chance(self.p.aim_crashes) {
            return;
        }
        let now = self.now;
        if self.rng.chance(self.p.aim_stall) {
            // Its disk stalls as well: the node leads on for a while (and
            // may commit through its peers' acknowledgements) before it
            // dies.
            let until = now + self.rng.range(3 * UNITS_PER_TICK, 20 * UNITS_PER_TICK);
            let node = self.nodes.get_mut(&id).expect("present");
            node.disk_stalled_until = node.disk_stalled_until.max(until);
            self.stats.fault("disk-stalled");
            self.tr(|| format!("n{id} disk STALLED until {until}"));
        }
        let Some(node) = self.nodes.get(&id) else {
            return;
        };
        let lands = |w: &Write| w.durable_at.max(node.disk_stalled_until);
        let Some(i) = node
            .writes
            .iter()
            .position(|w| w.rd.hard_state.is_some_and(|hs| hs.term == term) && lands(w) > now + 1)
        else {
            return;
        };
        // Anywhere in the window: the later, the more the node proposes and
        // replicates meanwhile.
        let at = self.rng.range(now + 1, lands(&node.writes[i]) - 1);
        let w = &mut self.nodes.get_mut(&id).expect("present").writes[i];
        w.crash_at = Some(w.crash_at.map_or(at, |c| c.min(at)));
        self.stats.op("crashes-aimed-at-term-writes");
        if self.rng.chance(self.p.aim_cut_link) {
            // The link to one peer fails too, until the crash: the node's
            // entries reach some peers and not others.
            let peers: Vec<u64> = self.up_ids().into_iter().filter(|&p| p != id).collect();
            if !peers.is_empty() {
                let peer = self.rng.pick(&peers);
                self.cut_links.insert((id, peer), at + 1);
                self.stats.fault("link-cut-before-aimed-crash");
                self.tr(|| format!("link n{id} -> n{peer} CUT until {}", at + 1));
            }
        }
        self.tr(|| format!("n{id} leads term {term} before it is durable: a crash is due at {at}"));
    }

    /// Lands every write of `id` that is due, in order: puts it on the
    /// disk, sends its `persisted_messages` and acknowledges its Ready (or
    /// puts the acknowledgement off). First acknowledges a Ready whose
    /// acknowledgement was put off at an earlier step.
    fn land_writes(&mut self, id: u64) -> Res {
        if let Some((rd, vote)) = self.nodes.get_mut(&id).and_then(|n| n.pending_ack.take()) {
            self.acknowledge(id, rd, vote)?;
        }
        loop {
            let Some(node) = self.nodes.get(&id) else {
                return Ok(());
            };
            if node.state != NodeState::Up {
                return Ok(());
            }
            match node.writes.front() {
                Some(w) if w.durable_at <= self.now && node.disk_stalled_until <= self.now => {}
                _ => return Ok(()),
            }
            if self.phase == Phase::Chaos && self.rng.chance(self.p.crash_rate / 2.0) {
                return self.crash_pipelined(id, PipelineCrash::MidWrite);
            }
            let node = self.nodes.get_mut(&id).expect("present");
            let Write { mut rd, vote, .. } = node.writes.pop_front().expect("front exists");
            let number = rd.number();
            self.disk_land(id, &rd, vote.0)?;
            self.persist(id, rd.snapshot.as_ref(), &rd.entries, rd.hard_state)?;
            let node = self.nodes.get_mut(&id).expect("present");
            node.durable = number;
            self.tr(|| format!("n{id} write #{number} durable"));
            self.send_all(id, std::mem::take(&mut rd.persisted_messages))?;
            if self.phase == Phase::Chaos && self.rng.chance(self.p.ack_later) {
                // Acknowledged at the next step, or by the next
                // acknowledgement (which covers every earlier Ready).
                self.stats.op("acks-put-off");
                let node = self.nodes.get_mut(&id).expect("present");
                if let Some((older, _)) = &node.pending_ack {
                    // Its acknowledgement is this one's now; its snapshot,
                    // if any, stays unreported until then.
                    if let Some(s) = &older.snapshot {
                        node.pending_ack_snapshot = node.pending_ack_snapshot.max(s.metadata.index);
                    }
                }
                node.pending_ack = Some((rd, vote));
            } else {
                self.nodes.get_mut(&id).expect("present").pending_ack = None;
                self.acknowledge(id, rd, vote)?;
            }
        }
    }

    /// Reports `rd` (and every earlier Ready) durable to the node, whose
    /// term and vote as of `rd` were `vote`.
    fn acknowledge(&mut self, id: u64, rd: Ready, vote: (u64, u64)) -> Res {
        let by_number = self.rng.chance(self.p.ack_by_number);
        let Some(node) = self.nodes.get_mut(&id) else {
            return Ok(());
        };
        // This acknowledgement covers every earlier Ready.
        node.pending_ack_snapshot = 0;
        let Some(rn) = node.rn.as_mut() else {
            return Ok(());
        };
        let number = rd.number();
        let light = !by_number && self.rng.chance(self.p.light_advance);
        let mut lr = None;
        if by_number {
            rn.on_persist_ready(number);
        } else if light {
            lr = Some(rn.advance_light(rd));
        } else {
            rn.advance_append(rd);
        }
        node.acked_vote = vote;
        self.tr(|| {
            format!(
                "n{id} acknowledged Ready #{number} ({})",
                if by_number {
                    "on_persist_ready"
                } else if light {
                    "advance_light"
                } else {
                    "advance_append"
                }
            )
        });
        if let Some(lr) = lr {
            // Its entries join the apply queue, behind those of every Ready
            // taken before.
            self.handle_light(id, lr, number, true)?;
        }
        self.after_op(id)
    }

    /// Writes a snapshot, entries and a hard state (any of them possibly
    /// absent) to `id`'s disk, in that order, and checks what landed.
    fn persist(
        &mut self,
        id: u64,
        snapshot: Option<&Snapshot>,
        entries: &[Entry],
        hard_state: Option<raftlet::pb::HardState>,
    ) -> Res {
        let storage = self.nodes[&id].storage.clone();
        {
            let mut s = storage.wl();
            if let Some(snap) = snapshot {
                s.apply_snapshot(snap.clone())
                    .map_err(|e| host_err(self.now, format!("node {id}: apply_snapshot: {e}")))?;
            }
            s.append(entries)
                .map_err(|e| host_err(self.now, format!("node {id}: append: {e}")))?;
            if let Some(hs) = hard_state {
                s.set_hard_state(hs);
            }
        }
        self.check_persisted(id, &storage, snapshot, entries)
    }

    /// Crashes a pipelined host: every write not durable is lost, except
    /// that the one in progress may be torn (a prefix of its snapshot and
    /// entries lands; its hard state never does).
    fn crash_pipelined(&mut self, id: u64, at: PipelineCrash) -> Res {
        let node = self.nodes.get_mut(&id).expect("present");
        let mut writes = std::mem::take(&mut node.writes);
        let mut lost = writes.len() as u64;
        let mut torn = String::new();
        if node.disk.is_some() {
            // The filesystem decides what of the writes issued survives
            // (`Sim::disk_crash`); the model keeps only what landed.
            writes.clear();
        }
        if let Some(Write { rd, .. }) = writes.pop_front() {
            let has_snap = u64::from(rd.snapshot.is_some());
            let parts = has_snap + rd.entries.len() as u64;
            let landed = self.rng.below(parts + 1);
            let snapshot = rd
                .snapshot
                .as_ref()
                .filter(|_| landed >= 1 && has_snap == 1);
            let n_ents = (landed - (has_snap.min(landed))) as usize;
            let complete = landed == parts && rd.hard_state.is_none();
            if landed > 0 {
                self.persist(id, snapshot, &rd.entries[..n_ents], None)?;
                if complete {
                    // All of it landed (it had no hard state); only its
                    // acknowledgement and persisted messages are lost.
                    lost -= 1;
                } else {
                    self.stats.op("torn-writes");
                }
                let _ = write!(
                    torn,
                    ", write #{} {}: {}{} of {} entries landed",
                    rd.number(),
                    if complete { "landed whole" } else { "torn" },
                    if snapshot.is_some() {
                        "snapshot + "
                    } else {
                        ""
                    },
                    n_ents,
                    rd.entries.len()
                );
            }
        }
        self.stats.op_n("writes-lost-in-crashes", lost);
        if lost > 0 {
            self.stats.op("crashes-with-lost-writes");
        }
        self.tr(|| format!("n{id} loses {lost} writes not yet durable{torn}"));
        // A crash aimed at a term write is followed by a prompt restart
        // (the node then runs for its term again, unaware it held it), late
        // enough that the answers to its last messages are lost.
        let down = (at == PipelineCrash::VoteWrite).then(|| {
            if self.p.lose_on_restart {
                self.rng.range(1, UNITS_PER_TICK)
            } else {
                self.rng.range(2 * UNITS_PER_TICK, 6 * UNITS_PER_TICK)
            }
        });
        self.crash(id, at.name(), down);
        Ok(())
    }

    /// The entries `lo..=hi` of `id`'s log as its host knows them: the disk,
    /// then the writes in flight in order (a write replaces the log from
    /// its first entry on; a snapshot replaces all of it). Stops at the
    /// first index it does not know (compacted or not there).
    pub(super) fn host_entries(&self, id: u64, lo: u64, hi: u64) -> Vec<Entry> {
        let node = &self.nodes[&id];
        let mut base = lo;
        let mut tail: Vec<Entry> = if lo <= hi {
            node.storage
                .entries(lo, hi + 1, u64::MAX)
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        for w in &node.writes {
            if let Some(s) = &w.rd.snapshot {
                tail.clear();
                base = base.max(s.metadata.index + 1);
            }
            let Some(first) = w.rd.entries.first().map(|e| e.index) else {
                continue;
            };
            let end = base + tail.len() as u64;
            if first > end {
                // Not contiguous with what is known here (the range starts
                // past the disk's log): keep what is known.
                continue;
            }
            tail.truncate(first.saturating_sub(base) as usize);
            tail.extend(
                w.rd.entries
                    .iter()
                    .filter(|e| e.index >= base && e.index <= hi)
                    .cloned(),
            );
        }
        if base != lo {
            // Indexes below `base` were replaced by a snapshot in flight.
            return Vec::new();
        }
        tail
    }
}
