package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Verdict is the checker's answer for one history.
type Verdict struct {
	Result porcupine.CheckResult
	Ops    int    // operations the checker saw
	Keys   int    // independent registers
	Viz    string // the visualization written, if any
	// BadKeys are the keys whose own history is not linearizable (at
	// most five), for the report.
	BadKeys []string
}

// Linearizable reports whether the history is Ok.
func (v Verdict) Linearizable() bool { return v.Result == porcupine.Ok }

// CheckHistory checks ops against the KV model; for any result but Ok it
// writes porcupine's visualization to vizPath (when not empty).
func CheckHistory(ops []Op, timeout time.Duration, vizPath string) (Verdict, error) {
	hist := Porcupine(ops)
	res, info := porcupine.CheckOperationsVerbose(KVModel, hist, timeout)
	v := Verdict{Result: res, Ops: len(hist), Keys: len(partitionByKey(hist))}
	if res == porcupine.Illegal {
		for _, part := range partitionByKey(hist) {
			if len(v.BadKeys) == 5 {
				break
			}
			if porcupine.CheckOperationsTimeout(KVModel, part, timeout) == porcupine.Illegal {
				v.BadKeys = append(v.BadKeys, part[0].Input.(Input).Key)
			}
		}
	}
	if res != porcupine.Ok && vizPath != "" {
		if err := os.MkdirAll(filepath.Dir(vizPath), 0o755); err != nil {
			return v, err
		}
		if err := porcupine.VisualizePath(KVModel, info, vizPath); err != nil {
			return v, fmt.Errorf("visualization: %w", err)
		}
		v.Viz = vizPath
	}
	return v, nil
}

// NodeState is what one node holds after healing: its applied index and
// every key's value as a local (?stale=1) read returned it.
type NodeState struct {
	ID      int
	Applied uint64
	Values  map[string]string // "" = absent
}

// CheckConvergence checks the state every node holds once healed and
// caught up: the same applied index and values on every node, and for
// every key a value that does not lose an acknowledged write. Each value
// was written by one operation (values are unique); it loses an
// acknowledged write A if its writer returned before A was invoked. An
// absent key loses any acknowledged write. A value nobody wrote is
// corruption. Unknown writes are allowed to have happened or not.
// Returns one line per problem.
func CheckConvergence(ops []Op, nodes []NodeState) []string {
	var problems []string
	if len(nodes) == 0 {
		return []string{"no node state to compare"}
	}
	ref := nodes[0]
	for _, n := range nodes[1:] {
		if n.Applied != ref.Applied {
			problems = append(problems, fmt.Sprintf("applied index differs: n%d=%d n%d=%d", ref.ID, ref.Applied, n.ID, n.Applied))
		}
	}
	keys := map[string]bool{}
	writers := map[string]Op{} // value -> the operation that wrote it
	acked := map[string][]Op{} // key -> acknowledged writes
	for _, op := range ops {
		if op.Final {
			continue
		}
		keys[op.Input.Key] = true
		if op.Input.Kind == OpRead {
			continue
		}
		if op.Output.Outcome == Ok || op.Output.Outcome == Unknown {
			writers[op.Input.Value] = op
		}
		if op.Output.Outcome == Ok {
			acked[op.Input.Key] = append(acked[op.Input.Key], op)
		}
	}
	for _, n := range nodes {
		for k := range n.Values {
			keys[k] = true
		}
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		var vals []string
		for _, n := range nodes {
			vals = append(vals, fmt.Sprintf("n%d=%s", n.ID, showValue(n.Values[k])))
		}
		for _, n := range nodes[1:] {
			if n.Values[k] != ref.Values[k] {
				problems = append(problems, fmt.Sprintf("key %s differs between nodes: %s", k, strings.Join(vals, " ")))
				break
			}
		}
		for _, n := range nodes {
			v := n.Values[k]
			if v == "" {
				if len(acked[k]) > 0 {
					problems = append(problems, fmt.Sprintf("key %s absent on n%d but %d writes to it were acknowledged", k, n.ID, len(acked[k])))
				}
				continue
			}
			w, ok := writers[v]
			if !ok || w.Input.Key != k {
				problems = append(problems, fmt.Sprintf("key %s on n%d holds %q, which no operation wrote", k, n.ID, v))
				continue
			}
			for _, a := range acked[k] {
				if w.Return < a.Call && w.Output.Outcome == Ok {
					problems = append(problems, fmt.Sprintf("key %s on n%d holds %s, written before acknowledged %s was invoked: that write is lost", k, n.ID, v, a.Input.Value))
					break
				}
			}
		}
	}
	return problems
}
