package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

const ms1 = int64(time.Millisecond)

func w(client int, key, v string, call, ret int64, o Outcome) Op {
	return Op{Client: client, Node: 1, Input: Input{Kind: OpWrite, Key: key, Value: v}, Output: Output{Outcome: o}, Call: call * ms1, Return: ret * ms1}
}

func rd(client int, key, v string, call, ret int64) Op {
	return Op{Client: client, Node: 2, Input: Input{Kind: OpRead, Key: key}, Output: Output{Outcome: Ok, Value: v}, Call: call * ms1, Return: ret * ms1}
}

func cas(client int, key, old, v string, call, ret int64, o Outcome, cur string) Op {
	return Op{Client: client, Node: 3, Input: Input{Kind: OpCAS, Key: key, Old: old, Value: v}, Output: Output{Outcome: o, Value: cur}, Call: call * ms1, Return: ret * ms1}
}

func check(t *testing.T, ops []Op) porcupine.CheckResult {
	t.Helper()
	v, err := CheckHistory(ops, 10*time.Second, "")
	if err != nil {
		t.Fatal(err)
	}
	return v.Result
}

func TestCheckerAcceptsLinearizableHistory(t *testing.T) {
	ops := []Op{
		w(0, "a", "1", 0, 10, Ok),
		rd(1, "a", "1", 11, 20),
		// Concurrent write and read: the read may see either value.
		w(0, "a", "2", 21, 40, Ok),
		rd(1, "a", "1", 22, 30),
		rd(2, "a", "2", 35, 45),
		cas(1, "a", "2", "3", 50, 60, Ok, ""),
		cas(2, "a", "2", "4", 61, 70, CASFailed, "3"),
		rd(0, "a", "3", 71, 80),
		// Another key is an independent register.
		rd(0, "b", "", 0, 5),
		cas(1, "b", "", "x", 6, 9, Ok, ""),
		rd(2, "b", "x", 10, 12),
	}
	if r := check(t, ops); r != porcupine.Ok {
		t.Fatalf("linearizable history reported %s", r)
	}
}

// The stale read the planted bug produces: a write is acknowledged, and a
// read that starts afterwards returns the old value.
func TestCheckerRejectsStaleRead(t *testing.T) {
	ops := []Op{
		w(0, "a", "1", 0, 10, Ok),
		w(0, "a", "2", 20, 30, Ok),
		rd(1, "a", "1", 31, 40),
		w(2, "b", "3", 0, 10, Ok),
		rd(2, "b", "3", 11, 12),
	}
	if r := check(t, ops); r != porcupine.Illegal {
		t.Fatalf("stale read reported %s", r)
	}
	// The visualization of the failure is written.
	path := filepath.Join(t.TempDir(), "viz.html")
	v, err := CheckHistory(ops, 10*time.Second, path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || v.Viz != path || !strings.Contains(string(b), "<html") {
		t.Fatalf("no visualization written: %v %q", err, v.Viz)
	}
	if len(v.BadKeys) != 1 || v.BadKeys[0] != "a" {
		t.Fatalf("bad keys %v, want [a]", v.BadKeys)
	}
}

func TestCheckerRejectsBadHistories(t *testing.T) {
	cases := map[string][]Op{
		"read of a value never written": {rd(0, "a", "9", 0, 1)},
		"lost acknowledged write":       {w(0, "a", "1", 0, 10, Ok), rd(1, "a", "", 11, 12)},
		"CAS succeeded on a wrong old":  {w(0, "a", "1", 0, 10, Ok), cas(1, "a", "2", "3", 11, 12, Ok, "")},
		"412 naming a wrong current":    {w(0, "a", "1", 0, 10, Ok), cas(1, "a", "2", "3", 11, 12, CASFailed, "7")},
		"412 although old matched":      {w(0, "a", "1", 0, 10, Ok), cas(1, "a", "1", "3", 11, 12, CASFailed, "1")},
		"value going back in time": {
			w(0, "a", "1", 0, 10, Ok), w(1, "a", "2", 0, 10, Ok),
			rd(2, "a", "2", 11, 12), rd(2, "a", "1", 13, 14), rd(2, "a", "2", 15, 16),
		},
		"two successful CAS from the same value": {
			w(0, "a", "1", 0, 10, Ok),
			cas(1, "a", "1", "2", 11, 20, Ok, ""), cas(2, "a", "1", "3", 11, 20, Ok, ""),
			rd(0, "a", "3", 21, 22),
		},
	}
	for name, ops := range cases {
		if r := check(t, ops); r != porcupine.Illegal {
			t.Errorf("%s: reported %s, want Illegal", name, r)
		}
	}
}

// An unknown write may take effect at any time after its invocation, even
// long after the client gave up; or never.
func TestUnknownWritesMayHappenLateOrNever(t *testing.T) {
	late := []Op{
		w(0, "a", "1", 0, 10, Ok),
		w(1, "a", "2", 11, 2000, Unknown),
		rd(2, "a", "1", 3000, 3001),
		rd(2, "a", "2", 3002, 3003),
	}
	if r := check(t, late); r != porcupine.Ok {
		t.Fatalf("late unknown write reported %s", r)
	}
	never := []Op{
		w(0, "a", "1", 0, 10, Ok),
		w(1, "a", "2", 11, 20, Unknown),
		cas(1, "a", "1", "3", 21, 30, Unknown, ""),
		rd(2, "a", "1", 3000, 3001),
	}
	if r := check(t, never); r != porcupine.Ok {
		t.Fatalf("unknown writes that never happened reported %s", r)
	}
	// But not before its invocation.
	early := []Op{
		w(0, "a", "1", 0, 10, Ok),
		rd(2, "a", "2", 11, 12),
		w(1, "a", "2", 20, 30, Unknown),
	}
	if r := check(t, early); r != porcupine.Illegal {
		t.Fatalf("read of an unknown write before its invocation reported %s", r)
	}
	// A definitely failed write never happened.
	failed := []Op{
		w(0, "a", "1", 0, 10, Ok),
		w(1, "a", "2", 11, 20, Failed),
		rd(2, "a", "2", 21, 22),
	}
	if r := check(t, failed); r != porcupine.Illegal {
		t.Fatalf("read of a failed write reported %s", r)
	}
}

func TestConvergence(t *testing.T) {
	ops := []Op{
		w(0, "a", "1", 0, 10, Ok),
		w(0, "a", "2", 20, 30, Ok),
		w(1, "a", "3", 25, 90, Unknown),
		w(0, "b", "4", 0, 10, Ok),
	}
	state := func(a, b string) map[string]string { return map[string]string{"a": a, "b": b} }
	good := []NodeState{{ID: 1, Applied: 9, Values: state("2", "4")}, {ID: 2, Applied: 9, Values: state("2", "4")}}
	if p := CheckConvergence(ops, good); len(p) != 0 {
		t.Fatalf("good state: %v", p)
	}
	unknownApplied := []NodeState{{ID: 1, Applied: 9, Values: state("3", "4")}, {ID: 2, Applied: 9, Values: state("3", "4")}}
	if p := CheckConvergence(ops, unknownApplied); len(p) != 0 {
		t.Fatalf("applied unknown write: %v", p)
	}
	bad := map[string][]NodeState{
		"lost":       {{ID: 1, Applied: 9, Values: state("1", "4")}, {ID: 2, Applied: 9, Values: state("1", "4")}},
		"absent":     {{ID: 1, Applied: 9, Values: state("2", "")}, {ID: 2, Applied: 9, Values: state("2", "")}},
		"diverged":   {{ID: 1, Applied: 9, Values: state("2", "4")}, {ID: 2, Applied: 9, Values: state("3", "4")}},
		"applied":    {{ID: 1, Applied: 9, Values: state("2", "4")}, {ID: 2, Applied: 8, Values: state("2", "4")}},
		"corruption": {{ID: 1, Applied: 9, Values: state("2", "zz")}, {ID: 2, Applied: 9, Values: state("2", "zz")}},
	}
	for name, st := range bad {
		if p := CheckConvergence(ops, st); len(p) == 0 {
			t.Errorf("%s: not reported", name)
		}
	}
}

func TestPorcupineHistoryShape(t *testing.T) {
	ops := []Op{
		w(0, "a", "1", 0, 10, Ok),
		w(1, "a", "2", 5, 50, Unknown),
		w(2, "a", "3", 5, 6, Failed),
		{Client: 3, Input: Input{Kind: OpRead, Key: "a"}, Output: Output{Outcome: Unknown}, Call: 1, Return: 70 * ms1},
		rd(4, "a", "1", 60, 80),
	}
	h := Porcupine(ops)
	if len(h) != 3 {
		t.Fatalf("want the failed write and unknown read dropped, got %d ops", len(h))
	}
	for i, want := range []int{0, 1, 2} {
		if h[i].ClientId != want {
			t.Fatalf("client ids %d %d %d, want dense 0 1 2", h[0].ClientId, h[1].ClientId, h[2].ClientId)
		}
	}
	if h[1].Return <= 80*ms1 {
		t.Fatalf("an unknown write must return after the end of the history, returns at %d", h[1].Return)
	}
}
