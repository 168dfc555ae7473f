// Package d1run holds what the D1 and D2 programs share: the payloads
// every implementation writes, and the helpers of their command lines.
package d1run

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"time"
)

// Pool returns 4,096 distinct pseudo-random payloads of size bytes, the
// same as raftlet-bench-d1's (xorshift from the same seed): compression
// gains nothing a real log would not give it.
func Pool(size int) [][]byte {
	pool := make([][]byte, 4096)
	x := uint64(0x9E3779B97F4A7C15)
	for i := range pool {
		pool[i] = make([]byte, size)
		for j := range pool[i] {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			pool[i][j] = byte(x)
		}
	}
	return pool
}

// Rounds is the number of rounds when -rounds is 0: budget entries in all,
// at least 3 rounds and at most 5,000.
func Rounds(budget, groups, batch int) int {
	r := budget / (groups * batch)
	if r < 3 {
		return 3
	}
	if r > 5000 {
		return 5000
	}
	return r
}

// Check exits with the error, prefixed with the program's name.
func Check(prog string, err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, prog+":", err)
		os.Exit(1)
	}
}

// Flags are the command-line flags both programs take.
type Flags struct {
	Groups, Batch, Size, Rounds, Budget *int
	Segment                             *int64
	Dir                                 *string
	MaxSeconds                          *float64
}

// Define declares the shared flags; groupsHelp describes -groups.
func Define(groupsHelp string) *Flags {
	return &Flags{
		Groups:     flag.Int("groups", 1, groupsHelp),
		Batch:      flag.Int("batch", 1, "entries per group per round"),
		Size:       flag.Int("size", 128, "entry payload bytes"),
		Rounds:     flag.Int("rounds", 0, "rounds (0: from -budget)"),
		Budget:     flag.Int("budget", 2000000, "entries to write when -rounds is 0"),
		Segment:    flag.Int64("segment", 64<<20, "etcd WAL segment size (preallocated per WAL)"),
		Dir:        flag.String("dir", "", "directory (a temporary one by default)"),
		MaxSeconds: flag.Float64("max-seconds", 5, "stop after this long (at least 3 rounds)"),
	}
}

// Parse parses the command line, settles -rounds, and returns the
// directory to write in with the function that removes it when it is a
// temporary one.
func (f *Flags) Parse(prog string) (dir string, cleanup func()) {
	flag.Parse()
	if *f.Rounds == 0 {
		*f.Rounds = Rounds(*f.Budget, *f.Groups, *f.Batch)
	}
	if *f.Dir != "" {
		return *f.Dir, func() {}
	}
	d, err := os.MkdirTemp("", prog)
	Check(prog, err)
	return d, func() { os.RemoveAll(d) }
}

// Time runs round(r) for r = 0, 1, ... up to rounds times, stopping early
// once maxSeconds have passed (after at least 3 rounds: 1,000 separately
// synced logs would otherwise run for minutes). It returns the rounds run,
// the seconds they took, and the median round's seconds, which a stall of
// the shared disk in a few rounds does not move.
func Time(rounds int, maxSeconds float64, round func(r int)) (done int, secs, p50 float64) {
	start := time.Now()
	times := make([]float64, 0, rounds)
	for r := 0; r < rounds; r++ {
		if done >= 3 && time.Since(start).Seconds() > maxSeconds {
			break
		}
		done++
		t := time.Now()
		round(r)
		times = append(times, time.Since(t).Seconds())
	}
	secs = time.Since(start).Seconds()
	sort.Float64s(times)
	return done, secs, times[len(times)/2]
}
