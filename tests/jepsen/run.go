package main

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"
)

// RunConfig is one run: a cluster, clients, a schedule.
type RunConfig struct {
	Bin              string // the kv binary
	Dir              string // this run's data dirs, logs, history, visualization
	Seed             int64
	Nodes            int
	Clients          int
	Keys             int // concurrently used keys
	OpsPerKey        int // a key is retired after this many operations (keeps each register's history small)
	Duration         time.Duration
	UnsafeStaleReads bool
	SnapshotEntries  int           // kv's --snapshot-entries: small, so restarted nodes catch up by snapshot
	KVArgs           []string      // more flags for every node
	Membership       bool          // add membership changes (remove, wipe, rejoin) to the faults
	RequestTimeout   time.Duration // client side; kv's own is 2 s
	CheckTimeout     time.Duration
	Log              func(format string, args ...interface{})
}

// PhaseStats are the figures of one phase (the fault active at
// invocation, "none" between faults).
type PhaseStats struct {
	Phase      string
	Seconds    float64
	Ops        int // invoked
	OK         int // completed with a definite answer (incl. 412)
	Throughput float64
	P50, P99   time.Duration
}

// RunResult is what a run found.
type RunResult struct {
	Seed        int64
	Stale       bool
	Duration    time.Duration
	Schedule    []Step
	Events      []FaultEvent
	Ops         int
	ByOutcome   map[Outcome]int
	ByKind      map[OpKind]int
	Faults      map[FaultKind]int
	Verdict     Verdict
	Convergence []string
	Crashes     []string
	Shutdown    []error
	Phases      []PhaseStats
	Dir         string
}

// Passed reports whether the run found nothing wrong: linearizable,
// converged without a lost write, no crash, clean shutdown.
func (r *RunResult) Passed() bool {
	return r.Verdict.Linearizable() && len(r.Convergence) == 0 && len(r.Crashes) == 0 && len(r.Shutdown) == 0
}

// Run does one run and always tears the cluster down before returning.
func Run(cfg RunConfig) (res *RunResult, err error) {
	if cfg.Log == nil {
		cfg.Log = func(string, ...interface{}) {}
	}
	if err := os.RemoveAll(cfg.Dir); err != nil {
		return nil, err
	}
	cl, err := NewCluster(cfg.Bin, ClusterConfig{N: cfg.Nodes, Dir: cfg.Dir, UnsafeStaleReads: cfg.UnsafeStaleReads, SnapshotEntries: cfg.SnapshotEntries, ExtraArgs: cfg.KVArgs})
	if err != nil {
		return nil, err
	}
	res = &RunResult{Seed: cfg.Seed, Stale: cfg.UnsafeStaleReads, Dir: cfg.Dir,
		ByOutcome: map[Outcome]int{}, ByKind: map[OpKind]int{}, Faults: map[FaultKind]int{}}
	shut := false
	defer func() {
		if !shut {
			cl.KillAll()
		}
		if p := recover(); p != nil {
			panic(p)
		}
	}()
	if err := cl.Start(); err != nil {
		return nil, err
	}
	ctx := context.Background()
	if _, err := cl.WaitLeader(ctx, 30*time.Second); err != nil {
		return nil, fmt.Errorf("cluster did not start: %w", err)
	}
	h := NewHistory()
	nem := &Nemesis{C: cl, H: h, Log: cfg.Log}
	var kinds []FaultKind
	if cfg.Membership {
		kinds = append(append(kinds, AllFaults...), FaultMembership)
	}
	res.Schedule = Schedule(cfg.Seed, cfg.Nodes, cfg.Duration, cfg.UnsafeStaleReads, kinds)
	cfg.Log("seed %d: %d nodes, %d clients, %v, stale reads %v; schedule:", cfg.Seed, cfg.Nodes, cfg.Clients, cfg.Duration, cfg.UnsafeStaleReads)
	for i, s := range res.Schedule {
		cfg.Log("  %2d. %s", i+1, s)
	}

	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	keys := newKeySpace(cfg.Keys, cfg.OpsPerKey)
	var wg sync.WaitGroup
	for c := 0; c < cfg.Clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			runClient(runCtx, c, cfg, cl, h, nem, keys)
		}(c)
	}
	nemErr := nem.Run(runCtx, res.Schedule)
	cancel()
	wg.Wait()
	if nemErr != nil {
		return nil, fmt.Errorf("nemesis: %w", nemErr)
	}
	res.Duration = time.Duration(h.Now())
	res.Events = nem.Events()
	for _, e := range res.Events {
		res.Faults[e.Kind]++
	}

	// Healed (Run heals on the way out): wait until every node has
	// applied the same index, then read every key locally on every node.
	sts, cerr := cl.WaitConverged(ctx, 60*time.Second)
	ops := h.Ops()
	if cerr != nil {
		res.Convergence = append(res.Convergence, cerr.Error())
	} else {
		finalOps, states := finalReads(ctx, cl, h, sts, keys.All())
		ops = append(ops, finalOps...)
		res.Convergence = append(res.Convergence, CheckConvergence(ops, states)...)
	}
	res.Crashes = nem.Crashes()
	res.Shutdown = cl.Shutdown()
	shut = true

	res.Ops = 0
	for _, op := range ops {
		if op.Final {
			continue
		}
		res.Ops++
		res.ByOutcome[op.Output.Outcome]++
		res.ByKind[op.Input.Kind]++
	}
	res.Phases = phaseStats(ops, res.Events, res.Duration)
	if err := writeHistory(filepath.Join(cfg.Dir, "history.txt"), ops); err != nil {
		return nil, err
	}
	res.Verdict, err = CheckHistory(ops, cfg.CheckTimeout, filepath.Join(cfg.Dir, "linearizability.html"))
	if err != nil {
		return nil, err
	}
	return res, nil
}

// keySpace hands out keys: Keys slots, each renamed after OpsPerKey
// operations so no single register's history grows without bound.
type keySpace struct {
	mu     sync.Mutex
	gen    []int
	count  []int
	per    int
	all    map[string]bool
	recent map[string][]string // values recently written or read, for CAS
}

func newKeySpace(n, per int) *keySpace {
	return &keySpace{gen: make([]int, n), count: make([]int, n), per: per, all: map[string]bool{}, recent: map[string][]string{}}
}

func (k *keySpace) pick(r *rand.Rand) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	s := r.Intn(len(k.gen))
	k.count[s]++
	if k.count[s] > k.per {
		k.count[s] = 1
		k.gen[s]++
	}
	key := fmt.Sprintf("k%d.%d", s, k.gen[s])
	k.all[key] = true
	return key
}

func (k *keySpace) saw(key, v string) {
	if v == "" {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	r := append(k.recent[key], v)
	if len(r) > 4 {
		r = r[len(r)-4:]
	}
	k.recent[key] = r
}

func (k *keySpace) guess(r *rand.Rand, key string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	vs := k.recent[key]
	if len(vs) == 0 || r.Intn(5) == 0 {
		return ""
	}
	return vs[r.Intn(len(vs))]
}

func (k *keySpace) All() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]string, 0, len(k.all))
	for key := range k.all {
		out = append(out, key)
	}
	sort.Strings(out)
	return out
}

func runClient(ctx context.Context, c int, cfg RunConfig, cl *Cluster, h *History, nem *Nemesis, keys *keySpace) {
	r := rand.New(rand.NewSource(cfg.Seed*1000 + int64(c)))
	kv := NewKVClient(cfg.RequestTimeout)
	logical := c
	seq := 0
	for ctx.Err() == nil {
		key := keys.pick(r)
		var in Input
		switch x := r.Intn(10); {
		case x < 5:
			in = Input{Kind: OpRead, Key: key}
		case x < 8:
			seq++
			in = Input{Kind: OpWrite, Key: key, Value: fmt.Sprintf("c%d.%d", c, seq)}
		default:
			seq++
			in = Input{Kind: OpCAS, Key: key, Old: keys.guess(r, key), Value: fmt.Sprintf("c%d.%d", c, seq)}
		}
		node := cl.Nodes[r.Intn(len(cl.Nodes))]
		phase := nem.Phase()
		call := h.Now()
		// The request is not tied to ctx: an operation in flight at the
		// end of the run completes (or times out) and is recorded.
		out, note := kv.Do(context.Background(), node.HTTPAddr, in, false)
		ret := h.Now()
		h.Add(Op{Client: logical, Node: node.ID, Input: in, Output: out, Call: call, Return: ret, Phase: phase})
		switch {
		case out.Outcome == Ok && in.Kind == OpRead:
			keys.saw(key, out.Value)
		case out.Outcome == Ok:
			keys.saw(key, in.Value)
		case out.Outcome == CASFailed:
			keys.saw(key, out.Value)
		case out.Outcome == Unknown:
			// This logical client's operation never returns: go on as
			// a new one, as Jepsen does with a crashed process.
			logical += cfg.Clients
			if r.Intn(20) == 0 {
				cfg.Log("client %d: %s on n%d unknown: %s", c, in.Kind, node.ID, note)
			}
		}
		if out.Outcome == Failed {
			sleepCtx(ctx, 50*time.Millisecond)
		}
		sleepCtx(ctx, time.Duration(r.Intn(10))*time.Millisecond)
	}
}

// finalReads reads every key with ?stale=1 on every node; they are quiet
// and caught up, so these reads are as good as linearizable ones and go
// into the history too.
func finalReads(ctx context.Context, cl *Cluster, h *History, sts []Status, keys []string) ([]Op, []NodeState) {
	kv := NewKVClient(5 * time.Second)
	var ops []Op
	var states []NodeState
	for i, n := range cl.Nodes {
		ns := NodeState{ID: n.ID, Applied: sts[i].Applied, Values: map[string]string{}}
		for _, key := range keys {
			in := Input{Kind: OpRead, Key: key}
			call := h.Now()
			out, note := kv.Do(ctx, n.HTTPAddr, in, true)
			ret := h.Now()
			if out.Outcome != Ok {
				ns.Values[key] = "<error: " + out.Outcome.String() + " " + note + ">"
				continue
			}
			ns.Values[key] = out.Value
			ops = append(ops, Op{Client: 1000000 + n.ID, Node: n.ID, Input: in, Output: out, Call: call, Return: ret, Phase: "final", Final: true})
		}
		states = append(states, ns)
	}
	return ops, states
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	i := int(p * float64(len(d)-1))
	return d[i]
}

func phaseStats(ops []Op, events []FaultEvent, total time.Duration) []PhaseStats {
	secs := map[string]float64{}
	var faulted float64
	for _, e := range events {
		s := float64(e.End-e.Start) / 1e9
		secs[string(e.Kind)] += s
		faulted += s
	}
	secs["none"] = total.Seconds() - faulted
	lat := map[string][]time.Duration{}
	stats := map[string]*PhaseStats{}
	for _, op := range ops {
		if op.Final {
			continue
		}
		ps := stats[op.Phase]
		if ps == nil {
			ps = &PhaseStats{Phase: op.Phase}
			stats[op.Phase] = ps
		}
		ps.Ops++
		if op.Output.Outcome == Ok || op.Output.Outcome == CASFailed {
			ps.OK++
			lat[op.Phase] = append(lat[op.Phase], time.Duration(op.Return-op.Call))
		}
	}
	var out []PhaseStats
	order := append([]string{"none"}, func() []string {
		var s []string
		for _, k := range reportOrder {
			s = append(s, string(k))
		}
		return s
	}()...)
	for _, p := range order {
		ps := stats[p]
		if ps == nil {
			continue
		}
		ps.Seconds = secs[p]
		if ps.Seconds > 0 {
			ps.Throughput = float64(ps.OK) / ps.Seconds
		}
		l := lat[p]
		sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
		ps.P50, ps.P99 = percentile(l, 0.50), percentile(l, 0.99)
		out = append(out, *ps)
	}
	return out
}

func writeHistory(path string, ops []Op) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, op := range ops {
		fmt.Fprintf(f, "%12.6f %12.6f client=%d n%d %-14s %s\n", float64(op.Call)/1e9, float64(op.Return)/1e9,
			op.Client, op.Node, op.Phase, KVModel.DescribeOperation(op.Input, op.Output))
	}
	return nil
}
