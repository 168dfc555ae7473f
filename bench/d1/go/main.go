// Command d1wal is the etcd side of D1: synced log writes per second with
// etcd's WAL (go.etcd.io/etcd/server/v3/storage/wal), one WAL per group, as
// an etcd-style host of many groups runs it. Each round every group saves
// `batch` entries of `size` bytes and its hard state; Save syncs (entries
// make it must-sync). Prints one JSON line in raftlet-bench-d1's format.
package main

import (
	"fmt"
	"path/filepath"

	"github.com/raftlet/raftlet/bench/d1/go/internal/d1run"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
)

func main() {
	f := d1run.Define("groups, one WAL each")
	root, cleanup := f.Parse("d1wal")
	defer cleanup()
	groups, batch, size, rounds := f.Groups, f.Batch, f.Size, f.Rounds
	segment, maxSeconds := f.Segment, f.MaxSeconds
	wal.SegmentSizeBytes = *segment
	lg := zap.NewNop()
	wals := make([]*wal.WAL, *groups)
	for g := range wals {
		w, err := wal.Create(lg, filepath.Join(root, fmt.Sprintf("g%d", g)), nil)
		check(err)
		wals[g] = w
	}
	// Distinct pseudo-random payloads, as in raftlet-bench-d1.
	pool := d1run.Pool(*size)
	pick := 0
	next := make([]uint64, *groups)
	ents := make([]raftpb.Entry, *batch)
	done, secs, p50 := d1run.Time(*rounds, *maxSeconds, func(int) {
		for g, w := range wals {
			for i := range ents {
				next[g]++
				pick = (pick + 1) % len(pool)
				ents[i] = raftpb.Entry{Term: 1, Index: next[g], Type: raftpb.EntryNormal, Data: pool[pick]}
			}
			check(w.Save(raftpb.HardState{Term: 1, Vote: 1, Commit: next[g]}, ents))
		}
	})
	for _, w := range wals {
		check(w.Close())
	}
	*rounds = done
	writes := float64(*rounds * *groups)
	entries := writes * float64(*batch)
	fmt.Printf("{\"workload\":\"d1\",\"impl\":\"etcd-wal\",\"params\":{\"groups\":\"%d\",\"batch\":\"%d\",\"size\":\"%d\",\"rounds\":\"%d\"},"+
		"\"metrics\":{\"writes_per_s\":%.4f,\"writes_per_s_p50\":%.4f,\"round_p50_us\":%.1f,\"syncs_per_s\":%.4f,\"entries_per_s\":%.4f,\"mb_per_s\":%.4f,\"seconds\":%.4f}}\n",
		*groups, *batch, *size, *rounds, writes/secs, float64(*groups)/p50, p50*1e6, writes/secs, entries/secs, entries*float64(*size)/secs/1e6, secs)
}

func check(err error) { d1run.Check("d1wal", err) }
