// Command d2 is D2, the Go side of D1: a Go host of many single-voter
// groups with durable logs. Each round it proposes `batch` entries of
// `size` bytes to every group, then runs every group's Ready loop until all
// are quiet; a round's entries are durable and applied before the next
// round starts. Prints one JSON line in raftlet-bench-d1's format
// (workload "d2").
//
//   - raftlet-go: the Go binding (ReadyView API). Every group is a group of
//     one durable store (raftlet.OpenDiskStorage, OpenGroup); each pass
//     over the groups takes every node's view and writes them all with ONE
//     raftlet.AppendReadyViews (one record, one sync), then advances each.
//   - etcd-raft-wal: etcd raft v3.6's RawNode over a raft.MemoryStorage,
//     with one etcd WAL per group (go.etcd.io/etcd/server/v3/storage/wal),
//     Save'd for each Ready (it syncs when the Ready must be synced), as an
//     etcd-style host of many groups runs it.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"path/filepath"

	"github.com/raftlet/raftlet/bench/d1/go/internal/d1run"
	raftlet "github.com/raftlet/raftlet/bindings/go"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
)

// host is one implementation's groups.
type host interface {
	// propose hands payloads to group g.
	propose(g int, payloads [][]byte)
	// drain runs every group's Ready loop until none has a Ready, and
	// returns the entries applied.
	drain() int
	close()
}

func main() {
	impl := flag.String("impl", "raftlet-go", "raftlet-go or etcd-raft-wal")
	directMin := flag.Uint64("direct-min", 0, "raftlet's DiskOptions.DirectMinBytes (0: the default)")
	f := d1run.Define("groups")
	root, cleanup := f.Parse("d2")
	defer cleanup()
	groups, batch, size, rounds := f.Groups, f.Batch, f.Size, f.Rounds
	segment, maxSeconds := f.Segment, f.MaxSeconds
	var h host
	switch *impl {
	case "raftlet-go":
		h = newRaftlet(root, *groups, *directMin)
	case "etcd-raft-wal":
		wal.SegmentSizeBytes = *segment
		h = newEtcd(root, *groups)
	default:
		check(fmt.Errorf("unknown -impl %q", *impl))
	}
	h.drain() // elections
	// Distinct pseudo-random payloads, as in raftlet-bench-d1.
	pool := d1run.Pool(*size)
	pick := 0
	payloads := make([][]byte, *batch)
	done, secs, p50 := d1run.Time(*rounds, *maxSeconds, func(r int) {
		for g := 0; g < *groups; g++ {
			for i := range payloads {
				pick = (pick + 1) % len(pool)
				payloads[i] = pool[pick]
			}
			h.propose(g, payloads)
		}
		if n := h.drain(); n != *groups**batch {
			check(fmt.Errorf("round %d applied %d entries of %d", r, n, *groups**batch))
		}
	})
	h.close()
	*rounds = done
	writes := float64(*rounds * *groups)
	entries := writes * float64(*batch)
	fmt.Printf("{\"workload\":\"d2\",\"impl\":\"%s\",\"params\":{\"groups\":\"%d\",\"batch\":\"%d\",\"size\":\"%d\",\"rounds\":\"%d\"},"+
		"\"metrics\":{\"writes_per_s\":%.4f,\"writes_per_s_p50\":%.4f,\"round_p50_us\":%.1f,\"entries_per_s\":%.4f,\"mb_per_s\":%.4f,\"seconds\":%.4f}}\n",
		*impl, *groups, *batch, *size, *rounds, writes/secs, float64(*groups)/p50, p50*1e6, entries/secs, entries*float64(*size)/secs/1e6, secs)
}

// raftletHost: the groups of one durable store, written together.
type raftletHost struct {
	storages []*raftlet.MemoryStorage
	nodes    []*raftlet.RawNode
	// One pass's views and their groups, reused.
	ss  []*raftlet.MemoryStorage
	vs  []raftlet.ReadyView
	idx []int
}

func newRaftlet(dir string, groups int, directMin uint64) *raftletHost {
	h := &raftletHost{}
	opts := raftlet.DefaultDiskOptions()
	if directMin != 0 {
		opts.DirectMinBytes = directMin
	}
	first, err := raftlet.OpenDiskStorageWith(dir, 1, opts)
	check(err)
	for g := 0; g < groups; g++ {
		s := first
		if g > 0 {
			s, err = first.OpenGroup(uint64(g + 1))
			check(err)
		}
		check(s.SetConfState(raftpb.ConfState{Voters: []uint64{1}}))
		cfg := raftlet.DefaultConfig(1)
		cfg.Storage = s
		cfg.MaxCommittedSizePerReady = math.MaxUint64
		rn, err := raftlet.NewRawNode(&cfg)
		check(err)
		check(rn.Campaign())
		h.storages = append(h.storages, s)
		h.nodes = append(h.nodes, rn)
	}
	return h
}

func (h *raftletHost) propose(g int, payloads [][]byte) {
	check(h.nodes[g].ProposeBatch(payloads))
}

func (h *raftletHost) drain() int {
	applied := 0
	for {
		h.ss, h.vs, h.idx = h.ss[:0], h.vs[:0], h.idx[:0]
		for g, rn := range h.nodes {
			if !rn.HasReady() {
				continue
			}
			v, err := rn.ReadyView()
			check(err)
			h.ss, h.vs, h.idx = append(h.ss, h.storages[g]), append(h.vs, v), append(h.idx, g)
		}
		if len(h.vs) == 0 {
			return applied
		}
		// Every group's write in one record, one sync.
		check(raftlet.AppendReadyViews(h.ss, h.vs))
		for k, v := range h.vs {
			ents, err := v.CommittedEntries()
			check(err)
			for i := range ents {
				if ents[i].Type == raftpb.EntryNormal && len(ents[i].Data()) > 0 {
					applied++
				}
			}
			check(h.nodes[h.idx[k]].AdvanceView(v))
		}
	}
}

func (h *raftletHost) close() {
	for _, rn := range h.nodes {
		check(rn.Close())
	}
	for _, s := range h.storages {
		check(s.Close())
	}
}

// etcdHost: etcd raft nodes, one WAL each.
type etcdHost struct {
	nodes    []*raft.RawNode
	storages []*raft.MemoryStorage
	wals     []*wal.WAL
}

func newEtcd(dir string, groups int) *etcdHost {
	h := &etcdHost{}
	lg := zap.NewNop()
	for g := 0; g < groups; g++ {
		w, err := wal.Create(lg, filepath.Join(dir, fmt.Sprintf("g%d", g)), nil)
		check(err)
		st := raft.NewMemoryStorage()
		check(st.ApplySnapshot(raftpb.Snapshot{Metadata: raftpb.SnapshotMetadata{
			Index: 1, Term: 1, ConfState: raftpb.ConfState{Voters: []uint64{1}}}}))
		cfg := &raft.Config{
			ID:                       1,
			ElectionTick:             10,
			HeartbeatTick:            1,
			Storage:                  st,
			MaxSizePerMsg:            1 << 20,
			MaxInflightMsgs:          256,
			MaxCommittedSizePerReady: math.MaxUint64,
			CheckQuorum:              true,
			PreVote:                  true,
			// Quiet: a thousand elections would each log a few lines.
			Logger: &raft.DefaultLogger{Logger: log.New(io.Discard, "", 0)},
		}
		rn, err := raft.NewRawNode(cfg)
		check(err)
		check(rn.Campaign())
		h.nodes, h.storages, h.wals = append(h.nodes, rn), append(h.storages, st), append(h.wals, w)
	}
	return h
}

func (h *etcdHost) propose(g int, payloads [][]byte) {
	for _, p := range payloads {
		check(h.nodes[g].Propose(p))
	}
}

func (h *etcdHost) drain() int {
	applied := 0
	for {
		busy := false
		for g, rn := range h.nodes {
			if !rn.HasReady() {
				continue
			}
			busy = true
			rd := rn.Ready()
			// Save syncs when the Ready must be synced (entries, a new
			// term or vote).
			check(h.wals[g].Save(rd.HardState, rd.Entries))
			check(h.storages[g].Append(rd.Entries))
			if !raft.IsEmptyHardState(rd.HardState) {
				check(h.storages[g].SetHardState(rd.HardState))
			}
			for _, e := range rd.CommittedEntries {
				if e.Type == raftpb.EntryNormal && len(e.Data) > 0 {
					applied++
				}
			}
			rn.Advance(rd)
		}
		if !busy {
			return applied
		}
	}
}

func (h *etcdHost) close() {
	for _, w := range h.wals {
		check(w.Close())
	}
}

func check(err error) { d1run.Check("d2", err) }
