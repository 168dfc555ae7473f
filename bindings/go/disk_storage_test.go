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

// TestAppendReadyViewsWritesManyGroupsAtOnce drives three single-voter
// groups of one store from one loop: each round takes every node's view
// and persists them all with one AppendReadyViews, then advances each.
// After a restart every group has its log back.
func TestAppendReadyViewsWritesManyGroupsAtOnce(t *testing.T) {
	dir := t.TempDir()
	first, err := raftlet.OpenDiskStorage(dir)
	if err != nil {
		t.Fatal(err)
	}
	ids := []uint64{1, 2, 3}
	storages := []*raftlet.MemoryStorage{first}
	for _, g := range ids[1:] {
		s, err := first.OpenGroup(g)
		if err != nil {
			t.Fatal(err)
		}
		storages = append(storages, s)
	}
	var nodes []*raftlet.RawNode
	for _, s := range storages {
		if err := s.SetConfState(raftpb.ConfState{Voters: []uint64{1}}); err != nil {
			t.Fatal(err)
		}
		cfg := raftlet.DefaultConfig(1)
		cfg.Storage = s
		rn, err := raftlet.NewRawNode(&cfg)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, rn)
	}
	applied := make([][]string, len(nodes))
	// One round of the host's loop over every group with a Ready.
	round := func() {
		var ss []*raftlet.MemoryStorage
		var vs []raftlet.ReadyView
		var rns []*raftlet.RawNode
		var idx []int
		for i, rn := range nodes {
			if !rn.HasReady() {
				continue
			}
			v, err := rn.ReadyView()
			if err != nil {
				t.Fatal(err)
			}
			ss, vs, rns = append(ss, storages[i]), append(vs, v), append(rns, rn)
			idx = append(idx, i)
		}
		if err := raftlet.AppendReadyViews(ss, vs); err != nil {
			t.Fatal(err)
		}
		for k, v := range vs {
			ents, err := v.CommittedEntries()
			if err != nil {
				t.Fatal(err)
			}
			i := idx[k]
			for _, e := range ents {
				if d := e.Data(); e.Type == raftpb.EntryNormal && len(d) > 0 {
					applied[i] = append(applied[i], string(d))
				}
			}
			if err := rns[k].AdvanceView(v); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, rn := range nodes {
		if err := rn.Campaign(); err != nil {
			t.Fatal(err)
		}
	}
	for r := 0; r < 4; r++ {
		round()
	}
	for i, rn := range nodes {
		if err := rn.Propose([]byte(fmt.Sprintf("g%d", ids[i]))); err != nil {
			t.Fatal(err)
		}
	}
	for r := 0; r < 4; r++ {
		round()
	}
	for i := range nodes {
		if want := []string{fmt.Sprintf("g%d", ids[i])}; fmt.Sprint(applied[i]) != fmt.Sprint(want) {
			t.Fatalf("group %d applied %q, want %q", ids[i], applied[i], want)
		}
	}

	// Refusals write nothing: slices of different lengths, a memory
	// storage, a stale view.
	if err := raftlet.AppendReadyViews(storages, nil); !errors.Is(err, raftlet.ErrInvalidArg) {
		t.Fatalf("different lengths: %v", err)
	}
	if err := raftlet.AppendReadyViews(nil, nil); err != nil {
		t.Fatalf("no views: %v", err)
	}
	if err := nodes[0].Propose([]byte("more")); err != nil {
		t.Fatal(err)
	}
	v, err := nodes[0].ReadyView()
	if err != nil {
		t.Fatal(err)
	}
	mem := raftlet.NewMemoryStorage()
	defer mem.Close()
	last, _ := storages[0].LastIndex()
	if err := raftlet.AppendReadyViews(
		[]*raftlet.MemoryStorage{storages[0], mem}, []raftlet.ReadyView{v, v}); !errors.Is(err, raftlet.ErrInvalidArg) {
		t.Fatalf("a memory storage among them: %v", err)
	}
	if now, _ := storages[0].LastIndex(); now != last {
		t.Fatalf("a refused call wrote: last index %d -> %d", last, now)
	}
	if err := raftlet.AppendReadyViews(storages[:1], []raftlet.ReadyView{v}); err != nil {
		t.Fatal(err)
	}
	if err := nodes[0].AdvanceView(v); err != nil {
		t.Fatal(err)
	}
	if err := raftlet.AppendReadyViews(storages[:1], []raftlet.ReadyView{v}); !errors.Is(err, raftlet.ErrReadyStale) {
		t.Fatalf("an advanced view: %v", err)
	}

	for _, rn := range nodes {
		rn.Close()
	}
	for _, s := range storages {
		s.Close()
	}
	// Restarted: every group's log is back.
	for _, g := range ids {
		s, err := raftlet.OpenDiskStorageGroup(dir, g)
		if err != nil {
			t.Fatal(err)
		}
		if got := run(s); len(got) != 1 || got[0] != fmt.Sprintf("g%d", g) {
			t.Fatalf("group %d after the restart applied %q", g, got)
		}
		s.Close()
	}
}

// TestOpenDiskStorageWithOptions opens a store with 4 KiB segments and
// every record written direct: the log moves past its first segment, and
// the store opens again with the defaults, its log intact.
func TestOpenDiskStorageWithOptions(t *testing.T) {
	o := raftlet.DefaultDiskOptions()
	if o.SegmentSize != 64<<20 || o.RewriteMaxBytes != 16<<20 || o.DirectMinBytes != 1<<20 ||
		o.ReadCacheBytes != 64<<20 {
		t.Fatalf("defaults %+v", o)
	}
	dir := t.TempDir()
	zero := o
	zero.SegmentSize = 0
	if _, err := raftlet.OpenDiskStorageWith(dir, 1, zero); !errors.Is(err, raftlet.ErrInvalidArg) {
		t.Fatalf("segment size 0: %v", err)
	}
	o.SegmentSize, o.RewriteMaxBytes, o.DirectMinBytes, o.ReadCacheBytes = 4096, 0, 0, 0
	s, err := raftlet.OpenDiskStorageWith(dir, 1, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetConfState(raftpb.ConfState{Voters: []uint64{1}}); err != nil {
		t.Fatal(err)
	}
	var props []string
	for i := 0; i < 40; i++ {
		props = append(props, fmt.Sprintf("%03d-%s", i, strings.Repeat("p", 300)))
	}
	if got := run(s, props...); len(got) != len(props) {
		t.Fatalf("applied %d of %d", len(got), len(props))
	}
	s.Close()
	if _, err := os.Stat(dir + "/0000000000000002.log"); err != nil {
		t.Fatalf("the log did not move past its first 4 KiB segment: %v", err)
	}
	s, err = raftlet.OpenDiskStorage(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := run(s); fmt.Sprint(got) != fmt.Sprint(props) {
		t.Fatalf("after reopening with the defaults: %d entries", len(got))
	}
}
