package main

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftlet/raftlet/examples/kv/internal/cluster"
)

// TestWholeClusterSIGKILL: every node is SIGKILLed at once under load and
// restarted from its data directory; every acknowledged write is there.
// A client's write in flight at the kill may or may not have been
// applied: its key holds the last acknowledged value or that one.
func TestWholeClusterSIGKILL(t *testing.T) {
	c := startCluster(t, 3, "--snapshot-entries", "30")
	const clients = 4
	var stop atomic.Bool
	var mu sync.Mutex
	acked := map[string]int{}    // key -> last acknowledged value
	inflight := map[string]int{} // key -> the value being written
	var wg sync.WaitGroup
	for cl := 0; cl < clients; cl++ {
		wg.Add(1)
		go func(cl int) {
			defer wg.Done()
			key := fmt.Sprintf("c%d", cl)
			for i := 1; !stop.Load(); i++ {
				mu.Lock()
				inflight[key] = i
				mu.Unlock()
				if err := c.Put(uint64(cl%3+1), key, fmt.Sprint(i)); err != nil {
					return // the kill
				}
				mu.Lock()
				acked[key] = i
				mu.Unlock()
			}
		}(cl)
	}
	time.Sleep(2 * time.Second)
	for _, id := range c.IDs() {
		go func(id uint64) { _ = c.Kill(id) }(id)
	}
	stop.Store(true)
	wg.Wait()
	if !cluster.WaitFor(5*time.Second, func() bool {
		for _, id := range c.IDs() {
			if c.Node(id).Running() {
				return false
			}
		}
		return true
	}) {
		t.Fatal("nodes still running after SIGKILL")
	}
	mu.Lock()
	defer mu.Unlock()
	total := 0
	for _, v := range acked {
		total += v
	}
	if total < 20 {
		t.Fatalf("only %d acknowledged writes before the kill", total)
	}
	for _, id := range c.IDs() {
		if err := c.Start(id); err != nil {
			t.Fatal(err)
		}
	}
	if c.WaitLeader(15*time.Second, 0) == 0 {
		t.Fatal("no leader after restarting every node")
	}
	for _, id := range c.IDs() {
		for k, v := range acked {
			var got string
			var err error
			ok := cluster.WaitFor(10*time.Second, func() bool {
				got, err = c.Get(id, k, false)
				return err == nil || errors.Is(err, cluster.ErrNotFound)
			})
			if !ok || (got != fmt.Sprint(v) && got != fmt.Sprint(inflight[k])) {
				t.Fatalf("node %d after the crash: %s = %q (%v), want the acknowledged %d (or the in-flight %d)", id, k, got, err, v, inflight[k])
			}
		}
	}
	t.Logf("%d acknowledged writes before the kill, all there after the restart", total)
}

// TestRemoveMember: DELETE /members/{id} takes a voter out; the rest go
// on committing, and the removed node says so in its status.
func TestRemoveMember(t *testing.T) {
	c := startCluster(t, 3)
	lead := c.Leader()
	gone := lead%3 + 1
	if err := c.RemoveMember(lead, gone); err != nil {
		t.Fatalf("remove %d: %v", gone, err)
	}
	st, err := c.Status(lead)
	if err != nil || len(st.Voters) != 2 {
		t.Fatalf("after the removal: %+v %v", st, err)
	}
	var ae *cluster.APIError
	if err := c.RemoveMember(lead, gone); !errors.As(err, &ae) || ae.Code != 404 {
		t.Fatalf("removing it again: %v", err)
	}
	for _, id := range c.IDs() {
		if id == gone {
			continue
		}
		if err := c.Put(id, "k", fmt.Sprint(id)); err != nil {
			t.Fatalf("put through %d with 2 voters: %v", id, err)
		}
	}
	if !cluster.WaitFor(5*time.Second, func() bool {
		s, err := c.Status(gone)
		return err == nil && !contains(s.Voters, gone) && s.Removed
	}) {
		t.Fatalf("node %d does not see its removal", gone)
	}

	// Added back under the same id, wiped and started with --join, it is
	// a member again and no longer says it was removed.
	if err := c.Kill(gone); err != nil {
		t.Fatal(err)
	}
	n := c.Node(gone)
	if err := os.RemoveAll(n.Dir); err != nil {
		t.Fatal(err)
	}
	n.Join = true
	if err := c.Start(gone); err != nil {
		t.Fatal(err)
	}
	if err := c.AddMember(lead, gone); err != nil {
		t.Fatalf("add %d back: %v", gone, err)
	}
	if !cluster.WaitFor(15*time.Second, func() bool {
		s, err := c.Status(gone)
		return err == nil && !s.Removed && (contains(s.Voters, gone) || contains(s.Learners, gone))
	}) {
		s, err := c.Status(gone)
		t.Fatalf("node %d added back: status %+v %v", gone, s, err)
	}
}
