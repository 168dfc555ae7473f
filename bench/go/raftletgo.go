package bench

import (
	"encoding/binary"

	raftlet "github.com/raftlet/raftlet/bindings/go"
	"go.etcd.io/raft/v3/raftpb"
)

// raftletNode is raftlet through its Go binding (cgo over the C ABI): the
// same calls a Go host switching from etcd raft makes, with messages sent
// as raftlet encoded them (Ready.EncodedMessages) and delivered as bytes
// (RawNode.StepBytes).
type raftletNode struct {
	rn      *raftlet.RawNode
	storage *raftlet.MemoryStorage
}

func newRaftletGo(id uint64, voters []uint64) node {
	st := raftlet.NewMemoryStorage()
	if len(voters) > 0 {
		if err := st.SetConfState(raftpb.ConfState{Voters: voters}); err != nil {
			panic(err)
		}
	}
	c := raftlet.DefaultConfig(id)
	c.Storage = st
	c.ElectionTick = electionTick
	c.HeartbeatTick = heartbeatTick
	c.MaxSizePerMsg = maxSizePerMsg
	c.MaxCommittedSizePerReady = maxSizePerMsg
	c.MaxInflightMsgs = maxInflight
	rn, err := raftlet.NewRawNode(&c)
	if err != nil {
		panic(err)
	}
	return &raftletNode{rn: rn, storage: st}
}

func (n *raftletNode) Campaign() {
	if err := n.rn.Campaign(); err != nil {
		panic(err)
	}
}

func (n *raftletNode) Payloads(k, size int) [][]byte { return goPayloads(k, size) }

func (n *raftletNode) Propose(data []byte) {
	if err := n.rn.Propose(data); err != nil {
		panic(err)
	}
}

// ProposeBatch is RawNode.ProposeBatch (raftlet's batch proposal, one
// crossing).
func (n *raftletNode) ProposeBatch(payloads [][]byte) bool {
	if err := n.rn.ProposeBatch(payloads); err != nil {
		panic(err)
	}
	return true
}

func (n *raftletNode) ReadIndex(ctx uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], ctx)
	if err := n.rn.ReadIndex(b[:]); err != nil {
		panic(err)
	}
}

func (n *raftletNode) Tick() { n.rn.Tick() }

func (n *raftletNode) Step(b []byte) { _ = n.rn.StepBytes(b) }

// StepMany: the etcd-compatible API steps each message (StepBytes).
func (n *raftletNode) StepMany(bs [][]byte) {
	for _, b := range bs {
		n.Step(b)
	}
}

func (n *raftletNode) HasReady() bool { return n.rn.HasReady() }

func (n *raftletNode) Cycle(out *[]wire, app *applied) {
	rd := n.rn.Ready()
	if err := n.storage.AppendReady(rd); err != nil {
		panic(err)
	}
	if !raftlet.IsEmptySnap(rd.Snapshot) {
		app.index = rd.Snapshot.Metadata.Index
	}
	if len(rd.Messages) > 0 {
		enc, err := rd.EncodedMessages()
		if err != nil {
			panic(err)
		}
		for i, b := range enc {
			*out = append(*out, wire{to: rd.Messages[i].To, data: b})
		}
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

// Sent: the typed API's messages are copied into Go memory already.
func (n *raftletNode) Sent() {}

func (n *raftletNode) Compact(index uint64) {
	if err := n.storage.Compact(index); err != nil {
		panic(err)
	}
}

func (n *raftletNode) IsLeader() bool {
	return n.rn.BasicStatus().RaftState == raftlet.StateLeader
}

func (n *raftletNode) Close() {
	_ = n.rn.Close()
	_ = n.storage.Close()
}
