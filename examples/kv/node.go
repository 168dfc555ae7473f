package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"strconv"
	"sync"
	"time"

	raftlet "github.com/raftlet/raftlet/bindings/go"
	"go.etcd.io/raft/v3/raftpb"
)

// decodeHeader checks an inbound frame with raftlet's decoder.
func decodeHeader(b []byte) (raftlet.MessageHeader, error) {
	return raftlet.DecodeMessageHeader(b)
}

// nodeConfig is what main passes to newNode.
type nodeConfig struct {
	id              uint64
	dir             string
	peers           map[uint64]string // the address this node dials for each peer
	join            bool
	snapshotEntries uint64
	tick            time.Duration
}

// errDefinite and errIndefinite classify the failures of a request: the
// first certainly changed nothing, the second may have.
type reqError struct {
	msg      string
	definite bool
}

func (e *reqError) Error() string { return e.msg }

func definite(format string, args ...any) error {
	return &reqError{msg: fmt.Sprintf(format, args...), definite: true}
}

func indefinite(format string, args ...any) error {
	return &reqError{msg: fmt.Sprintf(format, args...), definite: false}
}

// pendingRead is a linearizable read waiting for its read index, then for
// the node to apply up to it.
type pendingRead struct {
	key   string
	index uint64 // 0 until the ReadState arrives
	done  chan readResult
}

type readResult struct {
	val string
	ok  bool
}

// pendingWrite is a proposal waiting to be applied.
type pendingWrite struct {
	data []byte
	done chan result
}

// memberWait waits for the configuration to satisfy pred.
type memberWait struct {
	pred func(cs raftpb.ConfState) bool
	done chan struct{}
}

// node is one raft member with its state machine. mu guards everything
// below it, the RawNode included (not safe for concurrent use); the Ready
// loop releases it while a Ready is written, so that proposals, reads
// and inbound messages go on during the sync (the Ready contract lets
// them).
type node struct {
	cfg     nodeConfig
	storage *raftlet.MemoryStorage
	tr      *transport
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}

	mu        sync.Mutex
	rn        *raftlet.RawNode
	kv        *kvStore
	cs        raftpb.ConfState
	applied   uint64
	snapIndex uint64
	lead      uint64
	role      raftlet.StateType
	stopping  bool
	nextSeq   uint64
	writes    map[uint64]*pendingWrite
	reads     map[uint64]*pendingRead // by request context
	waiting   []*pendingRead          // reads with their index, not yet applied
	members   []*memberWait
	removed   bool
}

// newNode opens (or creates) the node's storage and starts it.
func newNode(cfg nodeConfig) (*node, error) {
	storage, err := raftlet.OpenDiskStorage(cfg.dir)
	if err != nil {
		return nil, err
	}
	n := &node{
		cfg:     cfg,
		storage: storage,
		kick:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		kv:      newKVStore(),
		writes:  map[uint64]*pendingWrite{},
		reads:   map[uint64]*pendingRead{},
		// Request ids are node id + sequence; the sequence starts at the
		// boot time in nanoseconds, so an entry proposed before a restart
		// never answers a request made after it.
		nextSeq: uint64(time.Now().UnixNano()),
	}
	snap, err := storage.Snapshot()
	if err != nil {
		storage.Close()
		return nil, err
	}
	last, err := storage.LastIndex()
	if err != nil {
		storage.Close()
		return nil, err
	}
	fresh := raftlet.IsEmptySnap(snap) && last == 0
	if !raftlet.IsEmptySnap(snap) {
		if err := n.kv.restore(snap.Data); err != nil {
			storage.Close()
			return nil, err
		}
		n.applied, n.snapIndex = snap.Metadata.Index, snap.Metadata.Index
		n.cs = snap.Metadata.ConfState
	}
	rc := raftlet.DefaultConfig(cfg.id)
	rc.Storage = storage
	rc.Applied = n.applied
	rc.AutoPromote = true
	rc.MaxUncommittedEntriesSize = 64 << 20
	rn, err := raftlet.NewRawNode(&rc)
	if err != nil {
		storage.Close()
		return nil, err
	}
	n.rn = rn
	switch {
	case fresh && !cfg.join:
		var peers []raftlet.Peer
		for id := range cfg.peers {
			peers = append(peers, raftlet.Peer{ID: id})
		}
		if err := rn.Bootstrap(peers); err != nil {
			rn.Close()
			storage.Close()
			return nil, fmt.Errorf("bootstrap: %w", err)
		}
		log.Printf("bootstrapped a new cluster of %d voters", len(peers))
	case fresh:
		log.Printf("joining: empty, waiting for the leader")
	default:
		hs := rn.BasicStatus()
		log.Printf("restarted from storage: term %d, commit %d, snapshot at %d, last index %d",
			hs.Term, hs.Commit, snap.Metadata.Index, last)
	}
	n.tr = newTransport(cfg.id)
	n.tr.onMessage = n.step
	n.tr.onUnreachable = func(id uint64) {
		n.mu.Lock()
		if !n.stopping {
			n.rn.ReportUnreachable(id)
		}
		n.mu.Unlock()
	}
	n.tr.onSnapshot = func(id uint64, ok bool) {
		n.mu.Lock()
		if !n.stopping {
			st := raftlet.SnapshotFinish
			if !ok {
				st = raftlet.SnapshotFailure
			}
			n.rn.ReportSnapshot(id, st)
			log.Printf("snapshot to %d: sent %v", id, ok)
		}
		n.mu.Unlock()
		n.wake()
	}
	for id, addr := range cfg.peers {
		n.tr.setPeer(id, addr)
	}
	for id, m := range n.kv.members {
		n.learnAddress(id, m)
	}
	return n, nil
}

// start listens for peers and runs the loops.
func (n *node) start(raftAddr string) error {
	if err := n.tr.listen(raftAddr); err != nil {
		return err
	}
	go n.loop()
	go n.ticker()
	n.wake()
	return nil
}

func (n *node) wake() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// step feeds an inbound message (called by the transport).
func (n *node) step(b []byte) error {
	n.mu.Lock()
	if n.stopping {
		n.mu.Unlock()
		return errors.New("stopping")
	}
	err := n.rn.StepBytes(b)
	n.mu.Unlock()
	n.wake()
	return err
}

func (n *node) ticker() {
	t := time.NewTicker(n.cfg.tick)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
			n.mu.Lock()
			if !n.stopping {
				n.rn.Tick()
			}
			n.mu.Unlock()
			n.wake()
		}
	}
}

// loop handles Readies until the node stops.
func (n *node) loop() {
	defer close(n.done)
	for {
		select {
		case <-n.stop:
			return
		case <-n.kick:
		}
		for n.handleReady() {
		}
	}
}

// handleReady handles one Ready, if there is one, following the Ready
// contract: the immediate messages leave at once, the Ready is written
// (synced when it must be) without the lock, then the persisted messages
// leave, the committed entries are applied and the node is told.
func (n *node) handleReady() bool {
	n.mu.Lock()
	if n.stopping || !n.rn.HasReady() {
		n.mu.Unlock()
		return false
	}
	rd := n.rn.Ready()
	enc, err := rd.EncodedMessages()
	if err != nil {
		log.Fatalf("encode messages: %v", err)
	}
	imm := len(rd.ImmediateMessages())
	n.sendLocked(rd.Messages[:imm], enc[:imm])
	if rd.SoftState != nil {
		n.softStateLocked(*rd.SoftState)
	}
	for _, ev := range rd.MembershipEvents {
		switch ev.Kind {
		case raftlet.PromotionProposed:
			log.Printf("membership: proposed promoting learner %d to voter (entry %d)", ev.ID, ev.Index)
		default:
			log.Printf("membership: %v promoted %d demoted %d (entry %d)", ev.Kind, ev.Promoted, ev.Demoted, ev.Index)
		}
	}
	n.mu.Unlock()

	// The write: durable when AppendReady returns.
	if err := n.storage.AppendReady(rd); err != nil {
		log.Fatalf("persist: %v", err)
	}

	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopping {
		return false
	}
	if !raftlet.IsEmptySnap(rd.Snapshot) {
		n.restoreLocked(rd.Snapshot)
	}
	n.sendLocked(rd.Messages[imm:], enc[imm:])
	for _, e := range rd.CommittedEntries {
		n.applyLocked(e)
	}
	for _, rs := range rd.ReadStates {
		if len(rs.RequestCtx) != 8 {
			continue
		}
		if r, ok := n.reads[binary.BigEndian.Uint64(rs.RequestCtx)]; ok && r.index == 0 {
			r.index = rs.Index
			n.waiting = append(n.waiting, r)
		}
	}
	n.serveReadsLocked()
	n.rn.Advance(rd)
	n.maybeSnapshotLocked()
	return true
}

// sendLocked hands messages to the transport; one that cannot be queued
// is reported unreachable (and a snapshot as failed): raft sends again.
func (n *node) sendLocked(ms []raftpb.Message, enc [][]byte) {
	for i, m := range ms {
		snap := m.Type == raftpb.MsgSnap
		if snap && !inConf(m.Snapshot.Metadata.ConfState, m.To) {
			// The snapshot held predates the member (added since): a
			// node refuses a snapshot whose configuration lacks it. Send
			// one of the state as applied now instead, as etcd's server
			// does (the leader applied the change that added m.To).
			fresh, err := n.snapshotLocked()
			if err != nil {
				log.Printf("snapshot for %d: %v", m.To, err)
				n.rn.ReportSnapshot(m.To, raftlet.SnapshotFailure)
				continue
			}
			m.Snapshot = &fresh
			b, err := m.Marshal()
			if err != nil {
				log.Fatalf("encode snapshot message: %v", err)
			}
			enc[i] = b
		}
		if !n.tr.send(m.To, enc[i], snap) {
			n.rn.ReportUnreachable(m.To)
			if snap {
				n.rn.ReportSnapshot(m.To, raftlet.SnapshotFailure)
			}
		} else if snap {
			log.Printf("sending snapshot at %d (%d bytes) to %d", m.Snapshot.Metadata.Index, len(enc[i]), m.To)
		}
	}
}

func roleName(st raftlet.StateType) string {
	switch st {
	case raftlet.StateLeader:
		return "leader"
	case raftlet.StateCandidate:
		return "candidate"
	case raftlet.StatePreCandidate:
		return "pre-candidate"
	default:
		return "follower"
	}
}

func (n *node) softStateLocked(ss raftlet.SoftState) {
	if ss.Lead != n.lead {
		term := n.rn.BasicStatus().Term
		if ss.Lead == 0 {
			log.Printf("leader lost (term %d)", term)
		} else {
			log.Printf("leader is %d (term %d)", ss.Lead, term)
		}
	}
	if ss.RaftState != n.role {
		log.Printf("became %s", roleName(ss.RaftState))
	}
	n.lead, n.role = ss.Lead, ss.RaftState
}

// restoreLocked replaces the state machine with a snapshot from the leader
// (already written with its Ready).
func (n *node) restoreLocked(s raftpb.Snapshot) {
	if err := n.kv.restore(s.Data); err != nil {
		log.Fatalf("restore snapshot at %d: %v", s.Metadata.Index, err)
	}
	n.applied, n.snapIndex = s.Metadata.Index, s.Metadata.Index
	n.cs = s.Metadata.ConfState
	if inConf(n.cs, n.cfg.id) {
		n.removed = false
	}
	for id, m := range n.kv.members {
		n.learnAddress(id, m)
	}
	log.Printf("restored snapshot at %d (term %d, %d keys, voters %v, learners %v)",
		s.Metadata.Index, s.Metadata.Term, len(n.kv.data), n.cs.Voters, n.cs.Learners)
	n.membersChangedLocked()
}

// applyLocked applies one committed entry.
func (n *node) applyLocked(e raftpb.Entry) {
	if e.Index <= n.applied {
		return
	}
	switch e.Type {
	case raftpb.EntryNormal:
		if len(e.Data) > 0 {
			var c command
			if err := json.Unmarshal(e.Data, &c); err != nil {
				log.Printf("entry %d: not a command (%v); skipped", e.Index, err)
				break
			}
			res := n.kv.apply(c)
			if c.Node == n.cfg.id {
				if w, ok := n.writes[c.Seq]; ok && string(w.data) == string(e.Data) {
					w.done <- res
					delete(n.writes, c.Seq)
				}
			}
		}
	case raftpb.EntryConfChange, raftpb.EntryConfChangeV2:
		var cci raftpb.ConfChangeI
		if e.Type == raftpb.EntryConfChange {
			var cc raftpb.ConfChange
			if err := cc.Unmarshal(e.Data); err != nil {
				log.Printf("entry %d: bad conf change (%v); skipped", e.Index, err)
				break
			}
			cci = cc
		} else {
			var cc raftpb.ConfChangeV2
			if err := cc.Unmarshal(e.Data); err != nil {
				log.Printf("entry %d: bad conf change (%v); skipped", e.Index, err)
				break
			}
			cci = cc
		}
		cs, err := n.rn.TryApplyConfChange(cci)
		if err != nil {
			log.Printf("entry %d: conf change refused: %v", e.Index, err)
			break
		}
		n.cs = *cs
		v2 := cci.AsV2()
		var info memberInfo
		hasInfo := len(v2.Context) > 0 && json.Unmarshal(v2.Context, &info) == nil && info.Raft != ""
		for _, ch := range v2.Changes {
			switch ch.Type {
			case raftpb.ConfChangeAddNode, raftpb.ConfChangeAddLearnerNode:
				if ch.NodeID == n.cfg.id {
					// Added back after a removal (wiped, restarted with
					// --join): a member again.
					n.removed = false
				}
				if hasInfo {
					n.kv.members[ch.NodeID] = info
					n.learnAddress(ch.NodeID, info)
				}
			case raftpb.ConfChangeRemoveNode:
				delete(n.kv.members, ch.NodeID)
				if ch.NodeID == n.cfg.id {
					n.removed = true
					log.Printf("membership: this node was removed from the cluster")
				} else if _, fixed := n.cfg.peers[ch.NodeID]; !fixed {
					n.tr.removePeer(ch.NodeID)
				}
			}
		}
		log.Printf("membership: entry %d applied: voters %v, learners %v", e.Index, n.cs.Voters, n.cs.Learners)
		n.membersChangedLocked()
	}
	n.applied = e.Index
}

// learnAddress records how to reach a member added at run time, unless
// --peers names it (the address given on the command line wins).
func (n *node) learnAddress(id uint64, m memberInfo) {
	if _, fixed := n.cfg.peers[id]; fixed || id == n.cfg.id {
		return
	}
	n.tr.setPeer(id, m.addrFor(n.cfg.id))
}

func (n *node) membersChangedLocked() {
	kept := n.members[:0]
	for _, w := range n.members {
		if w.pred(n.cs) {
			close(w.done)
		} else {
			kept = append(kept, w)
		}
	}
	n.members = kept
}

// serveReadsLocked answers the reads whose index is applied.
func (n *node) serveReadsLocked() {
	kept := n.waiting[:0]
	for _, r := range n.waiting {
		if r.index <= n.applied {
			v, ok := n.kv.get(r.key)
			r.done <- readResult{val: v, ok: ok}
			for ctx, rr := range n.reads {
				if rr == r {
					delete(n.reads, ctx)
				}
			}
		} else {
			kept = append(kept, r)
		}
	}
	n.waiting = kept
}

// maybeSnapshotLocked snapshots the state machine every snapshotEntries
// applied entries and compacts the log, keeping a tail for followers
// that are a little behind.
func (n *node) maybeSnapshotLocked() {
	if n.cfg.snapshotEntries == 0 || n.applied < n.snapIndex+n.cfg.snapshotEntries {
		return
	}
	if _, err := n.snapshotLocked(); err != nil {
		log.Printf("snapshot at %d: %v", n.applied, err)
	}
}

// snapshotLocked snapshots the state machine at the applied index (or
// returns the snapshot held when it is there already) and compacts the
// log behind it.
func (n *node) snapshotLocked() (raftpb.Snapshot, error) {
	if n.applied == n.snapIndex {
		s, err := n.storage.Snapshot()
		if err == nil && s.Metadata.Index == n.applied {
			return s, nil
		}
	}
	data, err := n.kv.marshal()
	if err != nil {
		log.Fatalf("snapshot: %v", err)
	}
	cs := n.cs
	snap, err := n.storage.CreateSnapshot(n.applied, &cs, data)
	if err != nil {
		return raftpb.Snapshot{}, err
	}
	n.snapIndex = n.applied
	keep := min(max(n.cfg.snapshotEntries, 1), 1000)
	compacted := uint64(0)
	if n.applied > keep {
		first, _ := n.storage.FirstIndex()
		if c := n.applied - keep; c > first {
			if err := n.storage.Compact(c); err != nil {
				log.Printf("compact to %d: %v", c, err)
			} else {
				compacted = c
			}
		}
	}
	log.Printf("snapshot at %d (%d keys, %d bytes); log compacted to %d", n.applied, len(n.kv.data), len(data), compacted)
	return snap, nil
}

// inConf reports whether id is a member of cs.
func inConf(cs raftpb.ConfState, id uint64) bool {
	return contains(cs.Voters, id) || contains(cs.Learners, id) || contains(cs.VotersOutgoing, id) || contains(cs.LearnersNext, id)
}

// propose replicates a command and waits until it is applied here.
func (n *node) propose(c command, timeout time.Duration) (result, error) {
	deadline := time.Now().Add(timeout)
	n.mu.Lock()
	if n.stopping {
		n.mu.Unlock()
		return result{}, definite("node stopping")
	}
	if !n.waitLeaderLocked(timeout / 2) {
		n.mu.Unlock()
		return result{}, definite("no leader")
	}
	n.nextSeq++
	c.Node, c.Seq = n.cfg.id, n.nextSeq
	data, err := json.Marshal(c)
	if err != nil {
		n.mu.Unlock()
		return result{}, definite("encode: %v", err)
	}
	w := &pendingWrite{data: data, done: make(chan result, 1)}
	if err := n.rn.Propose(data); err != nil {
		n.mu.Unlock()
		return result{}, definite("proposal refused: %v", err)
	}
	n.writes[c.Seq] = w
	n.mu.Unlock()
	n.wake()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case res := <-w.done:
		return res, nil
	case <-t.C:
	case <-n.stop:
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	select {
	case res := <-w.done: // applied while we gave up
		return res, nil
	default:
	}
	delete(n.writes, c.Seq)
	if n.stopping {
		return result{}, indefinite("node stopping; the write was proposed and may be applied")
	}
	return result{}, indefinite("timeout after %v; the write was proposed and may be applied", timeout)
}

// waitLeaderLocked waits (the lock released meanwhile) up to max for a
// leader to be known, as after a restart or during an election; false if
// none is, or the node is stopping.
func (n *node) waitLeaderLocked(max time.Duration) bool {
	deadline := time.Now().Add(max)
	for n.lead == 0 && !n.stopping && time.Now().Before(deadline) {
		n.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
		n.mu.Lock()
	}
	return n.lead != 0 && !n.stopping
}

// read is a linearizable read: ReadIndex through the leader, then served
// once this node applied up to the read index.
func (n *node) read(key string, timeout time.Duration) (readResult, error) {
	deadline := time.Now().Add(timeout)
	n.mu.Lock()
	if n.stopping {
		n.mu.Unlock()
		return readResult{}, definite("node stopping")
	}
	if !n.waitLeaderLocked(timeout / 2) {
		n.mu.Unlock()
		return readResult{}, definite("no leader")
	}
	n.nextSeq++
	ctx := n.nextSeq
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], ctx)
	r := &pendingRead{key: key, done: make(chan readResult, 1)}
	if err := n.rn.ReadIndex(b[:]); err != nil {
		n.mu.Unlock()
		return readResult{}, definite("read refused: %v", err)
	}
	n.reads[ctx] = r
	n.mu.Unlock()
	n.wake()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case res := <-r.done:
		return res, nil
	case <-t.C:
	case <-n.stop:
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	select {
	case res := <-r.done:
		return res, nil
	default:
	}
	delete(n.reads, ctx)
	for i, w := range n.waiting {
		if w == r {
			n.waiting = append(n.waiting[:i], n.waiting[i+1:]...)
			break
		}
	}
	return readResult{}, indefinite("read timed out after %v", timeout)
}

// localRead serves a read from this node's state, however stale.
func (n *node) localRead(key string) readResult {
	n.mu.Lock()
	defer n.mu.Unlock()
	v, ok := n.kv.get(key)
	return readResult{val: v, ok: ok}
}

// addMember proposes id as a new member (a learner, promoted by the leader
// once caught up) and waits until the change is applied here.
func (n *node) addMember(id uint64, info memberInfo, timeout time.Duration) error {
	ctx, err := json.Marshal(info)
	if err != nil {
		return definite("encode: %v", err)
	}
	return n.changeMembers(timeout, func() error { return n.rn.AddMember(id, ctx) },
		func(cs raftpb.ConfState) bool { return contains(cs.Learners, id) || contains(cs.Voters, id) },
		func(cs raftpb.ConfState) bool { return contains(cs.Learners, id) || contains(cs.Voters, id) })
}

// removeMember proposes removing id and waits until it is applied here.
func (n *node) removeMember(id uint64, timeout time.Duration) error {
	gone := func(cs raftpb.ConfState) bool {
		return !contains(cs.Learners, id) && !contains(cs.Voters, id) && !contains(cs.VotersOutgoing, id)
	}
	n.mu.Lock()
	member := !gone(n.cs)
	n.mu.Unlock()
	if !member {
		return errNotMember
	}
	return n.changeMembers(timeout, func() error {
		return n.rn.ProposeConfChange(raftpb.ConfChange{Type: raftpb.ConfChangeRemoveNode, NodeID: id})
	}, gone, func(cs raftpb.ConfState) bool { return false })
}

// errAlready is an addition of a member; errNotMember a removal of a
// node that is not one (as this node's configuration says).
var (
	errAlready   = errors.New("already a member")
	errNotMember = errors.New("not a member")
)

func (n *node) changeMembers(timeout time.Duration, propose func() error, done func(raftpb.ConfState) bool, already func(raftpb.ConfState) bool) error {
	n.mu.Lock()
	if n.stopping {
		n.mu.Unlock()
		return definite("node stopping")
	}
	if already(n.cs) {
		n.mu.Unlock()
		return errAlready
	}
	if n.lead == 0 {
		n.mu.Unlock()
		return definite("no leader")
	}
	if err := propose(); err != nil {
		n.mu.Unlock()
		if errors.Is(err, raftlet.ErrConfChangeRefused) || errors.Is(err, raftlet.ErrTooManyLearners) {
			return &refusedError{err}
		}
		return definite("membership change refused: %v", err)
	}
	w := &memberWait{pred: done, done: make(chan struct{})}
	n.members = append(n.members, w)
	n.mu.Unlock()
	n.wake()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-w.done:
		return nil
	case <-t.C:
	case <-n.stop:
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for i, m := range n.members {
		if m == w {
			n.members = append(n.members[:i], n.members[i+1:]...)
			break
		}
	}
	select {
	case <-w.done:
		return nil
	default:
	}
	return indefinite("membership change not applied after %v", timeout)
}

// refusedError is a membership change the configuration refused.
type refusedError struct{ err error }

func (e *refusedError) Error() string { return e.err.Error() }

func contains(ids []uint64, id uint64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// status is the body of GET /status.
type status struct {
	ID       uint64   `json:"id"`
	Term     uint64   `json:"term"`
	Lead     uint64   `json:"lead"`
	State    string   `json:"state"`
	Commit   uint64   `json:"commit"`
	Applied  uint64   `json:"applied"`
	Voters   []uint64 `json:"voters"`
	Learners []uint64 `json:"learners"`
	Snapshot uint64   `json:"snapshot"`
	Keys     int      `json:"keys"`
	Removed  bool     `json:"removed,omitempty"`
}

func (n *node) status() status {
	n.mu.Lock()
	defer n.mu.Unlock()
	var st raftlet.BasicStatus
	state := "stopping"
	if !n.stopping {
		st = n.rn.BasicStatus()
		state = roleName(st.RaftState)
	}
	return status{
		ID: n.cfg.id, Term: st.Term, Lead: st.Lead, State: state,
		Commit: st.Commit, Applied: n.applied,
		Voters: sortedIDs(n.cs.Voters), Learners: sortedIDs(n.cs.Learners),
		Snapshot: n.snapIndex, Keys: len(n.kv.data), Removed: n.removed,
	}
}

// close stops the node: pending requests fail, the loops end, the
// transport and the storage are closed.
func (n *node) close() {
	// Raft abandons a transfer after an election timeout (10 ticks).
	n.handOff(10 * n.cfg.tick)
	n.mu.Lock()
	if n.stopping {
		n.mu.Unlock()
		return
	}
	n.stopping = true
	close(n.stop)
	n.mu.Unlock()
	<-n.done
	n.tr.close()
	n.mu.Lock()
	n.rn.Close()
	n.mu.Unlock()
	n.storage.Close()
	log.Printf("stopped")
}

// handOff, on the leader, transfers leadership to the most caught-up
// voter and waits (up to max) for it to take over, so that stopping the
// leader costs the cluster no election timeout (a rolling restart).
func (n *node) handOff(max time.Duration) {
	n.mu.Lock()
	if n.stopping || n.role != raftlet.StateLeader {
		n.mu.Unlock()
		return
	}
	st := n.rn.Status()
	var target, best uint64
	active := 1 // this node votes for the transferee
	for _, id := range st.Config.Voters {
		pr, ok := st.Progress[id]
		if !ok || id == n.cfg.id || !pr.RecentActive {
			continue
		}
		active++
		if target == 0 || pr.Match > best {
			target, best = id, pr.Match
		}
	}
	// Without a quorum of active voters no transferee could be elected.
	if target == 0 || active < len(st.Config.Voters)/2+1 {
		n.mu.Unlock()
		return
	}
	err := n.rn.TransferLeader(target)
	n.mu.Unlock()
	if err != nil {
		log.Printf("stopping: leader transfer to %d refused: %v", target, err)
		return
	}
	log.Printf("stopping: transferring leadership to %d", target)
	n.wake()
	deadline := time.Now().Add(max)
	for time.Now().Before(deadline) {
		n.mu.Lock()
		lead := n.lead
		n.mu.Unlock()
		if lead != n.cfg.id && lead != 0 {
			log.Printf("stopping: %d leads now", lead)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	log.Printf("stopping: leadership not transferred within %v", max)
}

func parseID(s string) (uint64, error) {
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil || id == 0 {
		return 0, fmt.Errorf("bad node id %q", s)
	}
	return id, nil
}
