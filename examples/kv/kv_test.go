package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/raftlet/raftlet/examples/kv/internal/cluster"
)

// buildFlags are the go build flags of the kv binary the tests run (the
// in-tree tag and -race when the test binary has them).
var buildFlags []string

var kvBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kv-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	kvBin, err = cluster.Build(".", dir, buildFlags...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// startCluster starts n nodes and waits for a leader.
func startCluster(t *testing.T, n int, args ...string) *cluster.Cluster {
	t.Helper()
	c, err := cluster.New(kvBin, t.TempDir(), n, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Stop()
		if t.Failed() {
			// The events of every node's log (leaders, roles, stops,
			// restarts, snapshots, membership), the last 60 of each.
			for _, id := range c.IDs() {
				b, _ := os.ReadFile(c.Node(id).Log)
				var lines []string
				for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
					for _, w := range []string{"leader", "became", "stop", "terminated", "restarted", "snapshot", "membership", "lost"} {
						if strings.Contains(l, w) {
							lines = append(lines, l)
							break
						}
					}
				}
				if len(lines) > 60 {
					lines = lines[len(lines)-60:]
				}
				t.Logf("node %d log (events):\n%s", id, strings.Join(lines, "\n"))
			}
		}
	})
	for _, id := range c.IDs() {
		if err := c.Start(id); err != nil {
			t.Fatal(err)
		}
	}
	if c.WaitLeader(15*time.Second, 0) == 0 {
		t.Fatal("no leader within 15 s")
	}
	return c
}

// checkValues reads every key of want on node id, locally, once it has
// applied up to the leader's commit.
func caughtUp(c *cluster.Cluster, id uint64, want map[string]string) error {
	var last error
	ok := cluster.WaitFor(20*time.Second, func() bool {
		for k, v := range want {
			got, err := c.Get(id, k, true)
			if err != nil || got != v {
				last = fmt.Errorf("node %d: %s = %q (%v), want %q", id, k, got, err, v)
				return false
			}
		}
		return true
	})
	if !ok {
		return last
	}
	return nil
}

// TestClusterStory: 3 processes on loopback; writes; SIGKILL of the
// leader; a new leader; the old one restarts and catches up; a 4th node
// joins as a learner and is promoted; SIGTERM stops each cleanly.
func TestClusterStory(t *testing.T) {
	c := startCluster(t, 3, "--snapshot-entries", "10")
	want := map[string]string{}
	for i := 0; i < 25; i++ {
		k, v := fmt.Sprintf("k%02d", i), fmt.Sprintf("v%d", i)
		// Through every node in turn: followers forward to the leader.
		if err := c.Put(uint64(i%3+1), k, v); err != nil {
			t.Fatalf("put %s through %d: %v", k, i%3+1, err)
		}
		want[k] = v
	}
	for id := uint64(1); id <= 3; id++ {
		got, err := c.Get(id, "k07", false)
		if err != nil || got != "v7" {
			t.Fatalf("linearizable read on %d: %q %v", id, got, err)
		}
	}
	if _, err := c.Get(2, "absent", false); !errors.Is(err, cluster.ErrNotFound) {
		t.Fatalf("absent key: %v", err)
	}

	old := c.Leader()
	if err := c.Kill(old); err != nil {
		t.Fatal(err)
	}
	lead := c.WaitLeader(15*time.Second, old)
	if lead == 0 {
		t.Fatalf("no new leader within 15 s of killing %d", old)
	}
	for i := 25; i < 40; i++ {
		k, v := fmt.Sprintf("k%02d", i), fmt.Sprintf("v%d", i)
		if err := c.PutRetry(k, v, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		want[k] = v
	}
	if err := c.Start(old); err != nil {
		t.Fatal(err)
	}
	if err := caughtUp(c, old, want); err != nil {
		t.Fatalf("restarted node did not catch up: %v", err)
	}

	n4, err := c.AddNode(4, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(4); err != nil {
		t.Fatal(err)
	}
	if err := c.AddMember(lead, 4); err != nil {
		t.Fatalf("add member 4: %v", err)
	}
	promoted := cluster.WaitFor(30*time.Second, func() bool {
		st, err := c.Status(lead)
		return err == nil && len(st.Voters) == 4 && len(st.Learners) == 0
	})
	if !promoted {
		st, _ := c.Status(lead)
		t.Fatalf("node 4 not promoted within 30 s: %+v", st)
	}
	if err := caughtUp(c, 4, want); err != nil {
		t.Fatalf("node 4 (%s) did not catch up: %v", n4.HTTP, err)
	}
	if got, err := c.Get(4, "k30", false); err != nil || got != "v30" {
		t.Fatalf("linearizable read on node 4: %q %v", got, err)
	}
	// The log was compacted past index 1 long before node 4 was added:
	// it caught up from a snapshot, taken after it joined (the one the
	// leader held predates it, and a node refuses a snapshot whose
	// configuration lacks it).
	if b, err := os.ReadFile(n4.Log); err != nil || !strings.Contains(string(b), "restored snapshot") {
		t.Fatalf("node 4 did not restore a snapshot (%v)", err)
	}
	for _, id := range c.IDs() {
		if err := c.Terminate(id, 10*time.Second); err != nil {
			t.Fatalf("SIGTERM node %d: %v", id, err)
		}
	}
}
