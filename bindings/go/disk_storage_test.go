package raftlet_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	raftlet "github.com/raftlet/raftlet/bindings/go"
	"go.etcd.io/raft/v3/raftpb"
)

// run drives a single-voter node over storage through its Ready loop and
// returns the payloads it applied.
func run(storage *raftlet.MemoryStorage, propose ...string) []string {
	cfg := raftlet.DefaultConfig(1)
	cfg.Storage = storage
	rn, err := raftlet.NewRawNode(&cfg)
	if err != nil {
		panic(err)
	}
	defer rn.Close()
	var applied []string
	drain := func() {
		for rn.HasReady() {
			rd := rn.Ready()
			if err := storage.AppendReady(rd); err != nil { // durable on return
				panic(err)
			}
			for _, e := range rd.CommittedEntries {
				if e.Type == raftpb.EntryNormal && len(e.Data) > 0 {
					applied = append(applied, string(e.Data))
				}
			}
			rn.Advance(rd)
		}
	}
	drain()
	if len(propose) > 0 {
		if err := rn.Campaign(); err != nil {
			panic(err)
		}
		drain()
		for _, p := range propose {
			if err := rn.Propose([]byte(p)); err != nil {
				panic(err)
			}
		}
		drain()
	}
	return applied
}

// ExampleOpenDiskStorage writes two entries, closes everything (as a
// process that stops), and reopens the directory: the node gets its log
// back and applies the same entries again.
func ExampleOpenDiskStorage() {
	dir, _ := os.MkdirTemp("", "raftlet-disk")
	defer os.RemoveAll(dir)

	storage, err := raftlet.OpenDiskStorage(dir)
	if err != nil {
		panic(err)
	}
	if err := storage.SetConfState(raftpb.ConfState{Voters: []uint64{1}}); err != nil {
		panic(err)
	}
	fmt.Println("first run:", run(storage, "x=1", "y=2"))
	storage.Close()

	storage, err = raftlet.OpenDiskStorage(dir) // restart
	if err != nil {
		panic(err)
	}
	defer storage.Close()
	fmt.Println("after restart:", run(storage))
	// Output:
	// first run: [x=1 y=2]
	// after restart: [x=1 y=2]
}

func TestDiskStorageLocksItsDirectoryAndServesGroups(t *testing.T) {
	dir := t.TempDir()
	s1, err := raftlet.OpenDiskStorage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raftlet.OpenDiskStorage(dir); !errors.Is(err, raftlet.ErrStorage) ||
		!strings.Contains(err.Error(), "locked") {
		t.Fatalf("second open: %v, want a locked ErrStorage", err)
	}
	g2, err := s1.OpenGroup(2)
	if err != nil {
		t.Fatal(err)
	}
	if err := g2.SetConfState(raftpb.ConfState{Voters: []uint64{1}}); err != nil {
		t.Fatal(err)
	}
	if got := run(g2, "in group 2"); len(got) != 1 || got[0] != "in group 2" {
		t.Fatalf("group 2 applied %q", got)
	}
	mem := raftlet.NewMemoryStorage()
	defer mem.Close()
	if _, err := mem.OpenGroup(2); !errors.Is(err, raftlet.ErrInvalidArg) {
		t.Fatalf("OpenGroup on a memory storage: %v", err)
	}
	g2.Close()
	s1.Close()
	// Closed: the directory opens again, with group 2's log.
	g2, err = raftlet.OpenDiskStorageGroup(dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	first, _ := g2.FirstIndex()
	last, _ := g2.LastIndex()
	if first != 1 || last != 2 {
		t.Fatalf("first %d last %d after the restart, want 1 and 2", first, last)
	}
}
