package interop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	raftlet "github.com/raftlet/raftlet/bindings/go"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// applied is one entry as a state machine applied it.
type applied struct {
	Index uint64
	Term  uint64
	Type  raftpb.EntryType
	Data  string
}

// host is a node and what its host keeps: the state machine (every
// applied entry) and the configuration.
type host struct {
	id           uint64
	n            impl
	state        []applied
	appliedIndex uint64
	cs           raftpb.ConfState
	snapshots    int // snapshots installed
}

// envelope is a message in flight, as bytes.
type envelope struct {
	from, to uint64
	typ      raftpb.MessageType
	data     []byte
	due      int
}

// cluster runs raftlet and etcd nodes in one process. Messages cross as
// raftpb bytes through a network that can drop, duplicate, delay,
// reorder and partition. Safety is checked after every step.
type cluster struct {
	t    testing.TB
	rng  *rand.Rand
	seed int64

	hosts map[uint64]*host
	ids   []uint64 // sorted

	net       []envelope
	now       int
	dropRate  float64
	dupRate   float64
	maxDelay  int
	cut       map[[2]uint64]bool // directed links that drop everything
	delivered int

	// Safety bookkeeping.
	leaders    map[uint64]uint64                  // term -> the leader of that term
	committed  map[uint64]applied                 // index -> the entry committed there
	reads      map[string]uint64                  // read ctx -> the least index its answer may carry
	onSend     func(m raftpb.Message, raw []byte) // observes every message sent
	readsDone  int
	rawChecked int // raftlet-encoded messages checked against raftpb
	trace      []string
}

func newCluster(t testing.TB, seed int64) *cluster {
	return &cluster{
		t: t, rng: rand.New(rand.NewSource(seed)), seed: seed,
		hosts: map[uint64]*host{}, cut: map[[2]uint64]bool{},
		leaders: map[uint64]uint64{}, committed: map[uint64]applied{}, reads: map[string]uint64{},
	}
}

// start adds node id of kind k; peers bootstraps it (nil: it joins with
// an empty log and learns its configuration from the leader, as etcd
// documents for new members).
func (c *cluster) start(id uint64, k kind, o nodeOptions, peers []uint64) *host {
	c.t.Helper()
	var n impl
	var err error
	if o.seed == 0 {
		o.seed = uint64(c.seed)*31 + id
	}
	if k == kindRaftlet {
		n, err = newRaftletNode(id, o, peers)
	} else {
		n, err = newEtcdNode(id, o, peers)
	}
	if err != nil {
		c.t.Fatalf("start %s node %d: %v", k, id, err)
	}
	h := &host{id: id, n: n}
	if peers != nil {
		h.cs = raftpb.ConfState{Voters: append([]uint64(nil), peers...)}
	}
	c.hosts[id] = h
	c.ids = append(c.ids, id)
	sort.Slice(c.ids, func(i, j int) bool { return c.ids[i] < c.ids[j] })
	c.tracef("start %s node %d (peers %v)", k, id, peers)
	return h
}

func (c *cluster) close() {
	for _, h := range c.hosts {
		h.n.Close()
	}
}

func (c *cluster) tracef(format string, args ...any) {
	const keep = 60
	if len(c.trace) >= keep {
		c.trace = c.trace[1:]
	}
	c.trace = append(c.trace, fmt.Sprintf("[%d] ", c.now)+fmt.Sprintf(format, args...))
}

// fail reports a safety violation with the seed and the recent events.
func (c *cluster) fail(format string, args ...any) {
	c.t.Helper()
	c.t.Fatalf("seed %d: SAFETY VIOLATION: %s\nrecent events:\n  %s", c.seed,
		fmt.Sprintf(format, args...), strings.Join(c.trace, "\n  "))
}

func (c *cluster) kinds() string {
	var parts []string
	for _, id := range c.ids {
		parts = append(parts, fmt.Sprintf("%d:%s", id, c.hosts[id].n.Kind()))
	}
	return strings.Join(parts, " ")
}

// send puts m on the network, or drops it. A raftlet node's message
// travels as the bytes raftlet wrote (raw), which must be exactly what
// etcd's raftpb writes for the same message.
func (c *cluster) send(from uint64, m raftpb.Message, raw []byte) {
	b, err := m.Marshal()
	if err != nil {
		c.fail("marshal %v: %v", m.Type, err)
	}
	if c.onSend != nil {
		c.onSend(m, raw)
	}
	if raw != nil {
		if !bytes.Equal(raw, b) {
			c.fail("node %d encoded %v as %x; raftpb encodes it as %x", from, m.Type, raw, b)
		}
		b = raw
		c.rawChecked++
	}
	if c.cut[[2]uint64{from, m.To}] {
		c.dropped(from, m, true)
		return
	}
	if c.dropRate > 0 && c.rng.Float64() < c.dropRate {
		c.dropped(from, m, false)
		return
	}
	copies := 1
	if c.dupRate > 0 && c.rng.Float64() < c.dupRate {
		copies = 2
	}
	for i := 0; i < copies; i++ {
		due := c.now
		if c.maxDelay > 0 {
			due += c.rng.Intn(c.maxDelay + 1)
		}
		c.net = append(c.net, envelope{from: from, to: m.To, typ: m.Type, data: b, due: due})
	}
}

// dropped tells the sender what its transport would: a snapshot failed,
// and (for a cut link) the peer is unreachable.
func (c *cluster) dropped(from uint64, m raftpb.Message, unreachable bool) {
	h := c.hosts[from]
	if m.Type == raftpb.MsgSnap {
		h.n.ReportSnapshot(m.To, false)
	}
	if unreachable && (m.Type == raftpb.MsgApp || m.Type == raftpb.MsgSnap) {
		h.n.ReportUnreachable(m.To)
	}
}

// deliver steps every message that is due, in random order.
func (c *cluster) deliver() bool {
	var due, later []envelope
	for _, e := range c.net {
		if e.due <= c.now {
			due = append(due, e)
		} else {
			later = append(later, e)
		}
	}
	c.net = later
	if len(due) > 1 && c.maxDelay > 0 {
		c.rng.Shuffle(len(due), func(i, j int) { due[i], due[j] = due[j], due[i] })
	}
	for _, e := range due {
		to, ok := c.hosts[e.to]
		if !ok || c.cut[[2]uint64{e.from, e.to}] {
			if from := c.hosts[e.from]; from != nil && e.typ == raftpb.MsgSnap {
				from.n.ReportSnapshot(e.to, false)
			}
			continue
		}
		err := to.n.StepBytes(e.data)
		c.delivered++
		if err != nil && !errors.Is(err, raftlet.ErrStepPeerNotFound) && !errors.Is(err, raft.ErrStepPeerNotFound) &&
			!errors.Is(err, raftlet.ErrProposalDropped) && !errors.Is(err, raft.ErrProposalDropped) {
			c.fail("node %d (%s) refused %v from %d: %v", e.to, to.n.Kind(), e.typ, e.from, err)
		}
		if e.typ == raftpb.MsgSnap {
			if from := c.hosts[e.from]; from != nil {
				from.n.ReportSnapshot(e.to, true)
			}
		}
	}
	return len(due) > 0
}

// encodeState is the snapshot data: the whole state machine.
func encodeState(s []applied) []byte {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return b
}

// handle runs one Ready of h, checking what it applies.
func (c *cluster) handle(h *host) bool {
	if !h.n.HasReady() {
		return false
	}
	rd := h.n.Ready()
	if err := h.n.Persist(rd); err != nil {
		c.fail("node %d (%s): persist: %v", h.id, h.n.Kind(), err)
	}
	if !raft.IsEmptySnap(rd.snapshot) {
		c.restore(h, rd.snapshot)
	}
	for i, m := range rd.messages {
		var raw []byte
		if rd.encoded != nil {
			raw = rd.encoded[i]
		}
		if m.Type == raftpb.MsgSnap && m.Snapshot != nil && !inConf(m.Snapshot.Metadata.ConfState, m.To) {
			// The snapshot predates the peer's joining: a recipient
			// throws such a snapshot away (etcd and raftlet alike), so
			// the host takes a newer one and lets the leader retry.
			h.n.ReportSnapshot(m.To, false)
			c.snapshot(h.id, 5)
			continue
		}
		c.send(h.id, m, raw)
	}
	for _, e := range rd.committedEntries {
		c.apply(h, e)
	}
	for _, rs := range rd.readStates {
		c.checkRead(h.id, rs.Index, string(rs.RequestCtx))
	}
	h.n.Advance(rd)
	if rd.softState {
		b := h.n.Basic()
		if b.Leader {
			c.tracef("node %d (%s) leads term %d", h.id, h.n.Kind(), b.Term)
		}
	}
	return true
}

// inConf reports whether id is a member of cs.
func inConf(cs raftpb.ConfState, id uint64) bool {
	for _, set := range [][]uint64{cs.Voters, cs.Learners, cs.VotersOutgoing} {
		for _, v := range set {
			if v == id {
				return true
			}
		}
	}
	return false
}

// checkRead checks a read's answer: its index is at least that of every
// entry applied anywhere before the read was issued.
func (c *cluster) checkRead(id, index uint64, ctx string) {
	min, ok := c.reads[ctx]
	if !ok {
		c.fail("node %d got an answer to an unknown read %q", id, ctx)
	}
	if index < min {
		c.fail("node %d: read %q answered at index %d, below %d applied before it was issued", id, ctx, index, min)
	}
	c.readsDone++
}

// restore installs a snapshot into h's state machine.
func (c *cluster) restore(h *host, snap raftpb.Snapshot) {
	var s []applied
	if err := json.Unmarshal(snap.Data, &s); err != nil {
		c.fail("node %d: snapshot data: %v", h.id, err)
	}
	if snap.Metadata.Index < h.appliedIndex {
		c.fail("node %d: snapshot at %d behind applied %d", h.id, snap.Metadata.Index, h.appliedIndex)
	}
	if len(s) > 0 && s[len(s)-1].Index != snap.Metadata.Index {
		c.fail("node %d: snapshot at %d holds state up to %d", h.id, snap.Metadata.Index, s[len(s)-1].Index)
	}
	for _, a := range s {
		c.checkCommitted(h, a)
	}
	// What h applied must be a prefix of the snapshot's state.
	for i, a := range h.state {
		if i >= len(s) || s[i] != a {
			c.fail("node %d: applied %+v is not in the snapshot's state", h.id, a)
		}
	}
	h.state = s
	h.appliedIndex = snap.Metadata.Index
	h.cs = snap.Metadata.ConfState
	h.snapshots++
	c.tracef("node %d (%s) installed a snapshot at %d", h.id, h.n.Kind(), snap.Metadata.Index)
}

// checkCommitted checks a committed entry against every other node's.
func (c *cluster) checkCommitted(h *host, a applied) {
	if prev, ok := c.committed[a.Index]; ok {
		if prev != a {
			c.fail("node %d (%s) committed %+v at %d where %+v was committed", h.id, h.n.Kind(), a, a.Index, prev)
		}
		return
	}
	c.committed[a.Index] = a
}

func (c *cluster) apply(h *host, e raftpb.Entry) {
	if e.Index != h.appliedIndex+1 {
		c.fail("node %d (%s) applied index %d after %d", h.id, h.n.Kind(), e.Index, h.appliedIndex)
	}
	a := applied{Index: e.Index, Term: e.Term, Type: e.Type, Data: string(e.Data)}
	c.checkCommitted(h, a)
	h.state = append(h.state, a)
	h.appliedIndex = e.Index
	switch e.Type {
	case raftpb.EntryConfChange:
		var cc raftpb.ConfChange
		if err := cc.Unmarshal(e.Data); err != nil {
			c.fail("node %d: conf change: %v", h.id, err)
		}
		h.cs = *h.n.ApplyConfChange(cc)
		c.tracef("node %d (%s) applied %v %d at %d", h.id, h.n.Kind(), cc.Type, cc.NodeID, e.Index)
	case raftpb.EntryConfChangeV2:
		var cc raftpb.ConfChangeV2
		if err := cc.Unmarshal(e.Data); err != nil {
			c.fail("node %d: conf change: %v", h.id, err)
		}
		h.cs = *h.n.ApplyConfChange(cc)
	}
}

// checkLeaders records every leader and checks there is one per term.
func (c *cluster) checkLeaders() {
	for _, id := range c.ids {
		if b := c.hosts[id].n.Basic(); b.Leader {
			c.recordLeader(b.Term, id)
		}
	}
}

func (c *cluster) recordLeader(term, id uint64) {
	if prev, ok := c.leaders[term]; ok && prev != id {
		c.fail("two leaders in term %d: %d and %d", term, prev, id)
	}
	c.leaders[term] = id
}

// step runs one step: an optional tick, then deliveries and Readies.
func (c *cluster) step(tick bool) {
	c.now++
	if tick {
		for _, id := range c.ids {
			c.hosts[id].n.Tick()
		}
	}
	c.deliver()
	for _, id := range c.ids {
		for i := 0; i < 4 && c.handle(c.hosts[id]); i++ {
		}
	}
	c.checkLeaders()
}

// settle delivers and handles until nothing moves (no ticks).
func (c *cluster) settle() {
	for i := 0; i < 1000; i++ {
		c.now++
		moved := c.deliver()
		for _, id := range c.ids {
			if c.handle(c.hosts[id]) {
				moved = true
			}
		}
		c.checkLeaders()
		if !moved && len(c.net) == 0 {
			return
		}
	}
	c.t.Fatalf("seed %d: the cluster did not settle", c.seed)
}

// ticks runs n ticks, settling after each.
func (c *cluster) ticks(n int) {
	for i := 0; i < n; i++ {
		c.step(true)
		c.settle()
	}
}

// leader returns the leader with the highest term (0 if none).
func (c *cluster) leader() uint64 {
	var best, term uint64
	for _, id := range c.ids {
		b := c.hosts[id].n.Basic()
		if b.Leader && b.Term >= term {
			best, term = id, b.Term
		}
	}
	return best
}

// maxApplied is the highest index any node applied.
func (c *cluster) maxApplied() uint64 {
	var m uint64
	for _, h := range c.hosts {
		if h.appliedIndex > m {
			m = h.appliedIndex
		}
	}
	return m
}

// readIndex issues a read on id, recording the least index its answer may carry.
func (c *cluster) readIndex(id uint64, ctx string) {
	c.reads[ctx] = c.maxApplied()
	c.hosts[id].n.ReadIndex([]byte(ctx))
}

// snapshot makes id's host snapshot its state machine at its applied
// index and compact the log up to there, keeping `keep` entries.
func (c *cluster) snapshot(id uint64, keep uint64) bool {
	h := c.hosts[id]
	if h.appliedIndex == 0 {
		return false
	}
	cs := h.cs
	if err := h.n.CreateSnapshot(h.appliedIndex, &cs, encodeState(h.state)); err != nil {
		if errors.Is(err, raftlet.ErrSnapOutOfDate) || errors.Is(err, raft.ErrSnapOutOfDate) {
			return false
		}
		c.fail("node %d (%s): CreateSnapshot(%d): %v", id, h.n.Kind(), h.appliedIndex, err)
	}
	if h.appliedIndex > keep {
		at := h.appliedIndex - keep
		if at >= h.n.FirstIndex() {
			if err := h.n.Compact(at); err != nil {
				c.fail("node %d (%s): Compact(%d): %v", id, h.n.Kind(), at, err)
			}
		}
	}
	c.tracef("node %d (%s) snapshot at %d, log from %d", id, h.n.Kind(), h.appliedIndex, h.n.FirstIndex())
	return true
}

// isolate cuts every link to and from id.
func (c *cluster) isolate(id uint64) {
	for _, o := range c.ids {
		if o != id {
			c.cut[[2]uint64{id, o}] = true
			c.cut[[2]uint64{o, id}] = true
		}
	}
	c.tracef("isolate %d", id)
}

// heal removes every partition and fault.
func (c *cluster) heal() {
	c.cut = map[[2]uint64]bool{}
	c.dropRate, c.dupRate, c.maxDelay = 0, 0, 0
	c.tracef("heal")
}

// checkConverged checks that every node applied the same entries.
func (c *cluster) checkConverged() {
	c.t.Helper()
	ref := c.hosts[c.ids[0]]
	for _, id := range c.ids[1:] {
		h := c.hosts[id]
		if h.appliedIndex != ref.appliedIndex || len(h.state) != len(ref.state) {
			c.fail("node %d applied up to %d (%d entries), node %d up to %d (%d entries)",
				id, h.appliedIndex, len(h.state), ref.id, ref.appliedIndex, len(ref.state))
		}
		for i := range h.state {
			if h.state[i] != ref.state[i] {
				c.fail("node %d and %d differ at %d: %+v vs %+v", id, ref.id, i, h.state[i], ref.state[i])
			}
		}
	}
}

// appliedData lists the normal entries with data that h applied.
func (h *host) appliedData() []string {
	var out []string
	for _, a := range h.state {
		if a.Type == raftpb.EntryNormal && a.Data != "" {
			out = append(out, a.Data)
		}
	}
	return out
}
