package bench

import (
	"runtime"
	"testing"
)

// b7Groups and b7Active: 10,000 groups of 3 voters, 1 % of them active.
const (
	b7Groups = 10_000
	b7Active = 100
	// b7Warm idle rounds run after the election, before measuring.
	b7Warm = 30
)

func b7Hot(g int) bool {
	step := b7Groups / b7Active
	return g%step == 0 && g/step < b7Active
}

// BenchmarkB7: the B7 row of the Rust harness (../src/b7.rs) for etcd
// raft, which has no quiescence: all three nodes of every group in this
// process, node n holding one replica of each group, leaders spread over
// the nodes. One op is one round: a tick sweep on every node (Tick then
// HasReady on every group), one proposal of a fresh 128-byte payload on
// each active group's leader, then Ready cycles and deliveries until the
// cluster is quiet. Reports, per node, CPU ns per sweep and per round,
// and the Go heap per group replica once the idle groups are idle.
func BenchmarkB7(b *testing.B) {
	b.Run("impl=etcd", func(b *testing.B) {
		type item struct{ n, g int }
		runtime.GC()
		var ms0 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		nodes := make([][]node, 3)
		for n := range nodes {
			nodes[n] = make([]node, b7Groups)
			for g := range nodes[n] {
				nodes[n][g] = newEtcd(uint64(n+1), []uint64{1, 2, 3})
			}
		}
		var work []item
		var out []wire
		var app applied
		pump := func() {
			for len(work) > 0 {
				it := work[len(work)-1]
				work = work[:len(work)-1]
				nd := nodes[it.n][it.g]
				for nd.HasReady() {
					nd.Cycle(&out, &app)
				}
				for _, w := range out {
					t := int(w.to - 1)
					nodes[t][it.g].Step(w.data)
					work = append(work, item{t, it.g})
				}
				out = out[:0]
				nd.Sent()
			}
		}
		sweep := func() {
			for n, row := range nodes {
				for g, nd := range row {
					nd.Tick()
					if nd.HasReady() {
						work = append(work, item{n, g})
					}
				}
			}
		}
		for g := 0; g < b7Groups; g++ {
			nodes[g%3][g].Campaign()
			work = append(work, item{g % 3, g})
			pump()
		}
		for i := 0; i < b7Warm; i++ {
			sweep()
			pump()
		}
		runtime.GC()
		var ms1 runtime.MemStats
		runtime.ReadMemStats(&ms1)
		heap := (float64(ms1.HeapAlloc) - float64(ms0.HeapAlloc)) / (3 * b7Groups)
		for g := 0; g < b7Groups; g++ {
			if !nodes[g%3][g].IsLeader() {
				b.Fatalf("group %d lost its leader", g)
			}
		}
		applied0 := app.entries
		var sweepCPU, roundCPU float64
		b.ResetTimer()
		for r := 0; r < b.N; r++ {
			t := cpuNanos()
			sweep()
			s := cpuNanos()
			for g := 0; g < b7Groups; g++ {
				if b7Hot(g) {
					p := make([]byte, 128)
					p[0], p[1] = byte(r), byte(g)
					nodes[g%3][g].Propose(p)
					work = append(work, item{g % 3, g})
				}
			}
			pump()
			sweepCPU += float64(s - t)
			roundCPU += float64(cpuNanos() - t)
		}
		b.StopTimer()
		if want := uint64(3 * b7Active * b.N); app.entries-applied0 != want {
			b.Fatalf("applied %d of %d", app.entries-applied0, want)
		}
		per := float64(3 * b.N)
		b.ReportMetric(sweepCPU/per, "cpu-ns/sweep")
		b.ReportMetric(roundCPU/per, "cpu-ns/round")
		b.ReportMetric(heap, "heap-B/group")
		b.ReportMetric(b7Groups, "groups-ticked/sweep")
	})
}
