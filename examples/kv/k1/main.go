// Command k1 is benchmark K1 (issue #16): writes per second and the
// p50/p99 latency of the kv service on loopback, 3 nodes on raftlet's
// disk storage (every Ready with entries synced before it is
// acknowledged), with 1 and 64 concurrent clients. Each client PUTs
// 100-byte values to keys of its own through the leader, one request at a
// time, over a kept-alive HTTP connection. Each round starts a fresh
// cluster; the figures are the median over the rounds with the range.
// For scale it also times one 4 KiB write + fdatasync on the same disk.
//
//	go run ./k1 -kv PATH -out ../../docs/bench-k1.md
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/raftlet/raftlet/examples/kv/internal/cluster"
)

type sample struct {
	clients  int
	writes   int
	secs     float64
	p50, p99 time.Duration
	errors   int
}

func main() {
	bin := flag.String("kv", "", "the kv binary")
	dir := flag.String("dir", "build/bench/k1", "data directories (on the disk to measure)")
	secs := flag.Float64("seconds", 10, "measured seconds per run")
	rounds := flag.Int("rounds", 3, "rounds (a fresh cluster each)")
	clientsFlag := flag.String("clients", "1,64", "client counts")
	out := flag.String("out", "", "write the markdown report here (stdout when empty)")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "k1: -kv is required")
		os.Exit(2)
	}
	var counts []int
	for _, s := range strings.Split(*clientsFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "k1: bad client count %q\n", s)
			os.Exit(2)
		}
		counts = append(counts, n)
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		fail(err)
	}
	fsync, err := fsyncLatency(*dir)
	if err != nil {
		fail(err)
	}
	fmt.Fprintf(os.Stderr, "k1: one 4 KiB write + fdatasync: median %v\n", fsync)
	results := map[int][]sample{}
	for r := 1; r <= *rounds; r++ {
		root := filepath.Join(*dir, fmt.Sprintf("round%d", r))
		os.RemoveAll(root)
		if err := os.MkdirAll(root, 0o755); err != nil {
			fail(err)
		}
		c, err := cluster.New(*bin, root, 3)
		if err != nil {
			fail(err)
		}
		for _, id := range c.IDs() {
			if err := c.Start(id); err != nil {
				c.Stop()
				fail(err)
			}
		}
		lead := c.WaitLeader(20*time.Second, 0)
		if lead == 0 {
			c.Stop()
			fail(fmt.Errorf("no leader"))
		}
		for _, n := range counts {
			run(c, lead, n, 1) // warm-up: connections, the first entries
			s := run(c, lead, n, *secs)
			fmt.Fprintf(os.Stderr, "k1: round %d, %d clients: %.0f writes/s, p50 %v, p99 %v, %d errors\n",
				r, n, float64(s.writes)/s.secs, s.p50, s.p99, s.errors)
			results[n] = append(results[n], s)
		}
		c.Stop()
		os.RemoveAll(root)
	}
	report := render(results, counts, *rounds, *secs, fsync)
	if *out == "" {
		fmt.Print(report)
		return
	}
	if err := os.WriteFile(*out, []byte(report), 0o644); err != nil {
		fail(err)
	}
	fmt.Fprintf(os.Stderr, "k1: wrote %s\n", *out)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "k1:", err)
	os.Exit(1)
}

// run makes n clients PUT through node lead for secs seconds.
func run(c *cluster.Cluster, lead uint64, n int, secs float64) sample {
	tr := &http.Transport{MaxIdleConnsPerHost: n + 4, MaxConnsPerHost: n + 4}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	base := "http://" + c.Node(lead).HTTP + "/kv/"
	val := bytes.Repeat([]byte("v"), 100)
	deadline := time.Now().Add(time.Duration(secs * float64(time.Second)))
	var mu sync.Mutex
	var lats []time.Duration
	errs := 0
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			var mine []time.Duration
			bad := 0
			for j := 0; time.Now().Before(deadline); j++ {
				req, _ := http.NewRequest(http.MethodPut, fmt.Sprintf("%sc%d-%d", base, i, j%1000), bytes.NewReader(val))
				t0 := time.Now()
				resp, err := hc.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if err != nil || resp.StatusCode != http.StatusNoContent {
					bad++
					continue
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lats = append(lats, mine...)
			errs += bad
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	sort.Slice(lats, func(a, b int) bool { return lats[a] < lats[b] })
	s := sample{clients: n, writes: len(lats), secs: elapsed, errors: errs}
	if len(lats) > 0 {
		s.p50 = lats[len(lats)*50/100]
		s.p99 = lats[min(len(lats)-1, len(lats)*99/100)]
	}
	return s
}

// fsyncLatency is the median of 200 appends of 4 KiB, each fdatasync'ed.
func fsyncLatency(dir string) (time.Duration, error) {
	f, err := os.CreateTemp(dir, "fsync")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 4096)
	var lats []time.Duration
	for i := 0; i < 200; i++ {
		t0 := time.Now()
		if _, err := f.Write(buf); err != nil {
			return 0, err
		}
		if err := syscall.Fdatasync(int(f.Fd())); err != nil {
			return 0, err
		}
		lats = append(lats, time.Since(t0))
	}
	sort.Slice(lats, func(a, b int) bool { return lats[a] < lats[b] })
	return lats[len(lats)/2], nil
}

func median(xs []float64) (med, lo, hi float64) {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2], s[0], s[len(s)-1]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func render(results map[int][]sample, counts []int, rounds int, secs float64, fsync time.Duration) string {
	var b strings.Builder
	host, _ := os.Hostname()
	fmt.Fprintf(&b, "# K1: the kv service on loopback\n\n")
	fmt.Fprintf(&b, "Generated by `scripts/bench_k1.sh` (`make bench-k1`, part of `make bench`) on %s;\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "do not edit by hand. Host %s, %d CPUs, %s/%s, %s.\n\n", host, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	b.WriteString("Three `examples/kv` processes on loopback over raftlet's disk storage:\n")
	b.WriteString("every Ready with entries or a new term or vote is synced before its\n")
	b.WriteString("answer leaves, and a PUT is answered once committed by a quorum and\n")
	b.WriteString("applied. Clients PUT 100-byte values to keys of their own through the\n")
	b.WriteString("leader, one request at a time each, over kept-alive HTTP connections.\n")
	fmt.Fprintf(&b, "%d rounds, a fresh cluster each; %.0f s measured per row after a 1 s\n", rounds, secs)
	b.WriteString("warm-up. Each cell is the median over the rounds with [min-max]. The\n")
	b.WriteString("machine is shared and loaded: absolute figures are noisy.\n\n")
	fmt.Fprintf(&b, "For scale: one 4 KiB write + fdatasync on this disk takes %.2f ms (median of 200).\n\n", ms(fsync))
	b.WriteString("| clients | writes/s | p50 latency (ms) | p99 latency (ms) | failed requests |\n")
	b.WriteString("|---:|---:|---:|---:|---:|\n")
	for _, n := range counts {
		var wps, p50, p99 []float64
		errs := 0
		for _, s := range results[n] {
			wps = append(wps, float64(s.writes)/s.secs)
			p50 = append(p50, ms(s.p50))
			p99 = append(p99, ms(s.p99))
			errs += s.errors
		}
		m, lo, hi := median(wps)
		a, alo, ahi := median(p50)
		c, clo, chi := median(p99)
		fmt.Fprintf(&b, "| %d | %.0f [%.0f-%.0f] | %.2f [%.2f-%.2f] | %.2f [%.2f-%.2f] | %d |\n", n, m, lo, hi, a, alo, ahi, c, clo, chi, errs)
	}
	b.WriteString("\nWith one client, a write costs a round of the leader's sync and a\n")
	b.WriteString("follower's sync (they overlap: the leader sends its appends before its\n")
	b.WriteString("own write is durable) plus the HTTP and TCP hops. With 64 clients the\n")
	b.WriteString("proposals that arrive during a sync go into the next Ready: one sync\n")
	b.WriteString("covers many writes.\n")
	return b.String()
}
