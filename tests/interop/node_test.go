package interop

import (
	"io"
	"log"

	raftlet "github.com/raftlet/raftlet/bindings/go"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// kind names an implementation.
type kind string

const (
	kindRaftlet kind = "raftlet"
	kindEtcd    kind = "etcd"
)

// basic is the part of a node's status the harness checks.
type basic struct {
	Term, Vote, Commit, Lead, Applied, LeadTransferee uint64
	Leader, Learner                                   bool
}

// prog is a peer's progress as its leader sees it.
type prog struct {
	Match        uint64
	Snapshot     bool
	IsLearner    bool
	RecentActive bool
}

// hostReady is a Ready of either implementation, in the host's terms.
type hostReady struct {
	softState        bool // the leader or the role changed
	hardState        raftpb.HardState
	entries          []raftpb.Entry
	committedEntries []raftpb.Entry
	snapshot         raftpb.Snapshot
	messages         []raftpb.Message
	encoded          [][]byte // raftlet only: messages as raftlet encoded them
	readStates       []raft.ReadState
	orig             any // the implementation's Ready, for persist and advance
}

// impl is what the harness drives: a RawNode and its storage, of either kind.
type impl interface {
	Kind() kind
	Tick()
	Campaign() error
	Propose(data []byte) error
	ProposeConfChange(cc raftpb.ConfChangeI) error
	ApplyConfChange(cc raftpb.ConfChangeI) *raftpb.ConfState
	StepBytes(b []byte) error
	HasReady() bool
	Ready() hostReady
	Persist(rd hostReady) error
	Advance(rd hostReady)
	Basic() basic
	Progress() map[uint64]prog
	TransferLeader(to uint64)
	ReadIndex(ctx []byte)
	ReportUnreachable(id uint64)
	ReportSnapshot(id uint64, ok bool)
	CreateSnapshot(i uint64, cs *raftpb.ConfState, data []byte) error
	Compact(i uint64) error
	FirstIndex() uint64
	Close()
}

// nodeOptions are the parameters both kinds share.
type nodeOptions struct {
	electionTick    int
	maxSizePerMsg   uint64
	coalesceAppends bool // raftlet only
	quiesce         bool // raftlet only: Config.Quiesce
	seed            uint64
}

// raftletNode is the raftlet binding behind impl. Nodes of an even id
// take their Readies through the zero-copy API (ReadyViewPersisted, the
// views copied into the hostReady, AdvanceView), the others through the
// typed Ready, so that both meet etcd nodes in every layout.
type raftletNode struct {
	rn   *raftlet.RawNode
	s    *raftlet.MemoryStorage
	view bool
}

func newRaftletNode(id uint64, o nodeOptions, peers []uint64) (*raftletNode, error) {
	s := raftlet.NewMemoryStorage()
	c := raftlet.DefaultConfig(id)
	c.Storage = s
	c.ElectionTick = o.electionTick
	c.MaxSizePerMsg = o.maxSizePerMsg
	c.CoalesceAppends = o.coalesceAppends
	c.Quiesce = o.quiesce
	c.Seed = o.seed
	rn, err := raftlet.NewRawNode(&c)
	if err != nil {
		s.Close()
		return nil, err
	}
	if len(peers) > 0 {
		ps := make([]raftlet.Peer, len(peers))
		for i, p := range peers {
			ps[i] = raftlet.Peer{ID: p}
		}
		if err := rn.Bootstrap(ps); err != nil {
			rn.Close()
			s.Close()
			return nil, err
		}
	}
	return &raftletNode{rn: rn, s: s, view: id%2 == 0}, nil
}

func (n *raftletNode) Kind() kind             { return kindRaftlet }
func (n *raftletNode) Tick()                  { n.rn.Tick() }
func (n *raftletNode) Campaign() error        { return n.rn.Campaign() }
func (n *raftletNode) Propose(d []byte) error { return n.rn.Propose(d) }
func (n *raftletNode) ProposeConfChange(cc raftpb.ConfChangeI) error {
	return n.rn.ProposeConfChange(cc)
}
func (n *raftletNode) ApplyConfChange(cc raftpb.ConfChangeI) *raftpb.ConfState {
	return n.rn.ApplyConfChange(cc)
}
func (n *raftletNode) StepBytes(b []byte) error { return n.rn.StepBytes(b) }
func (n *raftletNode) HasReady() bool           { return n.rn.HasReady() }

func (n *raftletNode) Ready() hostReady {
	if n.view {
		return n.readyView()
	}
	rd := n.rn.Ready()
	h := hostReady{
		softState: rd.SoftState != nil, hardState: rd.HardState, entries: rd.Entries,
		committedEntries: rd.CommittedEntries, snapshot: rd.Snapshot, messages: rd.Messages, orig: rd,
	}
	enc, err := rd.EncodedMessages()
	if err != nil {
		panic(err)
	}
	h.encoded = enc
	for _, rs := range rd.ReadStates {
		h.readStates = append(h.readStates, raft.ReadState{Index: rs.Index, RequestCtx: rs.RequestCtx})
	}
	return h
}

// readyView takes the Ready as views, persisted in the same crossing,
// and copies what the harness keeps.
func (n *raftletNode) readyView() hostReady {
	v, err := n.rn.ReadyViewPersisted(n.s)
	if err != nil {
		panic(err)
	}
	h := hostReady{orig: v}
	_, h.softState, _ = v.SoftState()
	h.hardState, _, _ = v.HardState()
	if h.snapshot, err = v.Snapshot(); err != nil {
		panic(err)
	}
	copyEntries := func(ev []raftlet.EntryView) []raftpb.Entry {
		var out []raftpb.Entry
		for i := range ev {
			out = append(out, ev[i].Entry())
		}
		return out
	}
	ents, _ := v.Entries()
	h.entries = copyEntries(ents)
	committed, _ := v.CommittedEntries()
	h.committedEntries = copyEntries(committed)
	msgs, err := v.Messages()
	if err != nil {
		panic(err)
	}
	for i := range msgs {
		m, err := msgs[i].Message()
		if err != nil {
			panic(err)
		}
		h.messages = append(h.messages, m)
		h.encoded = append(h.encoded, append([]byte(nil), msgs[i].Data()...))
	}
	rss, _ := v.ReadStates()
	for i := range rss {
		h.readStates = append(h.readStates, raft.ReadState{Index: rss[i].Index,
			RequestCtx: append([]byte(nil), rss[i].RequestCtx()...)})
	}
	return h
}

func (n *raftletNode) Persist(rd hostReady) error {
	if _, ok := rd.orig.(raftlet.ReadyView); ok {
		return nil // written by ReadyViewPersisted
	}
	return n.s.AppendReady(rd.orig.(raftlet.Ready))
}

func (n *raftletNode) Advance(rd hostReady) {
	if v, ok := rd.orig.(raftlet.ReadyView); ok {
		if err := n.rn.AdvanceView(v); err != nil {
			panic(err)
		}
		return
	}
	n.rn.Advance(rd.orig.(raftlet.Ready))
}

func (n *raftletNode) Basic() basic {
	st := n.rn.BasicStatus()
	return basic{Term: st.Term, Vote: st.Vote, Commit: st.Commit, Lead: st.Lead, Applied: st.Applied,
		LeadTransferee: st.LeadTransferee, Leader: st.RaftState == raftlet.StateLeader}
}

func (n *raftletNode) Progress() map[uint64]prog {
	out := map[uint64]prog{}
	for id, p := range n.rn.Status().Progress {
		out[id] = prog{Match: p.Match, Snapshot: p.State == raftlet.StateSnapshot, IsLearner: p.IsLearner, RecentActive: p.RecentActive}
	}
	return out
}

func (n *raftletNode) TransferLeader(to uint64)          { _ = n.rn.TransferLeader(to) }
func (n *raftletNode) ReadIndex(ctx []byte)              { _ = n.rn.ReadIndex(ctx) }
func (n *raftletNode) ReportUnreachable(id uint64)       { n.rn.ReportUnreachable(id) }
func (n *raftletNode) ReportSnapshot(id uint64, ok bool) { n.rn.ReportSnapshot(id, snapStatus(ok)) }

func snapStatus(ok bool) raftlet.SnapshotStatus {
	if ok {
		return raftlet.SnapshotFinish
	}
	return raftlet.SnapshotFailure
}

func (n *raftletNode) CreateSnapshot(i uint64, cs *raftpb.ConfState, data []byte) error {
	_, err := n.s.CreateSnapshot(i, cs, data)
	return err
}
func (n *raftletNode) Compact(i uint64) error { return n.s.Compact(i) }
func (n *raftletNode) FirstIndex() uint64 {
	f, err := n.s.FirstIndex()
	if err != nil {
		panic(err)
	}
	return f
}
func (n *raftletNode) Close() { n.rn.Close(); n.s.Close() }

// etcdNode is etcd's RawNode over its MemoryStorage behind impl.
type etcdNode struct {
	rn *raft.RawNode
	s  *raft.MemoryStorage
}

var quietLogger = &raft.DefaultLogger{Logger: log.New(io.Discard, "", 0)}

func newEtcdNode(id uint64, o nodeOptions, peers []uint64) (*etcdNode, error) {
	s := raft.NewMemoryStorage()
	c := &raft.Config{
		ID: id, ElectionTick: o.electionTick, HeartbeatTick: 1, Storage: s,
		MaxSizePerMsg: o.maxSizePerMsg, MaxInflightMsgs: 256,
		CheckQuorum: true, PreVote: true, StepDownOnRemoval: true,
		Logger: quietLogger,
	}
	rn, err := raft.NewRawNode(c)
	if err != nil {
		return nil, err
	}
	if len(peers) > 0 {
		ps := make([]raft.Peer, len(peers))
		for i, p := range peers {
			ps[i] = raft.Peer{ID: p}
		}
		if err := rn.Bootstrap(ps); err != nil {
			return nil, err
		}
	}
	return &etcdNode{rn: rn, s: s}, nil
}

func (n *etcdNode) Kind() kind      { return kindEtcd }
func (n *etcdNode) Tick()           { n.rn.Tick() }
func (n *etcdNode) Campaign() error { return n.rn.Campaign() }
func (n *etcdNode) Propose(d []byte) error {
	return n.rn.Propose(d)
}
func (n *etcdNode) ProposeConfChange(cc raftpb.ConfChangeI) error { return n.rn.ProposeConfChange(cc) }
func (n *etcdNode) ApplyConfChange(cc raftpb.ConfChangeI) *raftpb.ConfState {
	return n.rn.ApplyConfChange(cc)
}

func (n *etcdNode) StepBytes(b []byte) error {
	var m raftpb.Message
	if err := m.Unmarshal(b); err != nil {
		return err
	}
	return n.rn.Step(m)
}

func (n *etcdNode) HasReady() bool { return n.rn.HasReady() }

func (n *etcdNode) Ready() hostReady {
	rd := n.rn.Ready()
	return hostReady{
		softState: rd.SoftState != nil, hardState: rd.HardState, entries: rd.Entries,
		committedEntries: rd.CommittedEntries, snapshot: rd.Snapshot, messages: rd.Messages,
		readStates: rd.ReadStates, orig: rd,
	}
}

func (n *etcdNode) Persist(rd hostReady) error {
	if !raft.IsEmptySnap(rd.snapshot) {
		if err := n.s.ApplySnapshot(rd.snapshot); err != nil {
			return err
		}
	}
	if err := n.s.Append(rd.entries); err != nil {
		return err
	}
	if !raft.IsEmptyHardState(rd.hardState) {
		return n.s.SetHardState(rd.hardState)
	}
	return nil
}

func (n *etcdNode) Advance(rd hostReady) { n.rn.Advance(rd.orig.(raft.Ready)) }

func (n *etcdNode) Basic() basic {
	st := n.rn.BasicStatus()
	return basic{Term: st.Term, Vote: st.Vote, Commit: st.Commit, Lead: st.Lead, Applied: st.Applied,
		LeadTransferee: st.LeadTransferee, Leader: st.RaftState == raft.StateLeader}
}

func (n *etcdNode) Progress() map[uint64]prog {
	out := map[uint64]prog{}
	for id, p := range n.rn.Status().Progress {
		out[id] = prog{Match: p.Match, Snapshot: p.State.String() == "StateSnapshot", IsLearner: p.IsLearner, RecentActive: p.RecentActive}
	}
	return out
}

func (n *etcdNode) TransferLeader(to uint64)    { n.rn.TransferLeader(to) }
func (n *etcdNode) ReadIndex(ctx []byte)        { n.rn.ReadIndex(ctx) }
func (n *etcdNode) ReportUnreachable(id uint64) { n.rn.ReportUnreachable(id) }
func (n *etcdNode) ReportSnapshot(id uint64, ok bool) {
	st := raft.SnapshotFailure
	if ok {
		st = raft.SnapshotFinish
	}
	n.rn.ReportSnapshot(id, st)
}

func (n *etcdNode) CreateSnapshot(i uint64, cs *raftpb.ConfState, data []byte) error {
	_, err := n.s.CreateSnapshot(i, cs, data)
	return err
}
func (n *etcdNode) Compact(i uint64) error { return n.s.Compact(i) }
func (n *etcdNode) FirstIndex() uint64 {
	f, err := n.s.FirstIndex()
	if err != nil {
		panic(err)
	}
	return f
}
func (n *etcdNode) Close() {}
