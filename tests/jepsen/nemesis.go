package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// FaultKind names a nemesis action.
type FaultKind string

// The nemesis's faults.
const (
	FaultKill          FaultKind = "kill"           // SIGKILL a node, restart it on the same data dir
	FaultPause         FaultKind = "pause"          // SIGSTOP a node, SIGCONT it
	FaultPartition     FaultKind = "partition"      // majority/minority split, both directions
	FaultIsolateLeader FaultKind = "isolate-leader" // the leader alone on one side
	FaultOneWay        FaultKind = "one-way"        // a node's outbound links down, inbound up
	FaultDelay         FaultKind = "delay"          // latency with jitter on every link
	FaultDropLink      FaultKind = "drop-link"      // one directed link blackholed
	FaultCrashLoop     FaultKind = "crash-loop"     // a node SIGKILLed again and again, a few hundred ms after each restart
	// FaultMembership removes a node from the cluster (DELETE /members),
	// kills it, wipes its data dir, and on heal starts it empty with
	// --join and adds it back (POST /members: a learner, promoted by the
	// leader once caught up). Only with -membership.
	FaultMembership FaultKind = "membership"
)

// reportOrder lists every kind, optional ones included.
var reportOrder = []FaultKind{FaultKill, FaultCrashLoop, FaultPause, FaultPartition, FaultIsolateLeader, FaultOneWay, FaultDelay, FaultDropLink, FaultMembership}

// AllFaults lists the kinds in report order.
var AllFaults = []FaultKind{FaultKill, FaultCrashLoop, FaultPause, FaultPartition, FaultIsolateLeader, FaultOneWay, FaultDelay, FaultDropLink}

// Step is one fault of a schedule: applied, held, healed, then a quiet
// period. Target 0 means "the current leader" (resolved when applied).
type Step struct {
	Kind     FaultKind
	Target   int       // node id, 0 = leader
	Minority []int     // partition: the minority side (Target excluded)
	Link     LinkFault // partition/one-way/drop-link: cut or drop
	DelayMs  int
	Hold     time.Duration
	Quiet    time.Duration
}

func (s Step) String() string {
	t := "leader"
	if s.Target != 0 {
		t = fmt.Sprintf("n%d", s.Target)
	}
	switch s.Kind {
	case FaultPartition:
		return fmt.Sprintf("%s minority=%v (%s) hold=%v quiet=%v", s.Kind, s.Minority, s.Link, s.Hold, s.Quiet)
	case FaultDelay:
		return fmt.Sprintf("%s %dms hold=%v quiet=%v", s.Kind, s.DelayMs, s.Hold, s.Quiet)
	case FaultDropLink:
		return fmt.Sprintf("%s %s->n%d hold=%v quiet=%v", s.Kind, t, s.Minority[0], s.Hold, s.Quiet)
	case FaultIsolateLeader, FaultOneWay:
		return fmt.Sprintf("%s %s (%s) hold=%v quiet=%v", s.Kind, t, s.Link, s.Hold, s.Quiet)
	}
	return fmt.Sprintf("%s %s hold=%v quiet=%v", s.Kind, t, s.Hold, s.Quiet)
}

// Schedule draws a fault schedule from seed, long enough to cover total.
// staleBias shapes it for the stale-read variant: every other step (the
// first included) isolates the leader for 4-6 s, so a deposed leader serves local reads while the
// majority moves on.
//
// kinds are the faults to draw from (AllFaults when nil).
func Schedule(seed int64, n int, total time.Duration, staleBias bool, kinds []FaultKind) []Step {
	if kinds == nil {
		kinds = AllFaults
	}
	r := rand.New(rand.NewSource(seed))
	var steps []Step
	var t time.Duration
	ms := func(lo, hi int) time.Duration { return time.Duration(lo+r.Intn(hi-lo+1)) * time.Millisecond }
	node := func() int { return 1 + r.Intn(n) }
	target := func() int {
		if r.Intn(3) == 0 {
			return 0
		}
		return node()
	}
	mode := func() LinkFault {
		if r.Intn(2) == 0 {
			return LinkCut
		}
		return LinkDrop
	}
	var bag []FaultKind
	for t < total {
		var s Step
		// Kinds are drawn from shuffled rounds of every kind, so any
		// schedule of len(AllFaults) steps or more does every one.
		if len(bag) == 0 {
			for _, i := range r.Perm(len(kinds)) {
				bag = append(bag, kinds[i])
			}
		}
		k := bag[0]
		bag = bag[1:]
		if staleBias && len(steps)%2 == 0 {
			k = FaultIsolateLeader
		}
		s.Kind = k
		s.Hold = ms(1500, 5000)
		s.Quiet = ms(1000, 3000)
		switch k {
		case FaultKill, FaultPause, FaultMembership:
			s.Target = target()
		case FaultCrashLoop:
			s.Target = target()
			s.DelayMs = 150 + r.Intn(450) // time each incarnation lives
		case FaultPartition:
			ids := r.Perm(n)
			size := 1 + r.Intn((n-1)/2)
			for _, i := range ids[:size] {
				s.Minority = append(s.Minority, i+1)
			}
			sort.Ints(s.Minority)
			s.Link = mode()
		case FaultIsolateLeader:
			s.Link = mode()
			if staleBias {
				s.Hold = ms(4000, 6000)
			}
		case FaultOneWay:
			s.Target = target()
			s.Link = mode()
		case FaultDelay:
			s.DelayMs = 20 + r.Intn(180)
		case FaultDropLink:
			s.Target = target()
			s.Minority = []int{node()}
		}
		steps = append(steps, s)
		t += s.Hold + s.Quiet
	}
	return steps
}

// FaultEvent is one applied fault, for the report.
type FaultEvent struct {
	Kind  FaultKind
	Desc  string
	Start int64
	End   int64
}

// Nemesis applies a schedule to a cluster.
type Nemesis struct {
	C       *Cluster
	H       *History
	Log     func(format string, args ...interface{})
	mu      sync.Mutex
	phase   string
	events  []FaultEvent
	crashes []string // nodes found dead that the nemesis had not killed
	// stepTarget is the node the step being held killed or paused.
	stepTarget int
	// loopStop and loopDone run the crash loop of the step being held.
	loopStop, loopDone chan struct{}
}

// Phase is the fault active now ("none" between faults).
func (m *Nemesis) Phase() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.phase == "" {
		return "none"
	}
	return m.phase
}

func (m *Nemesis) setPhase(p string) {
	m.mu.Lock()
	m.phase = p
	m.mu.Unlock()
}

// Events are the faults applied so far.
func (m *Nemesis) Events() []FaultEvent {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]FaultEvent(nil), m.events...)
}

// Crashes are the unexpected exits seen so far.
func (m *Nemesis) Crashes() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.crashes...)
}

func (m *Nemesis) resolve(ctx context.Context, target int) int {
	if target != 0 {
		return target
	}
	if l := m.C.Leader(ctx); l != 0 {
		return l
	}
	return 1
}

func (m *Nemesis) others(id int) []int {
	var out []int
	for _, n := range m.C.Nodes {
		if n.ID != id {
			out = append(out, n.ID)
		}
	}
	return out
}

// cutBetween puts f on every link between the two sides, both ways.
func (m *Nemesis) cutBetween(a, b []int, f LinkFault) error {
	for _, i := range a {
		for _, j := range b {
			if err := m.C.Net.Set(i, j, f, 0); err != nil {
				return err
			}
			if err := m.C.Net.Set(j, i, f, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// Run applies steps until ctx is done or the steps run out, healing after
// each. It returns after healing everything.
func (m *Nemesis) Run(ctx context.Context, steps []Step) error {
	defer m.healAll()
	for _, s := range steps {
		if ctx.Err() != nil {
			return nil
		}
		desc, err := m.apply(ctx, s)
		if err != nil {
			return err
		}
		ev := FaultEvent{Kind: s.Kind, Desc: desc, Start: m.H.Now()}
		m.setPhase(string(s.Kind))
		m.Log("nemesis: %s", desc)
		sleepCtx(ctx, s.Hold)
		if err := m.heal(s); err != nil {
			return err
		}
		ev.End = m.H.Now()
		m.mu.Lock()
		m.events = append(m.events, ev)
		m.mu.Unlock()
		m.setPhase("")
		m.Log("nemesis: healed %s", s.Kind)
		sleepCtx(ctx, s.Quiet)
		m.checkAlive()
	}
	return nil
}

func (m *Nemesis) apply(ctx context.Context, s Step) (string, error) {
	switch s.Kind {
	case FaultKill:
		id := m.resolve(ctx, s.Target)
		m.stepTarget = id
		return fmt.Sprintf("kill n%d", id), m.C.Nodes[id-1].Kill()
	case FaultPause:
		id := m.resolve(ctx, s.Target)
		m.stepTarget = id
		return fmt.Sprintf("pause n%d", id), m.C.Nodes[id-1].Pause()
	case FaultMembership:
		id := m.resolve(ctx, s.Target)
		via := m.C.Nodes[id%len(m.C.Nodes)]
		if err := memberRequest(ctx, via, "DELETE", fmt.Sprintf("/members/%d", id), nil); err != nil {
			// Refused or timed out: nothing to undo, but the removal may
			// still apply, so the node is treated as removed all the same.
			m.Log("nemesis: remove n%d via n%d: %v", id, via.ID, err)
		}
		m.stepTarget = id
		n := m.C.Nodes[id-1]
		if err := n.Kill(); err != nil {
			return "", err
		}
		if err := os.RemoveAll(n.DataDir); err != nil {
			return "", err
		}
		return fmt.Sprintf("remove n%d (via n%d), kill it, wipe its data", id, via.ID), nil
	case FaultCrashLoop:
		id := m.resolve(ctx, s.Target)
		m.stepTarget = id
		n := m.C.Nodes[id-1]
		stop, done := make(chan struct{}), make(chan struct{})
		m.loopStop, m.loopDone = stop, done
		life := time.Duration(s.DelayMs) * time.Millisecond
		go func() {
			defer close(done)
			for i := 0; i < 1000; i++ {
				if err := n.Kill(); err != nil {
					m.Log("nemesis: crash loop: %v", err)
					return
				}
				if err := n.Start(m.C.Bin); err != nil {
					m.Log("nemesis: crash loop: %v", err)
					return
				}
				select {
				case <-stop:
					return
				case <-time.After(life):
				}
			}
		}()
		return fmt.Sprintf("crash loop n%d (SIGKILL every %v after restart)", id, life), nil
	case FaultPartition:
		var majority []int
		in := map[int]bool{}
		for _, id := range s.Minority {
			in[id] = true
		}
		for _, n := range m.C.Nodes {
			if !in[n.ID] {
				majority = append(majority, n.ID)
			}
		}
		return fmt.Sprintf("partition %v | %v (%s)", s.Minority, majority, s.Link), m.cutBetween(s.Minority, majority, s.Link)
	case FaultIsolateLeader:
		id := m.resolve(ctx, 0)
		return fmt.Sprintf("isolate leader n%d (%s)", id, s.Link), m.cutBetween([]int{id}, m.others(id), s.Link)
	case FaultOneWay:
		id := m.resolve(ctx, s.Target)
		for _, j := range m.others(id) {
			if err := m.C.Net.Set(id, j, s.Link, 0); err != nil {
				return "", err
			}
		}
		return fmt.Sprintf("one-way: n%d cannot send (%s)", id, s.Link), nil
	case FaultDelay:
		for _, a := range m.C.Nodes {
			for _, b := range m.others(a.ID) {
				if err := m.C.Net.Set(a.ID, b, LinkDelay, s.DelayMs); err != nil {
					return "", err
				}
			}
		}
		return fmt.Sprintf("delay %dms±%dms on every link", s.DelayMs, s.DelayMs/2), nil
	case FaultDropLink:
		from := m.resolve(ctx, s.Target)
		to := s.Minority[0]
		if to == from {
			to = from%len(m.C.Nodes) + 1
		}
		return fmt.Sprintf("drop link n%d->n%d", from, to), m.C.Net.Set(from, to, LinkDrop, 0)
	}
	return "", fmt.Errorf("unknown fault %q", s.Kind)
}

func (m *Nemesis) heal(s Step) error {
	switch s.Kind {
	case FaultMembership:
		return m.rejoin(m.C.Nodes[m.stepTarget-1])
	case FaultCrashLoop:
		close(m.loopStop)
		<-m.loopDone
		n := m.C.Nodes[m.stepTarget-1]
		if n.Running() {
			return nil
		}
		return n.Start(m.C.Bin)
	case FaultKill:
		n := m.C.Nodes[m.stepTarget-1]
		if n.Running() {
			return nil
		}
		return n.Start(m.C.Bin)
	case FaultPause:
		n := m.C.Nodes[m.stepTarget-1]
		if !n.Running() {
			return nil
		}
		return n.Resume()
	}
	return m.C.Net.HealAll()
}

// rejoin starts a wiped node empty with --join and adds it back as a
// learner through another node, retrying for up to 30 s (the cluster may
// still be electing after the removal).
func (m *Nemesis) rejoin(n *Node) error {
	if !contains(n.Args, "--join") {
		n.Args = append(n.Args, "--join")
	}
	if err := n.Start(m.C.Bin); err != nil {
		return err
	}
	body := fmt.Sprintf(`{"id": %d, "raft": %q}`, n.ID, n.RaftAddr)
	deadline := time.Now().Add(30 * time.Second)
	var err error
	for i := 0; time.Now().Before(deadline); i++ {
		via := m.C.Nodes[(n.ID+i)%len(m.C.Nodes)]
		if via == n {
			continue
		}
		err = memberRequest(context.Background(), via, "POST", "/members", []byte(body))
		// 409 is also what a refused change gets (another change still
		// pending): only "already a member" means the add is done.
		if err == nil || strings.Contains(err.Error(), "already a member") {
			return nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	m.Log("nemesis: could not add n%d back: %v", n.ID, err)
	m.mu.Lock()
	m.crashes = append(m.crashes, fmt.Sprintf("n%d could not be added back within 30 s: %v", n.ID, err))
	m.mu.Unlock()
	return nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

var memberClient = &http.Client{Timeout: 5 * time.Second}

// memberRequest sends a membership change to node via; nil on 200.
func memberRequest(ctx context.Context, via *Node, method, path string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+via.HTTPAddr+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := memberClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return nil
}

// healAll heals the network, resumes paused nodes and restarts dead ones.
func (m *Nemesis) healAll() {
	if err := m.C.Net.HealAll(); err != nil {
		m.Log("nemesis: heal network: %v", err)
	}
	for _, n := range m.C.Nodes {
		if n.Paused() {
			_ = n.Resume()
		}
	}
	m.checkAlive()
}

// checkAlive restarts a node that died on its own and records it: the
// nemesis only ever kills a node for the length of one step.
func (m *Nemesis) checkAlive() {
	for _, n := range m.C.Nodes {
		if n.Running() {
			continue
		}
		msg := fmt.Sprintf("n%d exited on its own (%v); see %s", n.ID, n.exitError(), n.LogPath)
		m.Log("nemesis: %s", msg)
		m.mu.Lock()
		m.crashes = append(m.crashes, msg)
		m.mu.Unlock()
		if err := n.Start(m.C.Bin); err != nil {
			m.Log("nemesis: restart n%d: %v", n.ID, err)
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
