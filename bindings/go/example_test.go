package raftlet_test

import (
	"fmt"

	raftlet "github.com/raftlet/raftlet/bindings/go"
	"go.etcd.io/raft/v3/raftpb"
)

// Example runs the Ready loop of a single-node cluster: bootstrap,
// campaign, propose, apply.
func Example() {
	storage := raftlet.NewMemoryStorage()
	defer storage.Close()
	cfg := raftlet.DefaultConfig(1)
	cfg.Storage = storage
	rn, err := raftlet.NewRawNode(&cfg)
	if err != nil {
		panic(err)
	}
	defer rn.Close()
	if err := rn.Bootstrap([]raftlet.Peer{{ID: 1}}); err != nil {
		panic(err)
	}

	handle := func() {
		for rn.HasReady() {
			rd := rn.Ready()
			if rd.SoftState != nil {
				fmt.Println("role:", rd.RaftState)
			}
			if err := storage.AppendReady(rd); err != nil {
				panic(err)
			}
			// (send rd.Messages to the peers here)
			for _, e := range rd.CommittedEntries {
				switch e.Type {
				case raftpb.EntryNormal:
					if len(e.Data) > 0 {
						fmt.Printf("applied %q at index %d\n", e.Data, e.Index)
					}
				case raftpb.EntryConfChange:
					var cc raftpb.ConfChange
					if err := cc.Unmarshal(e.Data); err != nil {
						panic(err)
					}
					cs := rn.ApplyConfChange(cc)
					fmt.Println("voters:", cs.Voters)
				}
			}
			rn.Advance(rd)
		}
	}
	handle()
	if err := rn.Campaign(); err != nil {
		panic(err)
	}
	handle()
	if err := rn.Propose([]byte("hello")); err != nil {
		panic(err)
	}
	handle()
	// Output:
	// voters: [1]
	// role: StatePreCandidate
	// role: StateCandidate
	// role: StateLeader
	// applied "hello" at index 3
}
