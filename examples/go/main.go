// Command example runs one five-node Raft cluster in one process: nodes
// 1-3 are raftlet (through its Go binding), nodes 4 and 5 are etcd raft.
// Messages cross between them as raftpb bytes, as over a network. The
// cluster elects a leader, replicates, hands leadership to a node of the
// other kind, replicates again, and checks that all five nodes applied
// the same entries. It exits non-zero if any step fails.
package main

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"os"

	raftlet "github.com/raftlet/raftlet/bindings/go"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// node is a member of either kind, seen through what the host needs.
type node interface {
	kind() string
	tick()
	campaign() error
	propose([]byte) error
	transferLeader(uint64)
	step([]byte) error
	// handleReady persists, sends and applies one Ready, if there is one.
	handleReady(send func([]byte), apply func(raftpb.Entry)) bool
	status() (lead uint64, term uint64, leader bool)
}

type raftletNode struct {
	rn *raftlet.RawNode
	s  *raftlet.MemoryStorage
}

func (n *raftletNode) kind() string             { return "raftlet" }
func (n *raftletNode) tick()                    { n.rn.Tick() }
func (n *raftletNode) campaign() error          { return n.rn.Campaign() }
func (n *raftletNode) propose(d []byte) error   { return n.rn.Propose(d) }
func (n *raftletNode) transferLeader(to uint64) { _ = n.rn.TransferLeader(to) }
func (n *raftletNode) step(b []byte) error      { return n.rn.StepBytes(b) }
func (n *raftletNode) status() (uint64, uint64, bool) {
	st := n.rn.BasicStatus()
	return st.Lead, st.Term, st.RaftState == raftlet.StateLeader
}

func (n *raftletNode) handleReady(send func([]byte), apply func(raftpb.Entry)) bool {
	if !n.rn.HasReady() {
		return false
	}
	rd := n.rn.Ready()
	if err := n.s.AppendReady(rd); err != nil {
		log.Fatalf("persist: %v", err)
	}
	// raftlet's own encoding: the same bytes raftpb would write.
	msgs, err := rd.EncodedMessages()
	if err != nil {
		log.Fatal(err)
	}
	for _, b := range msgs {
		send(b)
	}
	for _, e := range rd.CommittedEntries {
		apply(e)
		if e.Type == raftpb.EntryConfChange {
			var cc raftpb.ConfChange
			if err := cc.Unmarshal(e.Data); err != nil {
				log.Fatal(err)
			}
			n.rn.ApplyConfChange(cc)
		}
	}
	n.rn.Advance(rd)
	return true
}

type etcdNode struct {
	rn *raft.RawNode
	s  *raft.MemoryStorage
}

func (n *etcdNode) kind() string             { return "etcd" }
func (n *etcdNode) tick()                    { n.rn.Tick() }
func (n *etcdNode) campaign() error          { return n.rn.Campaign() }
func (n *etcdNode) propose(d []byte) error   { return n.rn.Propose(d) }
func (n *etcdNode) transferLeader(to uint64) { n.rn.TransferLeader(to) }
func (n *etcdNode) step(b []byte) error {
	var m raftpb.Message
	if err := m.Unmarshal(b); err != nil {
		return err
	}
	return n.rn.Step(m)
}
func (n *etcdNode) status() (uint64, uint64, bool) {
	st := n.rn.BasicStatus()
	return st.Lead, st.Term, st.RaftState == raft.StateLeader
}

func (n *etcdNode) handleReady(send func([]byte), apply func(raftpb.Entry)) bool {
	if !n.rn.HasReady() {
		return false
	}
	rd := n.rn.Ready()
	if !raft.IsEmptySnap(rd.Snapshot) {
		if err := n.s.ApplySnapshot(rd.Snapshot); err != nil {
			log.Fatal(err)
		}
	}
	if err := n.s.Append(rd.Entries); err != nil {
		log.Fatal(err)
	}
	if !raft.IsEmptyHardState(rd.HardState) {
		if err := n.s.SetHardState(rd.HardState); err != nil {
			log.Fatal(err)
		}
	}
	for _, m := range rd.Messages {
		b, err := m.Marshal()
		if err != nil {
			log.Fatal(err)
		}
		send(b)
	}
	for _, e := range rd.CommittedEntries {
		apply(e)
		if e.Type == raftpb.EntryConfChange {
			var cc raftpb.ConfChange
			if err := cc.Unmarshal(e.Data); err != nil {
				log.Fatal(err)
			}
			n.rn.ApplyConfChange(cc)
		}
	}
	n.rn.Advance(rd)
	return true
}

type cluster struct {
	nodes   map[uint64]node
	applied map[uint64][]string // per node: the data of applied normal entries
	inbox   [][]byte
	ticks   int
}

func (c *cluster) ids() []uint64 { return []uint64{1, 2, 3, 4, 5} }

// settle runs Readies and delivers messages until nothing moves.
func (c *cluster) settle() {
	for {
		moved := false
		for _, id := range c.ids() {
			id := id
			n := c.nodes[id]
			if n.handleReady(func(b []byte) { c.inbox = append(c.inbox, b) }, func(e raftpb.Entry) {
				if e.Type == raftpb.EntryNormal && len(e.Data) > 0 {
					c.applied[id] = append(c.applied[id], string(e.Data))
				}
			}) {
				moved = true
			}
		}
		box := c.inbox
		c.inbox = nil
		for _, b := range box {
			h, err := raftlet.DecodeMessageHeader(b) // route without decoding in Go
			if err != nil {
				log.Fatalf("undecodable message: %v", err)
			}
			_ = c.nodes[h.To].step(b) // a real host logs and drops errors
		}
		if !moved && len(box) == 0 {
			return
		}
	}
}

func (c *cluster) tick() {
	c.ticks++
	for _, id := range c.ids() {
		c.nodes[id].tick()
	}
	c.settle()
}

func (c *cluster) leader() uint64 {
	for _, id := range c.ids() {
		if _, _, leader := c.nodes[id].status(); leader {
			return id
		}
	}
	return 0
}

func (c *cluster) propose(n int, prefix string) {
	for i := 0; i < n; i++ {
		// Any node may propose: followers forward to the leader, across kinds.
		id := c.ids()[i%5]
		if err := c.nodes[id].propose([]byte(fmt.Sprintf("%s-%d", prefix, i))); err != nil {
			fail("propose on node %d: %v", id, err)
		}
		c.settle()
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "example failed: "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	fmt.Printf("raftlet %s and etcd raft v3.6 in one cluster\n", raftlet.Version())
	peers := []uint64{1, 2, 3, 4, 5}
	c := &cluster{nodes: map[uint64]node{}, applied: map[uint64][]string{}}
	for _, id := range peers[:3] {
		s := raftlet.NewMemoryStorage()
		cfg := raftlet.DefaultConfig(id) // pre-vote and check-quorum on
		cfg.Storage = s
		rn, err := raftlet.NewRawNode(&cfg)
		if err != nil {
			fail("%v", err)
		}
		defer rn.Close()
		defer s.Close()
		ps := make([]raftlet.Peer, len(peers))
		for i, p := range peers {
			ps[i] = raftlet.Peer{ID: p}
		}
		if err := rn.Bootstrap(ps); err != nil {
			fail("%v", err)
		}
		c.nodes[id] = &raftletNode{rn: rn, s: s}
	}
	for _, id := range peers[3:] {
		s := raft.NewMemoryStorage()
		rn, err := raft.NewRawNode(&raft.Config{
			ID: id, ElectionTick: 10, HeartbeatTick: 1, Storage: s,
			MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 256,
			PreVote: true, CheckQuorum: true, StepDownOnRemoval: true,
			Logger: &raft.DefaultLogger{Logger: log.New(io.Discard, "", 0)},
		})
		if err != nil {
			fail("%v", err)
		}
		ps := make([]raft.Peer, len(peers))
		for i, p := range peers {
			ps[i] = raft.Peer{ID: p}
		}
		if err := rn.Bootstrap(ps); err != nil {
			fail("%v", err)
		}
		c.nodes[id] = &etcdNode{rn: rn, s: s}
	}
	for _, id := range peers {
		fmt.Printf("  node %d: %s\n", id, c.nodes[id].kind())
	}

	// Election: let the clocks run until someone wins.
	c.settle()
	for c.leader() == 0 && c.ticks < 200 {
		c.tick()
	}
	first := c.leader()
	if first == 0 {
		fail("no leader elected in %d ticks", c.ticks)
	}
	_, term, _ := c.nodes[first].status()
	fmt.Printf("[tick %3d] node %d (%s) leads term %d\n", c.ticks, first, c.nodes[first].kind(), term)
	c.propose(10, "a")
	fmt.Printf("[tick %3d] 10 entries proposed through all five nodes\n", c.ticks)

	// Hand leadership to a node of the other kind.
	target := uint64(4)
	if c.nodes[first].kind() == "etcd" {
		target = 1
	}
	c.nodes[first].transferLeader(target)
	c.settle()
	for c.leader() != target && c.ticks < 400 {
		c.tick()
	}
	if c.leader() != target {
		fail("leadership did not move to node %d", target)
	}
	_, term, _ = c.nodes[target].status()
	fmt.Printf("[tick %3d] leadership transferred to node %d (%s), term %d\n", c.ticks, target, c.nodes[target].kind(), term)
	c.propose(10, "b")
	for i := 0; i < 3; i++ {
		c.tick()
	}

	ref := c.applied[1]
	if len(ref) != 20 {
		fail("node 1 applied %d entries, want 20", len(ref))
	}
	for _, id := range peers {
		got := c.applied[id]
		if len(got) != len(ref) {
			fail("node %d applied %d entries, node 1 %d", id, len(got), len(ref))
		}
		for i := range got {
			if !bytes.Equal([]byte(got[i]), []byte(ref[i])) {
				fail("node %d applied %q at %d, node 1 %q", id, got[i], i, ref[i])
			}
		}
		lead, _, _ := c.nodes[id].status()
		fmt.Printf("  node %d (%-7s) applied %d entries, %s ... %s; knows leader %d\n",
			id, c.nodes[id].kind(), len(got), got[0], got[len(got)-1], lead)
	}
	fmt.Println("Go example finished: all five nodes applied the same 20 entries")
}
