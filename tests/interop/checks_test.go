package interop

import (
	"fmt"
	"strings"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// failureRecorder is a testing.TB whose Fatalf panics with the message,
// so a test can check that a safety check fires.
type failureRecorder struct {
	testing.TB
}

type recordedFailure string

func (failureRecorder) Helper() {}
func (failureRecorder) Fatalf(format string, args ...any) {
	panic(recordedFailure(fmt.Sprintf(format, args...)))
}

// mustFail runs f and returns the safety violation it reported.
func mustFail(t *testing.T, f func()) (msg string) {
	t.Helper()
	defer func() {
		r := recover()
		v, ok := r.(recordedFailure)
		if !ok {
			t.Fatalf("no violation reported (recovered %v)", r)
		}
		msg = string(v)
	}()
	f()
	return ""
}

// TestSafetyChecksCatchViolations feeds the checker each kind of
// violation, so that a clean run of the schedules means something.
func TestSafetyChecksCatchViolations(t *testing.T) {
	newChecked := func() (*cluster, *host) {
		c := newCluster(failureRecorder{t}, 1)
		t.Cleanup(c.close)
		h := c.start(1, kindRaftlet, defaultOptions, []uint64{1})
		c.start(2, kindEtcd, defaultOptions, []uint64{1})
		return c, h
	}
	cases := map[string]struct {
		violate func(c *cluster, h *host)
		want    string
	}{
		"two leaders in a term": {func(c *cluster, h *host) {
			c.recordLeader(3, 1)
			c.recordLeader(3, 2)
		}, "two leaders in term 3"},
		"a committed entry changes": {func(c *cluster, h *host) {
			c.checkCommitted(h, applied{Index: 4, Term: 2, Data: "a"})
			c.checkCommitted(c.hosts[2], applied{Index: 4, Term: 2, Data: "b"})
		}, "committed"},
		"an index skipped": {func(c *cluster, h *host) {
			c.apply(h, raftpb.Entry{Index: 2, Term: 1})
		}, "applied index 2 after 0"},
		"a stale read": {func(c *cluster, h *host) {
			c.reads["r"] = 9
			c.checkRead(1, 8, "r")
		}, "below 9"},
		"raftlet bytes differ from raftpb's": {func(c *cluster, h *host) {
			m := raftpb.Message{Type: raftpb.MsgHeartbeat, To: 2, From: 1, Term: 1}
			c.send(1, m, []byte{0x08, 0x08})
		}, "raftpb encodes it as"},
		"nodes diverge": {func(c *cluster, h *host) {
			h.state = []applied{{Index: 1, Term: 1, Data: "x"}}
			h.appliedIndex = 1
			c.hosts[2].state = []applied{{Index: 1, Term: 1, Data: "y"}}
			c.hosts[2].appliedIndex = 1
			c.checkConverged()
		}, "differ"},
		"a snapshot that contradicts the state": {func(c *cluster, h *host) {
			h.state = []applied{{Index: 1, Term: 1, Data: "x"}}
			h.appliedIndex = 1
			snap := raftpb.Snapshot{Data: encodeState([]applied{{Index: 1, Term: 1, Data: "y"}, {Index: 2, Term: 1}}),
				Metadata: raftpb.SnapshotMetadata{Index: 2, Term: 1}}
			c.restore(h, snap)
		}, "not in the snapshot"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, h := newChecked()
			msg := mustFail(t, func() { tc.violate(c, h) })
			if !strings.Contains(msg, "SAFETY VIOLATION") || !strings.Contains(msg, tc.want) {
				t.Fatalf("reported %q, want %q", msg, tc.want)
			}
		})
	}
}
