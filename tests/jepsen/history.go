package main

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// Op is one recorded client operation: its invocation and completion with
// real-time stamps (nanoseconds since the start of the run).
type Op struct {
	Client int // logical client; a client whose operation is unknown continues under a new id (any int)
	Node   int // the node the request went to (0 for synthetic operations)
	Input  Input
	Output Output
	Call   int64
	Return int64
	Phase  string // the faults active when the operation was invoked
	Final  bool   // one of the reads done after healing
}

// History collects operations from concurrent clients.
type History struct {
	start time.Time
	mu    sync.Mutex
	ops   []Op
}

// NewHistory starts the clock of a history.
func NewHistory() *History { return &History{start: time.Now()} }

// Now is the time since the start of the history.
func (h *History) Now() int64 { return int64(time.Since(h.start)) }

// Add records a completed operation.
func (h *History) Add(op Op) {
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.mu.Unlock()
}

// Ops is a copy of the operations recorded so far, by invocation time.
func (h *History) Ops() []Op {
	h.mu.Lock()
	out := append([]Op(nil), h.ops...)
	h.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].Call < out[j].Call })
	return out
}

// Porcupine turns recorded operations into the checker's history: a
// definitely failed operation did not happen and is dropped, so is an
// unknown read (it had no effect and told nothing); an unknown write or
// CAS may have happened at any time after its invocation, so it returns
// after the end of the history.
func Porcupine(ops []Op) []porcupine.Operation {
	var end int64
	var kept []Op
	for _, op := range ops {
		if op.Return > end {
			end = op.Return
		}
		switch {
		case op.Output.Outcome == Failed:
			continue
		case op.Output.Outcome == Unknown && op.Input.Kind == OpRead:
			continue
		}
		kept = append(kept, op)
	}
	// The visualization draws a row per client id: number them densely,
	// in order of first operation, the final reads last.
	dense := map[int]int{}
	for _, final := range []bool{false, true} {
		for _, op := range kept {
			if _, ok := dense[op.Client]; !ok && op.Final == final {
				dense[op.Client] = len(dense)
			}
		}
	}
	out := make([]porcupine.Operation, 0, len(kept))
	for _, op := range kept {
		ret := op.Return
		if op.Output.Outcome == Unknown {
			ret = end + 1
		}
		meta := fmt.Sprintf("n%d %s", op.Node, op.Phase)
		if op.Final {
			meta = fmt.Sprintf("n%d final stale read", op.Node)
		}
		out = append(out, porcupine.Operation{
			ClientId: dense[op.Client],
			Input:    op.Input,
			Call:     op.Call,
			Output:   op.Output,
			Return:   ret,
			Metadata: meta,
		})
	}
	return out
}
