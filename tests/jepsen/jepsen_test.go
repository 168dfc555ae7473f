package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// The bounded run of make test (Acceptance 2): 3 nodes, 5 clients, kills,
// pauses and partitions, about 60 s; then the same with stale reads
// planted, which must be reported non-linearizable, about 40 s. Needs
// libraftlet.a (make lib) to build examples/kv; skipped under -short.
// JEPSEN_SEED picks the seed (default: a fixed one, so a failure is
// replayable); the seed is printed either way.

func envSeed(t *testing.T, def int64) int64 {
	if s := os.Getenv("JEPSEN_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("JEPSEN_SEED: %v", err)
		}
		return v
	}
	return def
}

func boundedRun(t *testing.T, seed int64, stale bool, d time.Duration) *RunResult {
	t.Helper()
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(repo, "build", "jepsen", "test")
	bin, err := BuildKV(repo, out)
	if err != nil {
		t.Fatal(err)
	}
	name := "linearizable"
	if stale {
		name = "stale"
	}
	t.Logf("seed %d (replay: JEPSEN_SEED=%d)", seed, seed)
	res, err := Run(RunConfig{
		Bin: bin, Dir: filepath.Join(out, name), Seed: seed,
		Nodes: 3, Clients: 5, Keys: 4, OpsPerKey: 150, Duration: d,
		UnsafeStaleReads: stale, SnapshotEntries: 100, RequestTimeout: 3 * time.Second, CheckTimeout: time.Minute,
		Log: func(f string, a ...interface{}) { t.Logf(f, a...) },
	})
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	var sb strings.Builder
	Summary(&sb, res)
	t.Log("\n" + sb.String())
	return res
}

func TestBoundedLinearizable(t *testing.T) {
	if testing.Short() {
		t.Skip("a 60 s run against real kv processes")
	}
	seed := envSeed(t, 16001)
	res := boundedRun(t, seed, false, 60*time.Second)
	for _, k := range []FaultKind{FaultKill, FaultCrashLoop, FaultPause} {
		if res.Faults[k] == 0 {
			t.Errorf("seed %d: the schedule did no %s", seed, k)
		}
	}
	if res.Faults[FaultPartition]+res.Faults[FaultIsolateLeader]+res.Faults[FaultOneWay]+res.Faults[FaultDropLink] == 0 {
		t.Errorf("seed %d: the schedule did no partition", seed)
	}
	if res.ByOutcome[Ok] < 100 {
		t.Errorf("seed %d: only %d operations succeeded", seed, res.ByOutcome[Ok])
	}
	if !res.Passed() {
		t.Fatalf("seed %d: %s (history and logs in %s)", seed, verdictText(res), res.Dir)
	}
}

func TestBoundedStaleReadsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("a 40 s run against real kv processes")
	}
	seed := envSeed(t, 16002)
	res := boundedRun(t, seed, true, 40*time.Second)
	if res.Verdict.Result != porcupine.Illegal {
		t.Fatalf("seed %d: with --unsafe-stale-reads the checker said %s, want NOT linearizable", seed, res.Verdict.Result)
	}
	if res.Verdict.Viz == "" {
		t.Fatalf("seed %d: no visualization written", seed)
	}
}
