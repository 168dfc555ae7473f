// Package cluster starts and drives kv processes on loopback, for the
// tests of examples/kv and its demo: free ports, one data directory per
// node, SIGKILL and restart, an HTTP client with timeouts, and waits
// bounded in time.
package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// Build compiles the kv command (the module at moduleDir) into dir and
// returns the binary's path; extra go build flags (-tags, -race) follow.
// The caller's GOFLAGS apply too.
func Build(moduleDir, dir string, flags ...string) (string, error) {
	bin := filepath.Join(dir, "kv")
	args := append([]string{"build", "-o", bin}, flags...)
	cmd := exec.Command("go", append(args, ".")...)
	cmd.Dir = moduleDir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
}

// FreePorts returns n loopback ports free at the time of the call.
func FreePorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			l.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Node is one kv process.
type Node struct {
	ID   uint64
	Raft string // host:port of its raft listener
	HTTP string // host:port of its HTTP API
	Dir  string
	Log  string // its stderr, appended across restarts
	Join bool

	mu      sync.Mutex // guards cmd and exited (Running is called from any goroutine)
	cmd     *exec.Cmd
	exited  chan struct{}
	exitErr error // set before exited is closed
}

// proc returns the node's process and its exit channel (nil if never started).
func (n *Node) proc() (*exec.Cmd, chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd, n.exited
}

// Cluster is a set of kv processes.
type Cluster struct {
	Bin   string
	Root  string
	Args  []string // extra flags for every node (e.g. --snapshot-entries)
	mu    sync.Mutex
	Nodes map[uint64]*Node
	http  *http.Client
}

// New prepares a cluster of nodes 1..n (not started) under root.
func New(bin, root string, n int, args ...string) (*Cluster, error) {
	c := &Cluster{Bin: bin, Root: root, Args: args, Nodes: map[uint64]*Node{},
		http: &http.Client{Timeout: 5 * time.Second}}
	for i := 1; i <= n; i++ {
		if _, err := c.AddNode(uint64(i), false); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// AddNode prepares node id on fresh ports (not started).
func (c *Cluster) AddNode(id uint64, join bool) (*Node, error) {
	ports, err := FreePorts(2)
	if err != nil {
		return nil, err
	}
	n := &Node{
		ID:   id,
		Raft: fmt.Sprintf("127.0.0.1:%d", ports[0]),
		HTTP: fmt.Sprintf("127.0.0.1:%d", ports[1]),
		Dir:  filepath.Join(c.Root, fmt.Sprintf("node%d", id)),
		Log:  filepath.Join(c.Root, fmt.Sprintf("node%d.log", id)),
		Join: join,
	}
	c.mu.Lock()
	c.Nodes[id] = n
	c.mu.Unlock()
	return n, nil
}

// IDs returns the node ids in ascending order.
func (c *Cluster) IDs() []uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []uint64
	for id := range c.Nodes {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// Node returns node id.
func (c *Cluster) Node(id uint64) *Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Nodes[id]
}

// peers is the --peers flag: every node of the cluster.
func (c *Cluster) peers() string {
	var parts []string
	for _, id := range c.IDs() {
		parts = append(parts, fmt.Sprintf("%d=%s", id, c.Node(id).Raft))
	}
	return strings.Join(parts, ",")
}

// Start starts node id (again, after a kill: same data directory).
func (c *Cluster) Start(id uint64) error {
	n := c.Node(id)
	if n == nil {
		return fmt.Errorf("no node %d", id)
	}
	if n.Running() {
		return fmt.Errorf("node %d is running", id)
	}
	args := []string{"--id", fmt.Sprint(id), "--data", n.Dir, "--raft-listen", n.Raft,
		"--http", n.HTTP, "--peers", c.peers()}
	if n.Join {
		args = append(args, "--join")
	}
	args = append(args, c.Args...)
	logf, err := os.OpenFile(n.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(c.Bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group: a signal to the test runner does not reach
	// it, and Stop kills it whatever happens.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	exited := make(chan struct{})
	n.mu.Lock()
	n.cmd, n.exited = cmd, exited
	n.mu.Unlock()
	go func() {
		err := cmd.Wait()
		logf.Close()
		n.mu.Lock()
		n.exitErr = err
		n.mu.Unlock()
		close(exited)
	}()
	return nil
}

// Running reports whether the node's process runs.
func (n *Node) Running() bool {
	cmd, exited := n.proc()
	if cmd == nil {
		return false
	}
	select {
	case <-exited:
		return false
	default:
		return true
	}
}

// Kill sends SIGKILL to node id and waits for it to die.
func (c *Cluster) Kill(id uint64) error {
	n := c.Node(id)
	if n == nil || !n.Running() {
		return fmt.Errorf("node %d is not running", id)
	}
	cmd, exited := n.proc()
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	return nil
}

// Terminate sends SIGTERM to node id and waits (up to timeout) for it to
// exit; it returns the process's exit error (nil for exit status 0).
func (c *Cluster) Terminate(id uint64, timeout time.Duration) error {
	n := c.Node(id)
	if n == nil || !n.Running() {
		return fmt.Errorf("node %d is not running", id)
	}
	cmd, exited := n.proc()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.exitErr
	case <-time.After(timeout):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		return fmt.Errorf("node %d did not exit within %v of SIGTERM", id, timeout)
	}
}

// Stop kills every node still running.
func (c *Cluster) Stop() {
	for _, id := range c.IDs() {
		n := c.Node(id)
		if n.Running() {
			cmd, exited := n.proc()
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}
}

// Status is the body of GET /status.
type Status struct {
	ID       uint64   `json:"id"`
	Term     uint64   `json:"term"`
	Lead     uint64   `json:"lead"`
	State    string   `json:"state"`
	Commit   uint64   `json:"commit"`
	Applied  uint64   `json:"applied"`
	Voters   []uint64 `json:"voters"`
	Learners []uint64 `json:"learners"`
	Snapshot uint64   `json:"snapshot"`
	Keys     int      `json:"keys"`
	Removed  bool     `json:"removed"`
}

// Status asks node id for its status.
func (c *Cluster) Status(id uint64) (Status, error) {
	var st Status
	resp, err := c.http.Get("http://" + c.Node(id).HTTP + "/status")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("status: %s", resp.Status)
	}
	err = json.NewDecoder(resp.Body).Decode(&st)
	return st, err
}

// ErrNotFound is a GET of a key that is absent.
var ErrNotFound = errors.New("not found")

// APIError is a non-2xx answer.
type APIError struct {
	Code     int
	Body     string
	Definite bool
}

func (e *APIError) Error() string {
	return fmt.Sprintf("HTTP %d: %s", e.Code, strings.TrimSpace(e.Body))
}

func (c *Cluster) do(method, url string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func apiError(code int, b []byte) error {
	var e struct {
		Definite bool `json:"definite"`
	}
	_ = json.Unmarshal(b, &e)
	return &APIError{Code: code, Body: string(b), Definite: e.Definite}
}

// Put writes key=val through node id.
func (c *Cluster) Put(id uint64, key, val string) error {
	code, b, err := c.do(http.MethodPut, "http://"+c.Node(id).HTTP+"/kv/"+key, []byte(val))
	if err != nil {
		return err
	}
	if code != http.StatusNoContent {
		return apiError(code, b)
	}
	return nil
}

// Get reads key through node id (linearizable, or local when stale).
func (c *Cluster) Get(id uint64, key string, stale bool) (string, error) {
	url := "http://" + c.Node(id).HTTP + "/kv/" + key
	if stale {
		url += "?stale=1"
	}
	code, b, err := c.do(http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	switch code {
	case http.StatusOK:
		return string(b), nil
	case http.StatusNotFound:
		return "", ErrNotFound
	}
	return "", apiError(code, b)
}

// AddMember asks node via to add node id (POST /members).
func (c *Cluster) AddMember(via, id uint64) error {
	body, _ := json.Marshal(map[string]any{"id": id, "raft": c.Node(id).Raft})
	code, b, err := c.do(http.MethodPost, "http://"+c.Node(via).HTTP+"/members", body)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return apiError(code, b)
	}
	return nil
}

// Leader returns the leader every running node that answers agrees on
// (0 when they do not agree or none is known).
func (c *Cluster) Leader() uint64 {
	var lead uint64
	for _, id := range c.IDs() {
		if !c.Node(id).Running() {
			continue
		}
		st, err := c.Status(id)
		if err != nil {
			return 0
		}
		if st.Lead == 0 || (lead != 0 && st.Lead != lead) {
			return 0
		}
		lead = st.Lead
	}
	if lead != 0 && !c.Node(lead).Running() {
		return 0
	}
	return lead
}

// WaitFor polls cond every 50 ms until it holds or timeout passes.
func WaitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WaitLeader waits until the running nodes agree on a running leader,
// other than not (0: any), and returns it (0 on timeout).
func (c *Cluster) WaitLeader(timeout time.Duration, not uint64) uint64 {
	var lead uint64
	WaitFor(timeout, func() bool {
		lead = c.Leader()
		return lead != 0 && lead != not
	})
	if lead == not {
		return 0
	}
	return lead
}

// PutRetry writes through any running node, retrying (up to timeout) on
// errors that certainly changed nothing and on unknown outcomes alike (a
// put of the same value is idempotent).
func (c *Cluster) PutRetry(key, val string, timeout time.Duration) error {
	var last error
	ok := WaitFor(timeout, func() bool {
		for _, id := range c.IDs() {
			if !c.Node(id).Running() {
				continue
			}
			if last = c.Put(id, key, val); last == nil {
				return true
			}
		}
		return false
	})
	if !ok {
		return fmt.Errorf("put %s: %v", key, last)
	}
	return nil
}

// RemoveMember asks node via to remove node id (DELETE /members/{id}).
func (c *Cluster) RemoveMember(via, id uint64) error {
	code, b, err := c.do(http.MethodDelete, fmt.Sprintf("http://%s/members/%d", c.Node(via).HTTP, id), nil)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return apiError(code, b)
	}
	return nil
}
