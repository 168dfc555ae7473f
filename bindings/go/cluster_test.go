package raftlet

import (
	"fmt"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// testNode is a RawNode with its storage and what it applied.
type testNode struct {
	id      uint64
	rn      *RawNode
	storage *MemoryStorage
	applied [][]byte
	cs      raftpb.ConfState
	snaps   int
	reads   []ReadState
	events  []MembershipEvent
	// The Ready taken by the last AdvanceViewNext or StepBatchReady, to
	// handle next (chained runs only; not Valid when none).
	next ReadyView
}

// testCluster runs raftlet nodes in memory; messages cross as raftpb bytes.
type testCluster struct {
	t       testing.TB
	nodes   map[uint64]*testNode
	down    map[uint64]bool // isolated nodes: messages to and from them are dropped
	mailbox [][]byte
}

func testConfig(id uint64, s *MemoryStorage) *Config {
	c := DefaultConfig(id)
	c.Storage = s
	c.Seed = id * 7919
	return &c
}

func newTestCluster(t testing.TB, ids ...uint64) *testCluster {
	t.Helper()
	c := &testCluster{t: t, nodes: map[uint64]*testNode{}, down: map[uint64]bool{}}
	peers := make([]Peer, len(ids))
	for i, id := range ids {
		peers[i] = Peer{ID: id}
	}
	for _, id := range ids {
		n := c.add(id, nil)
		if err := n.rn.Bootstrap(peers); err != nil {
			t.Fatalf("bootstrap %d: %v", id, err)
		}
	}
	t.Cleanup(c.close)
	return c
}

// add starts node id over a new storage (initial configuration cs, if any).
func (c *testCluster) add(id uint64, cs *raftpb.ConfState) *testNode {
	c.t.Helper()
	s := NewMemoryStorage()
	if cs != nil {
		if err := s.SetConfState(*cs); err != nil {
			c.t.Fatal(err)
		}
	}
	rn, err := NewRawNode(testConfig(id, s))
	if err != nil {
		c.t.Fatalf("NewRawNode(%d): %v", id, err)
	}
	n := &testNode{id: id, rn: rn, storage: s}
	c.nodes[id] = n
	return n
}

func (c *testCluster) close() {
	for _, n := range c.nodes {
		n.rn.Close()
		n.storage.Close()
	}
}

// handle runs one Ready of n; it reports whether there was one.
func (c *testCluster) handle(n *testNode) bool {
	if !n.rn.HasReady() {
		return false
	}
	rd := n.rn.Ready()
	if err := n.storage.AppendReady(rd); err != nil {
		c.t.Fatalf("node %d: AppendReady: %v", n.id, err)
	}
	if !IsEmptySnap(rd.Snapshot) {
		n.snaps++
		n.cs = rd.Snapshot.Metadata.ConfState
	}
	for _, m := range rd.Messages {
		b, err := m.Marshal()
		if err != nil {
			c.t.Fatal(err)
		}
		c.mailbox = append(c.mailbox, b)
		if m.Type == raftpb.MsgSnap {
			n.rn.ReportSnapshot(m.To, SnapshotFinish)
		}
	}
	for _, e := range rd.CommittedEntries {
		switch e.Type {
		case raftpb.EntryNormal:
			if len(e.Data) > 0 {
				n.applied = append(n.applied, e.Data)
			}
		case raftpb.EntryConfChange:
			var cc raftpb.ConfChange
			if err := cc.Unmarshal(e.Data); err != nil {
				c.t.Fatal(err)
			}
			n.cs = *n.rn.ApplyConfChange(cc)
		case raftpb.EntryConfChangeV2:
			var cc raftpb.ConfChangeV2
			if err := cc.Unmarshal(e.Data); err != nil {
				c.t.Fatal(err)
			}
			n.cs = *n.rn.ApplyConfChange(cc)
		}
	}
	n.reads = append(n.reads, rd.ReadStates...)
	n.events = append(n.events, rd.MembershipEvents...)
	n.rn.Advance(rd)
	return true
}

// settle runs Readies and delivers messages until nothing moves.
func (c *testCluster) settle() {
	for i := 0; i < 10000; i++ {
		work := false
		for _, id := range c.ids() {
			if c.handle(c.nodes[id]) {
				work = true
			}
		}
		box := c.mailbox
		c.mailbox = nil
		for _, b := range box {
			var m raftpb.Message
			if err := m.Unmarshal(b); err != nil {
				c.t.Fatal(err)
			}
			to, ok := c.nodes[m.To]
			if !ok || c.down[m.To] || c.down[m.From] {
				continue
			}
			_ = to.rn.StepBytes(b)
		}
		if !work && len(box) == 0 {
			return
		}
	}
	c.t.Fatal("cluster did not settle")
}

func (c *testCluster) ids() []uint64 {
	var ids []uint64
	for id := uint64(1); len(ids) < len(c.nodes); id++ {
		if _, ok := c.nodes[id]; ok {
			ids = append(ids, id)
		}
	}
	return ids
}

func (c *testCluster) tick(n int) {
	for i := 0; i < n; i++ {
		for _, id := range c.ids() {
			c.nodes[id].rn.Tick()
		}
		c.settle()
	}
}

// leader returns the id of the leader (0 if none).
func (c *testCluster) leader() uint64 {
	for _, id := range c.ids() {
		if c.down[id] {
			continue
		}
		if c.nodes[id].rn.BasicStatus().RaftState == StateLeader {
			return id
		}
	}
	return 0
}

// elect makes id campaign and checks it leads.
func (c *testCluster) elect(id uint64) {
	c.t.Helper()
	c.settle()
	if err := c.nodes[id].rn.Campaign(); err != nil {
		c.t.Fatal(err)
	}
	c.settle()
	if got := c.leader(); got != id {
		c.t.Fatalf("leader is %d, want %d", got, id)
	}
}

func (c *testCluster) propose(id uint64, format string, args ...any) {
	c.t.Helper()
	if err := c.nodes[id].rn.Propose([]byte(fmt.Sprintf(format, args...))); err != nil {
		c.t.Fatalf("propose on %d: %v", id, err)
	}
	c.settle()
}

func TestSmoke(t *testing.T) {
	c := newTestCluster(t, 1, 2, 3)
	c.elect(1)
	for i := 0; i < 5; i++ {
		c.propose(1, "e%d", i)
	}
	for _, id := range c.ids() {
		if got := len(c.nodes[id].applied); got != 5 {
			t.Fatalf("node %d applied %d", id, got)
		}
	}
	t.Logf("%+v", c.nodes[1].rn.Status())
}
