package raftlet

import (
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// BenchmarkReadyLoop measures one proposal through the Ready loop of a
// three-node leader: Propose, Ready (one cgo call for the whole batch),
// AppendReady, Advance, and the followers' acknowledgements stepped in.
func BenchmarkReadyLoop(b *testing.B) {
	c := newTestCluster(b, 1, 2, 3)
	c.elect(1)
	l := c.nodes[1]
	data := make([]byte, 128)
	acks := make([]raftpb.Message, 0, 2)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := l.rn.Propose(data); err != nil {
			b.Fatal(err)
		}
		for l.rn.HasReady() {
			rd := l.rn.Ready()
			if err := l.storage.AppendReady(rd); err != nil {
				b.Fatal(err)
			}
			acks = acks[:0]
			for _, m := range rd.Messages {
				if m.Type == raftpb.MsgApp && len(m.Entries) > 0 {
					last := m.Entries[len(m.Entries)-1].Index
					acks = append(acks, raftpb.Message{Type: raftpb.MsgAppResp, From: m.To, To: 1, Term: m.Term, Index: last})
				}
			}
			l.rn.Advance(rd)
			for _, a := range acks {
				if err := l.rn.Step(a); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
}
