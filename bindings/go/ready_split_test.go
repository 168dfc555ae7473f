package raftlet

import (
	"bytes"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// TestReadySplitsImmediateAndPersistedMessages checks the two lists of
// the Ready contract: pre-votes and a leader's appends may leave at once,
// vote requests and append answers only after the write.
func TestReadySplitsImmediateAndPersistedMessages(t *testing.T) {
	c := newTestCluster(t, 1, 2, 3)
	c.settle()
	rn := c.nodes[1].rn
	if err := rn.Campaign(); err != nil {
		t.Fatal(err)
	}
	kinds := func(ms []raftpb.Message) map[raftpb.MessageType]int {
		k := map[raftpb.MessageType]int{}
		for _, m := range ms {
			k[m.Type]++
		}
		return k
	}
	// Pre-vote requests change no durable state: immediate.
	rd := rn.Ready()
	if k := kinds(rd.ImmediateMessages()); k[raftpb.MsgPreVote] != 2 || len(rd.PersistedMessages()) != 0 {
		t.Fatalf("pre-vote ready: immediate %v, persisted %v", k, kinds(rd.PersistedMessages()))
	}
	first, err := rd.EncodedMessages()
	if err != nil {
		t.Fatal(err)
	}
	c.mailbox = append(c.mailbox, first...)
	if err := c.nodes[1].storage.AppendReady(rd); err != nil {
		t.Fatal(err)
	}
	rn.Advance(rd)
	// Run the election by hand: vote requests and append answers wait.
	var sawVote, sawAppResp, sawApp bool
	for round := 0; round < 50 && !(sawVote && sawAppResp && sawApp); round++ {
		box := c.mailbox
		c.mailbox = nil
		for _, b := range box {
			h, err := DecodeMessageHeader(b)
			if err != nil {
				t.Fatal(err)
			}
			_ = c.nodes[h.To].rn.StepBytes(b)
		}
		for _, id := range c.ids() {
			n := c.nodes[id]
			if !n.rn.HasReady() {
				continue
			}
			rd := n.rn.Ready()
			enc, err := rd.EncodedMessages()
			if err != nil {
				t.Fatal(err)
			}
			imm, per := rd.ImmediateMessages(), rd.PersistedMessages()
			if len(imm)+len(per) != len(rd.Messages) || len(enc) != len(rd.Messages) {
				t.Fatalf("lists of %d and %d, %d messages, %d encoded", len(imm), len(per), len(rd.Messages), len(enc))
			}
			for i, m := range rd.Messages {
				want, _ := m.Marshal()
				if !bytes.Equal(enc[i], want) {
					t.Fatalf("encoded message %d differs from Messages[%d]", i, i)
				}
			}
			for _, m := range imm {
				switch m.Type {
				case raftpb.MsgVote, raftpb.MsgVoteResp, raftpb.MsgAppResp, raftpb.MsgPreVoteResp:
					t.Fatalf("node %d: %v in the immediate list", id, m.Type)
				case raftpb.MsgApp:
					sawApp = true
				}
			}
			for _, m := range per {
				switch m.Type {
				case raftpb.MsgVote:
					sawVote = true
				case raftpb.MsgAppResp:
					sawAppResp = true
				}
			}
			if err := n.storage.AppendReady(rd); err != nil {
				t.Fatal(err)
			}
			c.mailbox = append(c.mailbox, enc...)
			n.rn.Advance(rd)
		}
	}
	if !sawVote || !sawAppResp || !sawApp {
		t.Fatalf("vote request persisted %v, append answer persisted %v, append immediate %v", sawVote, sawAppResp, sawApp)
	}
	// A Ready built by hand: every message waits for the write.
	hand := Ready{Messages: []raftpb.Message{{Type: raftpb.MsgApp}}}
	if len(hand.ImmediateMessages()) != 0 || len(hand.PersistedMessages()) != 1 {
		t.Fatal("a hand-made Ready's messages must all count as persisted")
	}
}
