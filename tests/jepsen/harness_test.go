package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// The whole harness (processes, nemesis, clients, final reads, checker)
// against fakekv, a store linearizable by construction: a run must pass,
// and the same run with its stale reads planted must be caught. This
// checks the harness without the real service, so a harness bug is not
// mistaken for a kv bug.
func TestHarnessOnFakeKV(t *testing.T) {
	if testing.Short() {
		t.Skip("two 10 s runs")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "fakekv")
	if out, err := exec.Command("go", "build", "-o", bin, "./fakekv").CombinedOutput(); err != nil {
		t.Fatalf("build fakekv: %v\n%s", err, out)
	}
	for _, stale := range []bool{false, true} {
		res, err := Run(RunConfig{
			Bin: bin, Dir: filepath.Join(dir, map[bool]string{false: "ok", true: "stale"}[stale]), Seed: 33, // pause, crash loop, partition in 10 s
			Nodes: 3, Clients: 5, Keys: 3, OpsPerKey: 150, Duration: 10 * time.Second,
			UnsafeStaleReads: stale, SnapshotEntries: 100, RequestTimeout: 3 * time.Second, CheckTimeout: time.Minute,
			Log: func(f string, a ...interface{}) { t.Logf(f, a...) },
		})
		if err != nil {
			t.Fatal(err)
		}
		var sb strings.Builder
		Summary(&sb, res)
		t.Log("\n" + sb.String())
		if stale {
			if res.Verdict.Result != porcupine.Illegal {
				t.Fatalf("fakekv with stale reads reported %s", res.Verdict.Result)
			}
			continue
		}
		if !res.Passed() {
			t.Fatalf("fakekv reported %s", verdictText(res))
		}
		if res.Faults[FaultCrashLoop] == 0 || res.Faults[FaultPause] == 0 {
			t.Fatalf("seed 33 did not crash-loop and pause: %v", res.Faults)
		}
		if res.ByOutcome[Ok] < 50 {
			t.Fatalf("only %d operations succeeded", res.ByOutcome[Ok])
		}
	}
}
