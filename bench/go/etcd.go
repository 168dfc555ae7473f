package bench

import (
	"encoding/binary"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// etcdNode is etcd raft's RawNode over its MemoryStorage.
type etcdNode struct {
	id      uint64
	rn      *raft.RawNode
	storage *raft.MemoryStorage
}

func newEtcd(id uint64, voters []uint64) node {
	st := raft.NewMemoryStorage()
	if len(voters) > 0 {
		// The configuration comes from a snapshot at index 1 (MemoryStorage
		// has no other way to start with one from outside the package).
		if err := st.ApplySnapshot(raftpb.Snapshot{Metadata: raftpb.SnapshotMetadata{
			Index: 1, Term: 1, ConfState: raftpb.ConfState{Voters: voters},
		}}); err != nil {
			panic(err)
		}
	}
	c := &raft.Config{
		ID:                       id,
		ElectionTick:             electionTick,
		HeartbeatTick:            heartbeatTick,
		Storage:                  st,
		MaxSizePerMsg:            maxSizePerMsg,
		MaxCommittedSizePerReady: maxSizePerMsg,
		MaxInflightMsgs:          maxInflight,
		CheckQuorum:              true,
		PreVote:                  true,
		Logger:                   discard{},
	}
	rn, err := raft.NewRawNode(c)
	if err != nil {
		panic(err)
	}
	return &etcdNode{id: id, rn: rn, storage: st}
}

func (n *etcdNode) Campaign() {
	if err := n.rn.Campaign(); err != nil {
		panic(err)
	}
}

func (n *etcdNode) Payloads(k, size int) [][]byte { return goPayloads(k, size) }

func (n *etcdNode) Propose(data []byte) {
	if err := n.rn.Propose(data); err != nil {
		panic(err)
	}
}

func (n *etcdNode) ProposeBatch(payloads [][]byte) bool {
	ents := make([]raftpb.Entry, len(payloads))
	for i := range ents {
		ents[i].Data = payloads[i]
	}
	if err := n.rn.Step(raftpb.Message{Type: raftpb.MsgProp, From: n.id, Entries: ents}); err != nil {
		panic(err)
	}
	return true
}

func (n *etcdNode) ReadIndex(ctx uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], ctx)
	n.rn.ReadIndex(b[:])
}

func (n *etcdNode) Tick() { n.rn.Tick() }

func (n *etcdNode) Step(b []byte) {
	var m raftpb.Message
	if err := m.Unmarshal(b); err != nil {
		panic(err)
	}
	_ = n.rn.Step(m)
}

// StepMany: etcd raft has no batch step; a host steps each message.
func (n *etcdNode) StepMany(bs [][]byte) {
	for _, b := range bs {
		n.Step(b)
	}
}

func (n *etcdNode) HasReady() bool { return n.rn.HasReady() }

func (n *etcdNode) Cycle(out *[]wire, app *applied) {
	rd := n.rn.Ready()
	if !raft.IsEmptySnap(rd.Snapshot) {
		if err := n.storage.ApplySnapshot(rd.Snapshot); err != nil {
			panic(err)
		}
		app.index = rd.Snapshot.Metadata.Index
	}
	if err := n.storage.Append(rd.Entries); err != nil {
		panic(err)
	}
	if !raft.IsEmptyHardState(rd.HardState) {
		if err := n.storage.SetHardState(rd.HardState); err != nil {
			panic(err)
		}
	}
	for i := range rd.Messages {
		b, err := rd.Messages[i].Marshal()
		if err != nil {
			panic(err)
		}
		*out = append(*out, wire{to: rd.Messages[i].To, data: b})
	}
	app.reads += uint64(len(rd.ReadStates))
	for i := range rd.CommittedEntries {
		e := &rd.CommittedEntries[i]
		switch e.Type {
		case raftpb.EntryNormal:
			if len(e.Data) > 0 {
				app.entries++
				app.bytes += uint64(len(e.Data))
			}
		case raftpb.EntryConfChange:
			var cc raftpb.ConfChange
			if err := cc.Unmarshal(e.Data); err != nil {
				panic(err)
			}
			n.rn.ApplyConfChange(cc)
		case raftpb.EntryConfChangeV2:
			var cc raftpb.ConfChangeV2
			if err := cc.Unmarshal(e.Data); err != nil {
				panic(err)
			}
			n.rn.ApplyConfChange(cc)
		}
		app.index = e.Index
	}
	n.rn.Advance(rd)
}

// Sent: etcd raft's messages are marshalled into buffers of their own.
func (n *etcdNode) Sent() {}

func (n *etcdNode) Compact(index uint64) {
	if err := n.storage.Compact(index); err != nil {
		panic(err)
	}
}

func (n *etcdNode) IsLeader() bool { return n.rn.BasicStatus().RaftState == raft.StateLeader }

func (n *etcdNode) Close() {}

// discard is a raft.Logger that drops everything.
type discard struct{}

func (discard) Debug(...interface{})            {}
func (discard) Debugf(string, ...interface{})   {}
func (discard) Error(...interface{})            {}
func (discard) Errorf(string, ...interface{})   {}
func (discard) Info(...interface{})             {}
func (discard) Infof(string, ...interface{})    {}
func (discard) Warning(...interface{})          {}
func (discard) Warningf(string, ...interface{}) {}
func (discard) Fatal(v ...interface{})          { panic(v) }
func (discard) Fatalf(f string, v ...interface{}) {
	panic(f)
}
func (discard) Panic(v ...interface{})            { panic(v) }
func (discard) Panicf(f string, v ...interface{}) { panic(f) }
