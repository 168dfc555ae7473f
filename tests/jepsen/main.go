// Command jepsen checks examples/kv for linearizability under crashes,
// pauses and partitions: it starts kv processes behind fault-injecting
// proxies, runs concurrent clients against them while a seeded nemesis
// injects faults, checks the history with porcupine, and checks that
// every node converges without losing an acknowledged write.
//
//	go run . -schedules 20 -minutes 5 -report ../../docs/jepsen.md
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	os.Exit(run())
}

func run() int {
	schedules := flag.Int("schedules", 1, "number of schedules (seeds) to run")
	minutes := flag.Float64("minutes", 1, "length of each schedule in minutes")
	seed := flag.Int64("seed", 0, "seed of the first schedule (0: from the clock); schedule i uses seed+i")
	nodes := flag.Int("nodes", 3, "kv nodes")
	clients := flag.Int("clients", 5, "concurrent clients")
	keys := flag.Int("keys", 4, "keys in use at a time")
	snapEntries := flag.Int("snapshot-entries", 100, "kv's --snapshot-entries (small, so that restarted nodes catch up through snapshots)")
	kvArgs := flag.String("kv-args", "", "more flags for every kv node, space-separated (e.g. \"--tick 20ms\" for more elections)")
	membership := flag.Bool("membership", false, "add membership changes to the faults: remove a node, wipe it, add it back with --join")
	stale := flag.Bool("unsafe-stale-reads", false, "pass --unsafe-stale-reads to every node (the run must then be reported non-linearizable)")
	staleCheck := flag.Bool("stale-check", false, "after the schedules, one more (at most 1 minute) with --unsafe-stale-reads, which must be reported NOT linearizable")
	expectViolation := flag.Bool("expect-violation", false, "exit 0 only if every schedule is reported NOT linearizable")
	out := flag.String("out", "", "directory for data dirs, logs, histories, visualizations (default <repo>/build/jepsen)")
	repo := flag.String("repo", "../..", "the raftlet checkout (examples/kv is built from it)")
	bin := flag.String("kv", "", "a prebuilt kv binary (default: build examples/kv)")
	report := flag.String("report", "", "write the markdown report here (e.g. ../../docs/jepsen.md)")
	label := flag.String("label", "", "label the report's figures (e.g. \"short run\")")
	flag.Parse()

	if *out == "" {
		*out = filepath.Join(*repo, "build", "jepsen")
	}
	if *seed == 0 {
		*seed = time.Now().UnixNano() % 1000000
	}
	logf := func(format string, args ...interface{}) {
		fmt.Fprintf(os.Stderr, "%s jepsen: %s\n", time.Now().UTC().Format("15:04:05.000"), fmt.Sprintf(format, args...))
	}
	if *bin == "" {
		logf("building examples/kv")
		b, err := BuildKV(*repo, *out)
		if err != nil {
			logf("%v", err)
			return 2
		}
		*bin = b
	}
	// SIGINT/SIGTERM: the children die with us (Pdeathsig), but let a
	// run tear its cluster down first where it can.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sigs
		logf("%v: stopping", s)
		stopAll()
		os.Exit(130)
	}()

	var runs []*RunResult
	failed := 0
	for i := 0; i < *schedules; i++ {
		s := *seed + int64(i)
		logf("schedule %d/%d: seed %d", i+1, *schedules, s)
		res, err := Run(RunConfig{
			Bin: *bin, Dir: filepath.Join(*out, fmt.Sprintf("seed-%d", s)), Seed: s,
			Nodes: *nodes, Clients: *clients, Keys: *keys, OpsPerKey: 150,
			Duration: time.Duration(*minutes * float64(time.Minute)), UnsafeStaleReads: *stale, SnapshotEntries: *snapEntries,
			KVArgs: strings.Fields(*kvArgs), Membership: *membership, RequestTimeout: 3 * time.Second, CheckTimeout: 2 * time.Minute, Log: logf,
		})
		if err != nil {
			logf("seed %d: run failed: %v", s, err)
			return 2
		}
		Summary(os.Stdout, res)
		runs = append(runs, res)
		bad := !res.Passed()
		if *expectViolation {
			bad = res.Verdict.Result != "Illegal"
		}
		if bad {
			failed++
		}
	}
	var staleRun *RunResult
	if *staleCheck && !*stale {
		s := *seed + int64(*schedules)
		d := time.Duration(*minutes * float64(time.Minute))
		if d > time.Minute {
			d = time.Minute
		}
		logf("stale-read check: seed %d, %v, --unsafe-stale-reads on every node", s, d)
		res, err := Run(RunConfig{
			Bin: *bin, Dir: filepath.Join(*out, fmt.Sprintf("seed-%d-stale", s)), Seed: s,
			Nodes: *nodes, Clients: *clients, Keys: *keys, OpsPerKey: 150,
			Duration: d, UnsafeStaleReads: true, SnapshotEntries: *snapEntries, KVArgs: strings.Fields(*kvArgs),
			RequestTimeout: 3 * time.Second, CheckTimeout: 2 * time.Minute, Log: logf,
		})
		if err != nil {
			logf("seed %d: run failed: %v", s, err)
			return 2
		}
		Summary(os.Stdout, res)
		staleRun = res
		if res.Verdict.Result != "Illegal" {
			logf("seed %d: the checker missed the planted stale reads", s)
			failed++
		}
	}
	if *report != "" {
		cmd := "make jepsen"
		if *schedules != 20 || *minutes != 5 {
			cmd = fmt.Sprintf("make jepsen JEPSEN_SCHEDULES=%d JEPSEN_MINUTES=%g", *schedules, *minutes)
		}
		cmd += fmt.Sprintf(" JEPSEN_SEED=%d", *seed)
		f, err := os.Create(*report)
		if err != nil {
			logf("%v", err)
			return 2
		}
		WriteReport(f, ReportConfig{Schedules: *schedules, Minutes: *minutes, Nodes: *nodes, Clients: *clients,
			Command: cmd, Label: *label, Date: time.Now().UTC().Format("2006-01-02")}, runs, staleRun)
		if err := f.Close(); err != nil {
			logf("%v", err)
			return 2
		}
		logf("report written to %s", *report)
	}
	if failed > 0 {
		what := "found a problem"
		if *expectViolation {
			what = "were NOT reported non-linearizable (the checker missed the planted bug)"
		}
		logf("%d of %d schedules %s (seeds from %d)", failed, *schedules, what, *seed)
		return 1
	}
	logf("%d schedules: %s", *schedules, strings.TrimSpace(map[bool]string{true: "every one reported non-linearizable, as expected", false: "all passed"}[*expectViolation]))
	return 0
}
