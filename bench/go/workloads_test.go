package bench

import (
	"fmt"
	"runtime"
	"testing"
)

// The implementations, by the name the report uses: etcd raft natively,
// raftlet through the binding's etcd-compatible API (raftpb-typed Ready,
// Step for each message) and through its zero-copy API (ReadyView,
// StepBatch, ProposeBatch, TickSet). sweep, when set, is the B4 sweep of
// the implementation's bulk call (nil: Tick then HasReady on each group).
var impls = []struct {
	name  string
	make  factory
	sweep func([]node) func() int
}{
	{"etcd", newEtcd, nil},
	{"raftlet-go", newRaftletGo, nil},
	{"raftlet-go-view", newRaftletView, sweepView},
}

// freshPayload is a new payload of size bytes for one proposal: every
// implementation allocates and fills one per entry, as a host serving
// requests does (none gets to share one buffer between entries).
func freshPayload(size int, v byte) []byte {
	p := make([]byte, size)
	fill(p, v)
	return p
}

// fill writes variant v of the payload pattern into p.
func fill(p []byte, v byte) {
	copy(p, pattern[v%8][:len(p)])
}

// pattern holds the bytes payloads are filled with (8 variants).
var pattern = func() (p [8][16384]byte) {
	for v := range p {
		for i := range p[v] {
			p[v][i] = byte(v*31 + i)
		}
	}
	return p
}()

// cluster: nodes 1..n in one process; messages marshalled by the sender,
// unmarshalled by the receiver.
type cluster struct {
	nodes    []node
	apps     []applied
	out, inf []wire
	byDest   [][][]byte // the messages of one delivery round, by recipient
	msgs     uint64
}

func newCluster(mk factory, n int) *cluster {
	voters := make([]uint64, n)
	for i := range voters {
		voters[i] = uint64(i + 1)
	}
	c := &cluster{apps: make([]applied, n), byDest: make([][][]byte, n)}
	for _, id := range voters {
		c.nodes = append(c.nodes, mk(id, voters))
	}
	return c
}

func (c *cluster) close() {
	for _, n := range c.nodes {
		n.Close()
	}
}

// pump runs Ready cycles on every node and delivers every message until
// nothing is left to do.
func (c *cluster) pump() {
	for {
		worked := false
		for i, n := range c.nodes {
			if n.HasReady() {
				n.Cycle(&c.out, &c.apps[i])
				worked = true
			}
		}
		if len(c.out) == 0 {
			if !worked {
				return
			}
			continue
		}
		c.out, c.inf = c.inf[:0], c.out
		// Each recipient gets what was sent to it, in order, at once.
		for _, w := range c.inf {
			c.msgs++
			c.byDest[w.to-1] = append(c.byDest[w.to-1], w.data)
		}
		for i, bs := range c.byDest {
			if len(bs) > 0 {
				c.nodes[i].StepMany(bs)
				clear(bs)
				c.byDest[i] = bs[:0]
			}
		}
		clear(c.inf)
		for _, n := range c.nodes {
			n.Sent()
		}
	}
}

func (c *cluster) elect(b *testing.B) {
	c.nodes[0].Campaign()
	c.pump()
	if !c.nodes[0].IsLeader() {
		b.Fatal("node 1 did not win its election")
	}
}

// meter reads CPU time and heap allocations around the timed part.
type meter struct {
	cpu     int64
	mallocs uint64
	cgo     int64
}

func startMeter(b *testing.B) meter {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ResetTimer()
	return meter{cpu: cpuNanos(), mallocs: ms.Mallocs, cgo: runtime.NumCgoCall()}
}

// stop returns CPU seconds and allocations since start, and reports the
// cgo crossings per op (0 for etcd raft).
func (m meter) stop(b *testing.B) (float64, float64) {
	cpu := float64(cpuNanos()-m.cpu) / 1e9
	cgo := runtime.NumCgoCall() - m.cgo
	b.StopTimer()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(cgo)/float64(b.N), "cgo-calls/op")
	return cpu, float64(ms.Mallocs - m.mallocs)
}

// BenchmarkB1: one op is a round of 256 proposals of `size` bytes on the
// leader of 3 voters (B1: 256 Propose calls; B1batch: one MsgProp with 256
// entries), then Ready cycles on all nodes until the round is applied
// everywhere. Logs are compacted whenever a round crosses a 100k-entry
// boundary (or 256 MiB of payload). Run with -benchtime=1953x for 500k
// entries.
func BenchmarkB1(b *testing.B) {
	for _, im := range impls {
		for _, batch := range []bool{false, true} {
			for _, size := range []int{128, 1024, 16384} {
				name := "B1"
				if batch {
					name = "B1batch"
				}
				b.Run(fmt.Sprintf("%s/impl=%s/size=%d", name, im.name, size), func(b *testing.B) {
					benchB1(b, im.make, batch, size)
				})
			}
		}
	}
}

func benchB1(b *testing.B, mk factory, batch bool, size int) {
	const perRound = 256
	c := newCluster(mk, 3)
	defer c.close()
	c.elect(b)
	if batch && !c.nodes[0].ProposeBatch([][]byte{make([]byte, size)}) {
		b.Skip("no batch proposal in this implementation")
	}
	c.pump()
	every := uint64(100_000)
	if lim := uint64(256<<20) / uint64(size); lim < every {
		every = lim
	}
	base := c.apps[0].entries
	m0 := c.msgs
	next := every
	m := startMeter(b)
	for r := 0; r < b.N; r++ {
		// Fresh payloads, allocated where the host wants them, filled.
		payloads := c.nodes[0].Payloads(perRound, size)
		for _, p := range payloads {
			fill(p, byte(r))
		}
		if batch {
			c.nodes[0].ProposeBatch(payloads)
		} else {
			for _, p := range payloads {
				c.nodes[0].Propose(p)
			}
		}
		clear(payloads)
		c.pump()
		if uint64(r+1)*perRound >= next {
			for i, n := range c.nodes {
				n.Compact(c.apps[i].index)
			}
			next += every
		}
	}
	cpu, allocs := m.stop(b)
	n := float64(b.N * perRound)
	for i := range c.apps {
		if got := c.apps[i].entries - base; got != uint64(b.N*perRound) {
			b.Fatalf("node %d applied %d of %d", i+1, got, b.N*perRound)
		}
	}
	b.ReportMetric(n/cpu, "entries/s")
	b.ReportMetric(n*float64(size)/cpu/1e6, "MB/s")
	b.ReportMetric(allocs/n, "allocs/entry")
	b.ReportMetric(float64(c.msgs-m0)/n, "msgs/entry")
	b.ReportMetric(procStatusKiB("VmHWM")/1024, "peak-RSS-MiB")
}

// BenchmarkB3: one voter; one op is a proposal of 128 bytes then Ready
// cycles (persist, apply, advance) until the node is idle.
func BenchmarkB3(b *testing.B) {
	for _, im := range impls {
		b.Run("impl="+im.name, func(b *testing.B) {
			n := im.make(1, []uint64{1})
			defer n.Close()
			var out []wire
			var app applied
			n.Campaign()
			for n.HasReady() {
				n.Cycle(&out, &app)
				n.Sent()
			}
			run := func(k int) {
				for i := 0; i < k; i++ {
					n.Propose(freshPayload(128, byte(i)))
					for n.HasReady() {
						n.Cycle(&out, &app)
						n.Sent()
					}
				}
			}
			run(b.N/10 + 1)
			before := app.entries
			m := startMeter(b)
			run(b.N)
			cpu, allocs := m.stop(b)
			if app.entries-before != uint64(b.N) {
				b.Fatalf("applied %d of %d", app.entries-before, b.N)
			}
			b.ReportMetric(cpu*1e9/float64(b.N), "cpu-ns/op")
			b.ReportMetric(allocs/float64(b.N), "allocs/entry")
		})
	}
}

// BenchmarkB4: 10,000 idle follower groups (node 2 of 3 voters, which
// heard its leader's heartbeat). One op is one sweep: Tick then HasReady
// on every group. Reports heap bytes per group (Go heap plus C heap, where
// the binding's groups live; the growth of the resident set alongside)
// and CPU ns per group per sweep.
func BenchmarkB4(b *testing.B) {
	const groups = 10_000
	for _, im := range impls {
		b.Run("impl="+im.name, func(b *testing.B) {
			var out []wire
			var app applied
			hb := heartbeat(im.make)
			runtime.GC()
			var ms0 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			rss0 := procStatusKiB("VmRSS")
			c0 := cHeapInUse()
			nodes := make([]node, 0, groups)
			for g := 0; g < groups; g++ {
				n := im.make(2, []uint64{1, 2, 3})
				n.Step(hb)
				for n.HasReady() {
					n.Cycle(&out, &app)
				}
				out = out[:0]
				n.Sent()
				nodes = append(nodes, n)
			}
			runtime.GC()
			var ms1 runtime.MemStats
			runtime.ReadMemStats(&ms1)
			rss1 := procStatusKiB("VmRSS")
			// Go heap plus C heap: the binding's groups live in C.
			heap := (float64(ms1.HeapAlloc) - float64(ms0.HeapAlloc) + cHeapInUse() - c0) / groups
			rss := (rss1 - rss0) * 1024 / groups
			var cpu float64
			var cgo int64
			busy := 0
			sweep := func() int {
				k := 0
				for _, n := range nodes {
					n.Tick()
					if n.HasReady() {
						k++
					}
				}
				return k
			}
			if im.sweep != nil {
				sweep = im.sweep(nodes)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// Hear the leader again every 5 sweeps so none times out.
				if i%5 == 0 {
					b.StopTimer()
					for _, n := range nodes {
						n.Step(hb)
						for n.HasReady() {
							n.Cycle(&out, &app)
						}
						out = out[:0]
						n.Sent()
					}
					b.StartTimer()
				}
				t, c := cpuNanos(), runtime.NumCgoCall()
				busy += sweep()
				cpu += float64(cpuNanos() - t)
				cgo += runtime.NumCgoCall() - c
			}
			b.StopTimer()
			if busy != 0 {
				b.Fatalf("%d idle groups had work", busy)
			}
			b.ReportMetric(heap, "heap-B/group")
			b.ReportMetric((float64(ms1.HeapAlloc)-float64(ms0.HeapAlloc))/groups, "go-heap-B/group")
			b.ReportMetric(rss, "rss-B/group")
			b.ReportMetric(cpu/float64(b.N)/groups, "cpu-ns/group-tick")
			b.ReportMetric(float64(cgo)/float64(b.N)/groups, "cgo-calls/group-tick")
			for _, n := range nodes {
				if n.IsLeader() {
					b.Fatal("an idle group became leader")
				}
				n.Close()
			}
		})
	}
}

// heartbeat is a leader's (1) heartbeat to node 2 at term 1, as bytes.
func heartbeat(factory) []byte {
	m := raftpbHeartbeat()
	return m
}

// BenchmarkB5: 3 voters; one op is a round of `per` ReadIndex (Safe)
// requests at the leader, then Ready cycles until all are confirmed.
func BenchmarkB5(b *testing.B) {
	for _, im := range impls {
		for _, per := range []int{1, 64} {
			b.Run(fmt.Sprintf("impl=%s/per=%d", im.name, per), func(b *testing.B) {
				c := newCluster(im.make, 3)
				defer c.close()
				c.elect(b)
				c.nodes[0].Propose(make([]byte, 128))
				c.pump()
				ctx := uint64(0)
				m0 := c.msgs
				base := c.apps[0].reads
				m := startMeter(b)
				for r := 0; r < b.N; r++ {
					for i := 0; i < per; i++ {
						ctx++
						c.nodes[0].ReadIndex(ctx)
					}
					c.pump()
				}
				cpu, allocs := m.stop(b)
				reads := float64(b.N * per)
				if got := c.apps[0].reads - base; got != uint64(b.N*per) {
					b.Fatalf("confirmed %d of %d reads", got, b.N*per)
				}
				b.ReportMetric(reads/cpu, "reads/s")
				b.ReportMetric(float64(c.msgs-m0)/reads, "msgs/read")
				b.ReportMetric(allocs/reads, "allocs/read")
			})
		}
	}
}
