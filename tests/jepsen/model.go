package main

import (
	"fmt"
	"sort"

	"github.com/anishathalye/porcupine"
)

// OpKind is what a client asked a register for.
type OpKind int

const (
	// OpRead is a linearizable GET.
	OpRead OpKind = iota
	// OpWrite is a PUT.
	OpWrite
	// OpCAS is a compare-and-set: POST ?cas with {"old","new"}.
	OpCAS
)

func (k OpKind) String() string {
	switch k {
	case OpRead:
		return "read"
	case OpWrite:
		return "write"
	case OpCAS:
		return "cas"
	}
	return fmt.Sprintf("op(%d)", int(k))
}

// Input is one operation on one key. Values are never empty: the empty
// string stands for an absent key throughout the model.
type Input struct {
	Kind  OpKind
	Key   string
	Value string // write: the value; cas: the new value
	Old   string // cas: the expected value ("" = absent)
}

// Outcome says what the client learnt about an operation.
type Outcome int

const (
	// Ok is a success: 200/404 for a read, 204 for a write or CAS.
	Ok Outcome = iota
	// CASFailed is a 412: the value differed from Old (definite, nothing
	// written). Output.Value holds the current value the node reported.
	CASFailed
	// Unknown means the operation may or may not have taken effect: a
	// timeout, a connection error after the request was sent, or a 503
	// with "definite": false. Such an operation returns at infinity.
	Unknown
	// Failed is a definite failure (503 with "definite": true, a refused
	// connection): the operation did not take effect. Failed operations
	// are left out of the history the checker sees.
	Failed
)

func (o Outcome) String() string {
	switch o {
	case Ok:
		return "ok"
	case CASFailed:
		return "cas-failed"
	case Unknown:
		return "unknown"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}

// Output is the result of an operation. For a read, Value is what it
// returned ("" = 404). For a failed CAS, Value is the current value the
// node reported in the 412 body.
type Output struct {
	Outcome Outcome
	Value   string
}

// registerStep is the sequential specification of one register.
func registerStep(state, input, output interface{}) (bool, interface{}) {
	st := state.(string)
	in := input.(Input)
	out := output.(Output)
	switch in.Kind {
	case OpRead:
		// An unknown read never reaches the checker (it has no effect).
		return out.Outcome == Ok && out.Value == st, st
	case OpWrite:
		// Ok or Unknown: an unknown write that is linearized somewhere took
		// effect there; had it not taken effect, the checker can place it
		// after everything else, where its effect is not observed.
		return out.Outcome == Ok || out.Outcome == Unknown, in.Value
	case OpCAS:
		switch out.Outcome {
		case Ok:
			if st == in.Old {
				return true, in.Value
			}
			return false, st
		case CASFailed:
			// The 412 body names the value the CAS compared against.
			return st != in.Old && st == out.Value, st
		case Unknown:
			if st == in.Old {
				return true, in.Value
			}
			return true, st
		}
	}
	return false, st
}

// partitionByKey splits a history into one history per key: the keys are
// independent registers, which keeps the search small.
func partitionByKey(history []porcupine.Operation) [][]porcupine.Operation {
	byKey := map[string][]porcupine.Operation{}
	for _, op := range history {
		k := op.Input.(Input).Key
		byKey[k] = append(byKey[k], op)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([][]porcupine.Operation, 0, len(keys))
	for _, k := range keys {
		out = append(out, byKey[k])
	}
	return out
}

func showValue(v string) string {
	if v == "" {
		return "∅"
	}
	return v
}

// KVModel is a map of independent read/write/CAS registers, partitioned
// by key. The state of a partition is the register's value ("" = absent).
var KVModel = porcupine.Model{
	Partition: partitionByKey,
	Init:      func() interface{} { return "" },
	Step:      registerStep,
	Equal:     func(a, b interface{}) bool { return a.(string) == b.(string) },
	DescribeOperation: func(input, output interface{}) string {
		in := input.(Input)
		out := output.(Output)
		switch in.Kind {
		case OpRead:
			return fmt.Sprintf("get(%s) -> %s", in.Key, showValue(out.Value))
		case OpWrite:
			return fmt.Sprintf("put(%s, %s) %s", in.Key, in.Value, out.Outcome)
		case OpCAS:
			s := fmt.Sprintf("cas(%s, %s -> %s) %s", in.Key, showValue(in.Old), in.Value, out.Outcome)
			if out.Outcome == CASFailed {
				s += " current=" + showValue(out.Value)
			}
			return s
		}
		return "?"
	},
	DescribeState: func(state interface{}) string { return showValue(state.(string)) },
}
