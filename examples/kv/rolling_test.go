package main

import (
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftlet/raftlet/examples/kv/internal/cluster"
)

// TestRollingRestart (issue #16, acceptance 4): a 5-node cluster survives
// a rolling restart of every node under load with no client error beyond
// a retry. Clients write and read through random nodes; an operation may
// fail once (its node is stopping or starting, a leader hands over) and
// is retried once through another node after a pause of a second; a second
// failure fails the test. Each node in turn gets SIGTERM (the leader hands
// leadership over first), restarts on its data directory and catches up
// before the next. Afterwards every acknowledged write is on every node.
func TestRollingRestart(t *testing.T) {
	c := startCluster(t, 5, "--snapshot-entries", "200")
	const clients = 6
	var (
		stop               atomic.Bool
		ops, retried, errs atomic.Int64
		mu                 sync.Mutex
		firstErr           error
		acked              = map[string]string{} // key -> last acknowledged value
		draining           atomic.Uint64         // the node being restarted: no new requests
	)
	up := func() []uint64 {
		var ids []uint64
		for _, id := range c.IDs() {
			if c.Node(id).Running() && id != draining.Load() {
				ids = append(ids, id)
			}
		}
		return ids
	}
	// try runs op through a random node, then once more through another
	// one after a pause.
	try := func(rng *rand.Rand, op func(id uint64) error) error {
		ids := up()
		first := ids[rng.Intn(len(ids))]
		err := op(first)
		if err == nil {
			return nil
		}
		retried.Add(1)
		time.Sleep(time.Second)
		for {
			ids = up()
			second := ids[rng.Intn(len(ids))]
			if second != first || len(ids) == 1 {
				if err2 := op(second); err2 != nil {
					return fmt.Errorf("through %d: %v; retried through %d: %v", first, err, second, err2)
				}
				return nil
			}
		}
	}
	var wg sync.WaitGroup
	for cl := 0; cl < clients; cl++ {
		wg.Add(1)
		go func(cl int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(cl)))
			key := fmt.Sprintf("client%d", cl)
			for i := 0; !stop.Load(); i++ {
				val := fmt.Sprint(i)
				var err error
				if i%4 == 3 {
					err = try(rng, func(id uint64) error {
						got, err := c.Get(id, key, false)
						if err != nil {
							return err
						}
						mu.Lock()
						want := acked[key]
						mu.Unlock()
						return checkOwnWrite(key, got, want)
					})
				} else {
					err = try(rng, func(id uint64) error { return c.Put(id, key, val) })
					if err == nil {
						mu.Lock()
						acked[key] = val
						mu.Unlock()
					}
				}
				ops.Add(1)
				if err != nil {
					errs.Add(1)
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		}(cl)
	}
	time.Sleep(time.Second)
	for _, id := range c.IDs() {
		before := ops.Load()
		// Drained first, as behind a load balancer: requests in flight
		// may fail (and are retried elsewhere), new ones go elsewhere.
		draining.Store(id)
		if err := c.Terminate(id, 10*time.Second); err != nil {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("SIGTERM node %d: %v", id, err)
		}
		if err := c.Start(id); err != nil {
			t.Fatal(err)
		}
		// Caught up: it applied what the leader had committed.
		var lead uint64
		ok := cluster.WaitFor(20*time.Second, func() bool {
			if lead = c.Leader(); lead == 0 {
				return false
			}
			ls, err1 := c.Status(lead)
			st, err2 := c.Status(id)
			return err1 == nil && err2 == nil && st.Applied >= ls.Commit && st.Lead == lead
		})
		if !ok {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("node %d did not catch up after its restart", id)
		}
		draining.Store(0)
		t.Logf("node %d restarted and caught up (leader %d); %d operations meanwhile", id, lead, ops.Load()-before)
	}
	time.Sleep(time.Second)
	stop.Store(true)
	wg.Wait()
	t.Logf("%d operations, %d retried once, %d failed after the retry", ops.Load(), retried.Load(), errs.Load())
	if errs.Load() > 0 {
		t.Fatalf("%d operations failed after a retry; the first: %v", errs.Load(), firstErr)
	}
	if ops.Load() < 100 {
		t.Fatalf("only %d operations: no load", ops.Load())
	}
	// Every acknowledged write on every node.
	for _, id := range c.IDs() {
		for k, v := range acked {
			ok := cluster.WaitFor(10*time.Second, func() bool {
				got, err := c.Get(id, k, true)
				return err == nil && got == v
			})
			if !ok {
				got, err := c.Get(id, k, true)
				if errors.Is(err, cluster.ErrNotFound) {
					got = "(absent)"
				}
				t.Fatalf("node %d: %s = %q, want the acknowledged %q", id, k, got, v)
			}
		}
	}
}

// checkOwnWrite is the read check of the load: a client is the only
// writer of its key, so its last acknowledged write is the latest one,
// and a linearizable read must see it.
func checkOwnWrite(key, got, want string) error {
	if got != want {
		return fmt.Errorf("read %s = %q, want %q (not linearizable)", key, got, want)
	}
	return nil
}

// TestOwnWriteCheckFires shows that the load's read check catches stale
// reads: with --unsafe-stale-reads a follower serves a plain GET from its
// own state, which lags the leader's acknowledgement until the next
// message carries the commit index.
func TestOwnWriteCheckFires(t *testing.T) {
	c := startCluster(t, 3, "--unsafe-stale-reads")
	lead := c.Leader()
	follower := lead%3 + 1
	caught := 0
	for i := 0; i < 200 && caught == 0; i++ {
		val := fmt.Sprint(i)
		if err := c.Put(lead, "k", val); err != nil {
			t.Fatal(err)
		}
		got, err := c.Get(follower, "k", false)
		if err != nil && !errors.Is(err, cluster.ErrNotFound) {
			t.Fatal(err)
		}
		if checkOwnWrite("k", got, val) != nil {
			caught++
		}
	}
	if caught == 0 {
		t.Fatal("200 writes, each read at once through a follower serving stale reads: the check never fired")
	}
}
