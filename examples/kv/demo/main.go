// Command demo tells the story of a real raftlet cluster as a timeline:
// three kv processes on loopback, writes, SIGKILL of the leader, a new
// leader, the old one restarted and caught up, a fourth node added as a
// learner and promoted, then SIGTERM for all. It exits non-zero if any
// step fails or takes too long.
//
//	go run ./demo -kv PATH   # PATH: a built kv binary (make demo builds one)
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/raftlet/raftlet/examples/kv/internal/cluster"
)

var start = time.Now()

func say(format string, args ...any) {
	fmt.Printf("[%6.2fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
}

func main() {
	bin := flag.String("kv", "", "the kv binary (built from this module when empty)")
	keep := flag.Bool("keep", false, "keep the data directories and logs")
	flag.Parse()
	root, err := os.MkdirTemp("", "kv-demo")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *bin == "" {
		if *bin, err = cluster.Build(".", root); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	c, err := cluster.New(*bin, root, 3, "--snapshot-entries", "20")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	err = story(c)
	c.Stop()
	if err != nil {
		fmt.Printf("FAILED: %v\n", err)
		for _, id := range c.IDs() {
			b, _ := os.ReadFile(c.Node(id).Log)
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			if len(lines) > 15 {
				lines = lines[len(lines)-15:]
			}
			fmt.Printf("--- node %d log (last lines)\n%s\n", id, strings.Join(lines, "\n"))
		}
	}
	if *keep {
		fmt.Printf("data and logs kept in %s\n", root)
	} else {
		os.RemoveAll(root)
	}
	if err != nil {
		os.Exit(1)
	}
}

func story(c *cluster.Cluster) error {
	var addrs []string
	for _, id := range c.IDs() {
		n := c.Node(id)
		addrs = append(addrs, fmt.Sprintf("%d: raft %s http %s", id, n.Raft, n.HTTP))
		if err := c.Start(id); err != nil {
			return err
		}
	}
	say("started 3 kv processes (%s)", strings.Join(addrs, "; "))
	lead := c.WaitLeader(15*time.Second, 0)
	if lead == 0 {
		return fmt.Errorf("no leader within 15 s")
	}
	st, _ := c.Status(lead)
	say("node %d is the leader (term %d)", lead, st.Term)

	want := map[string]string{}
	for i := 0; i < 10; i++ {
		k, v := fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i)
		if err := c.Put(uint64(i%3+1), k, v); err != nil {
			return fmt.Errorf("put %s: %v", k, err)
		}
		want[k] = v
	}
	say("wrote k0..k9 through nodes 1, 2 and 3 in turn (each 204 once committed and applied)")
	follower := lead%3 + 1
	v, err := c.Get(follower, "k5", false)
	if err != nil {
		return fmt.Errorf("read: %v", err)
	}
	say("linearizable read on follower %d (ReadIndex through the leader): k5 = %s", follower, v)

	old := lead
	if err := c.Kill(old); err != nil {
		return err
	}
	killed := time.Now()
	say("SIGKILL node %d, the leader", old)
	lead = c.WaitLeader(15*time.Second, old)
	if lead == 0 {
		return fmt.Errorf("no new leader within 15 s")
	}
	st, _ = c.Status(lead)
	say("node %d is the new leader (term %d), %.2f s after the kill", lead, st.Term, time.Since(killed).Seconds())
	for i := 10; i < 20; i++ {
		k, v := fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i)
		if err := c.PutRetry(k, v, 10*time.Second); err != nil {
			return err
		}
		want[k] = v
	}
	say("wrote k10..k19 with node %d down", old)

	if err := c.Start(old); err != nil {
		return err
	}
	say("restarted node %d on its data directory", old)
	if err := caughtUp(c, old, want); err != nil {
		return err
	}
	st, _ = c.Status(old)
	say("node %d caught up: applied index %d, all 20 keys equal (local reads), following %d", old, st.Applied, st.Lead)

	if _, err := c.AddNode(4, true); err != nil {
		return err
	}
	if err := c.Start(4); err != nil {
		return err
	}
	say("started node 4 empty with --join")
	if err := c.AddMember(lead, 4); err != nil {
		return fmt.Errorf("POST /members: %v", err)
	}
	st, _ = c.Status(lead)
	say("POST /members {\"id\":4} on node %d: voters %v, learners %v", lead, st.Voters, st.Learners)
	added := time.Now()
	if !cluster.WaitFor(30*time.Second, func() bool {
		st, err = c.Status(lead)
		return err == nil && len(st.Voters) == 4 && len(st.Learners) == 0
	}) {
		return fmt.Errorf("node 4 not promoted within 30 s")
	}
	say("the leader promoted node 4 once it caught up, %.2f s later: voters %v, learners %v", time.Since(added).Seconds(), st.Voters, st.Learners)
	if err := caughtUp(c, 4, want); err != nil {
		return err
	}
	v, err = c.Get(4, "k19", false)
	if err != nil {
		return fmt.Errorf("read on node 4: %v", err)
	}
	say("linearizable read on node 4: k19 = %s", v)

	for _, id := range c.IDs() {
		if err := c.Terminate(id, 10*time.Second); err != nil {
			return err
		}
	}
	say("SIGTERM to the 4 nodes: each exited 0")
	return nil
}

// caughtUp waits until node id's local state has every key of want.
func caughtUp(c *cluster.Cluster, id uint64, want map[string]string) error {
	var last error
	if cluster.WaitFor(20*time.Second, func() bool {
		for k, v := range want {
			got, err := c.Get(id, k, true)
			if err != nil || got != v {
				last = fmt.Errorf("node %d: %s = %q (%v), want %q", id, k, got, err, v)
				return false
			}
		}
		return true
	}) {
		return nil
	}
	return last
}
