package interop

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"

	raftlet "github.com/raftlet/raftlet/bindings/go"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// The message types that travel between peers, which raftlet must write
// exactly as etcd's raftpb does.
var wireTypes = []raftpb.MessageType{
	raftpb.MsgProp, raftpb.MsgApp, raftpb.MsgAppResp, raftpb.MsgVote, raftpb.MsgVoteResp,
	raftpb.MsgSnap, raftpb.MsgHeartbeat, raftpb.MsgHeartbeatResp, raftpb.MsgTransferLeader,
	raftpb.MsgTimeoutNow, raftpb.MsgReadIndex, raftpb.MsgReadIndexResp, raftpb.MsgPreVote,
	raftpb.MsgPreVoteResp,
}

// TestRaftletBytesDecodeInRaftpb drives an all-raftlet cluster through
// every kind of traffic and checks, for each message type, that the bytes
// raftlet wrote decode in raftpb and encode back to the same bytes, and
// that raftlet's own header decoder agrees.
func TestRaftletBytesDecodeInRaftpb(t *testing.T) {
	c := newCluster(t, 7)
	defer c.close()
	peers := []uint64{1, 2, 3}
	for _, id := range peers {
		c.start(id, kindRaftlet, defaultOptions, peers)
	}
	seen := map[raftpb.MessageType][][]byte{}
	c.onSend = func(m raftpb.Message, raw []byte) {
		if raw == nil {
			t.Fatalf("a raftlet node sent %v without its own bytes", m.Type)
		}
		if len(seen[m.Type]) < 8 {
			seen[m.Type] = append(seen[m.Type], raw)
		}
	}
	c.settle()
	c.elect(1)                     // MsgPreVote(Resp), MsgVote(Resp), MsgApp(Resp)
	c.proposeN(2, 3, "fwd")        // MsgProp forwarded by a follower
	c.ticks(2)                     // MsgHeartbeat(Resp)
	c.readIndex(3, "read")         // MsgReadIndex, MsgReadIndexResp
	c.settle()                     //
	c.hosts[2].n.TransferLeader(3) // MsgTransferLeader forwarded to the leader
	c.settle()                     // MsgTimeoutNow
	c.isolate(1)                   //
	c.proposeN(3, 5, "more")       //
	c.snapshot(3, 0)               //
	c.heal()                       //
	c.ticks(3)                     // MsgSnap
	if c.hosts[1].snapshots != 1 || c.leader() != 3 {
		t.Fatalf("scenario: %d snapshots on 1, leader %d", c.hosts[1].snapshots, c.leader())
	}
	for _, typ := range wireTypes {
		t.Run(typ.String(), func(t *testing.T) {
			raws := seen[typ]
			if len(raws) == 0 {
				t.Fatalf("raftlet sent no %v in the scenario", typ)
			}
			for _, raw := range raws {
				var m raftpb.Message
				if err := m.Unmarshal(raw); err != nil {
					t.Fatalf("raftpb cannot decode raftlet's %v %x: %v", typ, raw, err)
				}
				if m.Type != typ {
					t.Fatalf("decoded type %v", m.Type)
				}
				again, err := m.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(again, raw) {
					t.Fatalf("%v: raftlet wrote %x, raftpb writes %x", typ, raw, again)
				}
				h, err := raftlet.DecodeMessageHeader(raw)
				if err != nil || h != (raftlet.MessageHeader{Type: m.Type, To: m.To, From: m.From, Term: m.Term}) {
					t.Fatalf("raftlet header %+v %v, raftpb %v", h, err, m)
				}
			}
		})
	}
}

// fullMessage is a message of type typ with every field set.
func fullMessage(typ raftpb.MessageType) raftpb.Message {
	m := raftpb.Message{
		Type: typ, To: 1, From: 2, Term: 5, LogTerm: 1, Index: 3, Commit: 3, Vote: 2,
		Reject: false, RejectHint: 0, Context: []byte("ctx-" + typ.String()),
		Entries: []raftpb.Entry{
			{Term: 5, Index: 4, Type: raftpb.EntryNormal, Data: []byte("four")},
			{Term: 5, Index: 5, Type: raftpb.EntryNormal},
		},
		Responses: []raftpb.Message{{Type: raftpb.MsgAppResp, To: 9, From: 8, Term: 1, Index: 2}},
	}
	switch typ {
	case raftpb.MsgApp:
		m.Commit = 5
		m.Context = nil
	case raftpb.MsgSnap:
		m.Entries, m.Responses, m.Context = nil, nil, nil
		m.Snapshot = &raftpb.Snapshot{
			Data: []byte("state"),
			Metadata: raftpb.SnapshotMetadata{Index: 10, Term: 5,
				ConfState: raftpb.ConfState{Voters: []uint64{1, 2, 3}}},
		}
	case raftpb.MsgAppResp, raftpb.MsgVoteResp, raftpb.MsgPreVoteResp:
		m.Reject, m.RejectHint = true, 2
	}
	return m
}

// stepOutcome names the error class of a Step.
func stepOutcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, raftlet.ErrStepLocalMsg), errors.Is(err, raft.ErrStepLocalMsg):
		return "local message"
	case errors.Is(err, raftlet.ErrStepPeerNotFound), errors.Is(err, raft.ErrStepPeerNotFound):
		return "peer not found"
	case errors.Is(err, raftlet.ErrProposalDropped), errors.Is(err, raft.ErrProposalDropped):
		return "proposal dropped"
	}
	return "error: " + err.Error()
}

// bootstrapped returns a node of kind k, bootstrapped with voters 1 2 3
// and its first Ready handled.
func bootstrapped(t *testing.T, k kind) *host {
	c := newCluster(t, 1)
	t.Cleanup(c.close)
	h := c.start(1, k, defaultOptions, []uint64{1, 2, 3})
	for c.handle(h) {
	}
	c.net = nil
	return h
}

// TestRaftpbBytesStepIntoRaftlet marshals every message type with raftpb,
// every field set, and steps the bytes into a raftlet node and an etcd
// node: raftlet must decode every one (its header decoder agrees with
// raftpb) and react as etcd does: local types refused, the rest accepted,
// and the entries and snapshot it was sent reach its Ready unchanged.
func TestRaftpbBytesStepIntoRaftlet(t *testing.T) {
	for typ := raftpb.MsgHup; typ <= raftpb.MsgForgetLeader; typ++ {
		t.Run(typ.String(), func(t *testing.T) {
			m := fullMessage(typ)
			b, err := m.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			h, err := raftlet.DecodeMessageHeader(b)
			if err != nil || h != (raftlet.MessageHeader{Type: typ, To: 1, From: 2, Term: 5}) {
				t.Fatalf("raftlet header %+v %v", h, err)
			}
			rl, et := bootstrapped(t, kindRaftlet), bootstrapped(t, kindEtcd)
			got, want := stepOutcome(rl.n.StepBytes(b)), stepOutcome(et.n.StepBytes(b))
			if got != want {
				t.Fatalf("raftlet: %s; etcd: %s", got, want)
			}
			rr, er := rl.n.Ready(), et.n.Ready()
			defer rl.n.Advance(rr)
			defer et.n.Advance(er)
			if !reflect.DeepEqual(normEntries(rr.entries), normEntries(er.entries)) {
				t.Fatalf("entries to persist: raftlet %v, etcd %v", rr.entries, er.entries)
			}
			if !reflect.DeepEqual(rr.snapshot, er.snapshot) {
				t.Fatalf("snapshot: raftlet %v, etcd %v", rr.snapshot, er.snapshot)
			}
			if rr.hardState != er.hardState {
				t.Fatalf("hard state: raftlet %v, etcd %v", rr.hardState, er.hardState)
			}
			if fmt.Sprint(msgTypes(rr.messages)) != fmt.Sprint(msgTypes(er.messages)) {
				t.Fatalf("answers: raftlet %v, etcd %v", msgTypes(rr.messages), msgTypes(er.messages))
			}
			switch typ {
			case raftpb.MsgApp:
				if len(rr.entries) != 2 || string(rr.entries[0].Data) != "four" {
					t.Fatalf("MsgApp entries not appended: %v", rr.entries)
				}
			case raftpb.MsgSnap:
				if string(rr.snapshot.Data) != "state" {
					t.Fatalf("MsgSnap not restored: %v", rr.snapshot)
				}
			}
		})
	}
}

// normEntries treats a nil and an empty Data alike (raftpb decodes both
// as empty).
func normEntries(es []raftpb.Entry) []raftpb.Entry {
	out := make([]raftpb.Entry, len(es))
	for i, e := range es {
		out[i] = e
		if len(e.Data) == 0 {
			out[i].Data = nil
		}
	}
	return out
}

func msgTypes(ms []raftpb.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, fmt.Sprintf("%v->%d", m.Type, m.To))
	}
	return out
}
