package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// BuildKV builds the kv binary of examples/kv (in repo) into dir, once.
// The binary links libraftlet.a from the checkout (build tag
// raftlet_intree; `make lib` builds the library).
func BuildKV(repo, dir string) (string, error) {
	bin := filepath.Join(dir, "kv")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-tags", "raftlet_intree", "-o", bin, ".")
	cmd.Dir = filepath.Join(repo, "examples", "kv")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build kv: %v\n%s", err, out)
	}
	return bin, nil
}

// freePorts reserves n distinct loopback ports (closed again before use).
//
// The ports are drawn from below the kernel's ephemeral range where there
// is room: a node or proxy gives its port up while it is down (a SIGKILL, a
// cut link) and takes it again when it comes back, and a port of the
// ephemeral range could meanwhile be handed to any socket on the machine (a
// client's outgoing connection, another test's listener), so the restart
// would fail to bind. Only an explicit bind takes a port below the range.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	low := ephemeralLow()
	r := rand.New(rand.NewSource(time.Now().UnixNano() ^ int64(os.Getpid())<<20))
	for tries := 0; len(ports) < n && low-reservedBase > 4*n && tries < 100*n; tries++ {
		port := reservedBase + r.Intn(low-reservedBase)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		ls = append(ls, l)
		ports = append(ports, port)
	}
	for len(ports) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// reservedBase is the lowest port freePorts draws.
const reservedBase = 10000

// ephemeralLow is the first port of the kernel's ephemeral range (the
// ports bind(0) and connect hand out), or reservedBase where it cannot be
// read, which leaves only the ephemeral range to draw from.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return reservedBase
	}
	var low, high int
	if _, err := fmt.Sscan(string(b), &low, &high); err != nil || low <= reservedBase {
		return reservedBase
	}
	return low
}

// Node is one kv process.
type Node struct {
	ID       int
	DataDir  string
	RaftAddr string // where the node listens for peers
	HTTPAddr string
	Args     []string
	LogPath  string

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	paused  bool
	exitErr error
	starts  int
	pids    []int // every process this node ran
}

// Cluster is N kv processes joined by a proxied network.
type Cluster struct {
	Bin   string
	Dir   string
	Nodes []*Node
	Net   *Net
}

// ClusterConfig shapes a cluster.
type ClusterConfig struct {
	N                int
	Dir              string // data dirs and logs go below
	UnsafeStaleReads bool
	SnapshotEntries  int
	ExtraArgs        []string
}

// NewCluster lays out the ports, data dirs and proxies of a cluster; the
// processes start with Start.
func NewCluster(bin string, cfg ClusterConfig) (*Cluster, error) {
	n := cfg.N
	ports, err := freePorts(2*n + n*(n-1))
	if err != nil {
		return nil, err
	}
	c := &Cluster{Bin: bin, Dir: cfg.Dir, Net: NewNet()}
	for i := 1; i <= n; i++ {
		c.Nodes = append(c.Nodes, &Node{
			ID:       i,
			DataDir:  filepath.Join(cfg.Dir, fmt.Sprintf("n%d", i)),
			RaftAddr: fmt.Sprintf("127.0.0.1:%d", ports[2*(i-1)]),
			HTTPAddr: fmt.Sprintf("127.0.0.1:%d", ports[2*(i-1)+1]),
			LogPath:  filepath.Join(cfg.Dir, fmt.Sprintf("n%d.log", i)),
		})
	}
	next := 2 * n
	for _, from := range c.Nodes {
		var peers []string
		for _, to := range c.Nodes {
			if to.ID == from.ID {
				peers = append(peers, fmt.Sprintf("%d=%s", to.ID, to.RaftAddr))
				continue
			}
			listen := fmt.Sprintf("127.0.0.1:%d", ports[next])
			next++
			if err := c.Net.AddLink(from.ID, to.ID, listen, to.RaftAddr); err != nil {
				c.Net.Close()
				return nil, err
			}
			peers = append(peers, fmt.Sprintf("%d=%s", to.ID, listen))
		}
		from.Args = []string{
			"--id", fmt.Sprint(from.ID),
			"--data", from.DataDir,
			"--raft-listen", from.RaftAddr,
			"--http", from.HTTPAddr,
			"--peers", strings.Join(peers, ","),
		}
		if cfg.SnapshotEntries > 0 {
			from.Args = append(from.Args, "--snapshot-entries", fmt.Sprint(cfg.SnapshotEntries))
		}
		if cfg.UnsafeStaleReads {
			from.Args = append(from.Args, "--unsafe-stale-reads")
		}
		from.Args = append(from.Args, cfg.ExtraArgs...)
	}
	register(c)
	return c, nil
}

// Start starts every node.
func (c *Cluster) Start() error {
	for _, n := range c.Nodes {
		if err := n.Start(c.Bin); err != nil {
			return err
		}
	}
	return nil
}

// Start starts the node's process (same data dir on a restart) in a
// process group of its own, killed with the harness if it dies.
func (n *Node) Start(bin string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		return fmt.Errorf("n%d already running", n.ID)
	}
	if err := os.MkdirAll(filepath.Dir(n.LogPath), 0o755); err != nil {
		return err
	}
	logf, err := os.OpenFile(n.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	n.starts++
	fmt.Fprintf(logf, "=== harness: start #%d of n%d at %s\n", n.starts, n.ID, time.Now().UTC().Format(time.RFC3339Nano))
	cmd := exec.Command(bin, n.Args...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start n%d: %w", n.ID, err)
	}
	done := make(chan struct{})
	n.cmd, n.done, n.paused = cmd, done, false
	n.pids = append(n.pids, cmd.Process.Pid)
	go func() {
		err := cmd.Wait()
		logf.Close()
		n.mu.Lock()
		n.exitErr = err
		if n.cmd == cmd {
			n.cmd = nil
		}
		n.mu.Unlock()
		close(done)
	}()
	return nil
}

// signal sends sig to the node's process group.
func (n *Node) signal(sig syscall.Signal) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return fmt.Errorf("n%d not running", n.ID)
	}
	switch sig {
	case syscall.SIGSTOP:
		n.paused = true
	case syscall.SIGCONT:
		n.paused = false
	}
	return syscall.Kill(-n.cmd.Process.Pid, sig)
}

// Kill SIGKILLs the node and waits for it to be gone.
func (n *Node) Kill() error {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("n%d did not die after SIGKILL", n.ID)
	}
}

// Terminate SIGTERMs the node (SIGCONT first if paused) and waits up to
// timeout for a clean exit; then SIGKILLs it. Reports an unclean exit.
func (n *Node) Terminate(timeout time.Duration) error {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.mu.Unlock()
	if cmd == nil {
		return nil
	}
	pid := cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGCONT)
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-done:
		n.mu.Lock()
		err := n.exitErr
		n.mu.Unlock()
		if err != nil {
			return fmt.Errorf("n%d exited on SIGTERM with %v", n.ID, err)
		}
		return nil
	case <-time.After(timeout):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-done
		return fmt.Errorf("n%d did not stop within %v of SIGTERM", n.ID, timeout)
	}
}

// Pause SIGSTOPs the node; Resume SIGCONTs it.
func (n *Node) Pause() error { return n.signal(syscall.SIGSTOP) }

// Resume continues a paused node.
func (n *Node) Resume() error { return n.signal(syscall.SIGCONT) }

// Running reports whether the process is alive (paused counts).
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd != nil
}

// Paused reports whether the node is stopped by SIGSTOP.
func (n *Node) Paused() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd != nil && n.paused
}

// exitError is how the node's last process exited (nil while running or
// after a clean exit).
func (n *Node) exitError() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.exitErr
}

// Shutdown stops every node (SIGTERM, then SIGKILL) and every proxy. Safe
// to call more than once and on every exit path.
func (c *Cluster) Shutdown() []error {
	var errs []error
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, n := range c.Nodes {
		wg.Add(1)
		go func(n *Node) {
			defer wg.Done()
			if err := n.Terminate(10 * time.Second); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}(n)
	}
	wg.Wait()
	c.Net.Close()
	unregister(c)
	if left := c.Leftovers(); len(left) > 0 {
		errs = append(errs, fmt.Errorf("processes left running: %v", left))
	}
	return errs
}

// Leftovers are the process groups of this cluster's nodes with a
// process still alive (every one should be gone after Shutdown).
func (c *Cluster) Leftovers() []int {
	var left []int
	for _, n := range c.Nodes {
		n.mu.Lock()
		for _, pid := range n.pids {
			// The group id is the leader's pid (Setpgid): signal 0 to
			// the group finds any process of it, children included.
			if err := syscall.Kill(-pid, 0); err == nil {
				left = append(left, pid)
			}
		}
		n.mu.Unlock()
	}
	return left
}

// KillAll SIGKILLs every node (the emergency exit path).
func (c *Cluster) KillAll() {
	for _, n := range c.Nodes {
		_ = n.Kill()
	}
	c.Net.Close()
	unregister(c)
}

// Status is GET /status.
type Status struct {
	ID       int      `json:"id"`
	Term     uint64   `json:"term"`
	Lead     int      `json:"lead"`
	State    string   `json:"state"`
	Commit   uint64   `json:"commit"`
	Applied  uint64   `json:"applied"`
	Voters   []uint64 `json:"voters"`
	Learners []uint64 `json:"learners"`
}

var statusClient = &http.Client{Timeout: time.Second}

// Status asks one node for its status.
func (n *Node) Status(ctx context.Context) (Status, error) {
	var st Status
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+n.HTTPAddr+"/status", nil)
	if err != nil {
		return st, err
	}
	resp, err := statusClient.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("status %d", resp.StatusCode)
	}
	err = json.NewDecoder(resp.Body).Decode(&st)
	return st, err
}

// Leader is the node a majority of reachable nodes name as leader, and
// which says it is leader itself; 0 if none.
func (c *Cluster) Leader(ctx context.Context) int {
	votes := map[int]int{}
	for _, n := range c.Nodes {
		if n.Paused() || !n.Running() {
			continue
		}
		st, err := n.Status(ctx)
		if err == nil && st.Lead != 0 {
			votes[st.Lead]++
		}
	}
	best, bestVotes := 0, 0
	for id, v := range votes {
		if v > bestVotes || (v == bestVotes && id < best) {
			best, bestVotes = id, v
		}
	}
	return best
}

// WaitLeader waits until some node is leader and every running node
// agrees on it.
func (c *Cluster) WaitLeader(ctx context.Context, timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		leads := map[int]bool{}
		ok := true
		for _, n := range c.Nodes {
			st, err := n.Status(ctx)
			if err != nil || st.Lead == 0 {
				ok = false
				break
			}
			leads[st.Lead] = true
		}
		if ok && len(leads) == 1 {
			for l := range leads {
				return l, nil
			}
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return 0, errors.New("no agreed leader within " + timeout.String())
}

// WaitConverged waits until every node reports the same commit and
// applied index, stable over two polls, with applied == commit.
func (c *Cluster) WaitConverged(ctx context.Context, timeout time.Duration) ([]Status, error) {
	deadline := time.Now().Add(timeout)
	var last []Status
	stable := 0
	for time.Now().Before(deadline) {
		var sts []Status
		for _, n := range c.Nodes {
			st, err := n.Status(ctx)
			if err != nil {
				sts = nil
				break
			}
			sts = append(sts, st)
		}
		same := len(sts) == len(c.Nodes)
		for _, st := range sts {
			if st.Applied != sts[0].Applied || st.Commit != sts[0].Commit || st.Applied != st.Commit || st.Lead == 0 {
				same = false
			}
		}
		if same && last != nil && last[0].Applied == sts[0].Applied {
			stable++
			if stable >= 2 {
				return sts, nil
			}
		} else {
			stable = 0
		}
		last = nil
		if same {
			last = sts
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	var desc []string
	for _, n := range c.Nodes {
		st, err := n.Status(ctx)
		desc = append(desc, fmt.Sprintf("n%d: %+v %v", n.ID, st, err))
	}
	sort.Strings(desc)
	return nil, fmt.Errorf("nodes did not converge within %v: %s", timeout, strings.Join(desc, "; "))
}

// live is every cluster not yet torn down, for the signal handler.
var live = struct {
	sync.Mutex
	m map[*Cluster]bool
}{m: map[*Cluster]bool{}}

func register(c *Cluster) {
	live.Lock()
	live.m[c] = true
	live.Unlock()
}

func unregister(c *Cluster) {
	live.Lock()
	delete(live.m, c)
	live.Unlock()
}

// stopAll SIGKILLs every live cluster (on SIGINT/SIGTERM of the harness).
func stopAll() {
	live.Lock()
	cs := make([]*Cluster, 0, len(live.m))
	for c := range live.m {
		cs = append(cs, c)
	}
	live.Unlock()
	for _, c := range cs {
		c.KillAll()
	}
}
