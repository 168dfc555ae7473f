// Package bench holds the Go side of raftlet's benchmarks (DESIGN §8):
// etcd raft v3.6 natively, and raftlet through its Go binding (cgo), both
// driven by the same workload code as the Rust harness in ../src: one
// interface over "a node", messages marshalled by the sender and
// unmarshalled on delivery.
package bench

import (
	"go.etcd.io/raft/v3/raftpb"

	"os"
	"strconv"
	"strings"
	"syscall"
)

// wire is one encoded message in flight.
type wire struct {
	to   uint64
	data []byte
}

// applied is the host's state machine: what it applied.
type applied struct {
	entries, bytes, index, reads uint64
}

// node is what the workloads drive, implemented for etcd raft and for the
// raftlet binding.
type node interface {
	Campaign()
	// Payloads returns n new payload buffers of size bytes, zeroed, that
	// the workload fills and then proposes (Propose, ProposeBatch): Go
	// slices, or the library's memory where the host proposes payloads
	// without a copy (the zero-copy host, for large payloads).
	Payloads(n, size int) [][]byte
	Propose(data []byte)
	// ProposeBatch proposes the payloads in one proposal message; it
	// reports false when the implementation cannot.
	ProposeBatch(payloads [][]byte) bool
	ReadIndex(ctx uint64)
	Tick()
	Step(b []byte)
	// StepMany delivers the messages read for this node at once (what a
	// transport hands over from one read): Step for each, or one batch
	// call where the implementation has one.
	StepMany(bs [][]byte)
	HasReady() bool
	// Cycle runs one Ready cycle: persist, marshal messages into out,
	// apply committed entries, advance.
	Cycle(out *[]wire, app *applied)
	// Sent says that the messages the Cycles since the last Sent put into
	// out were delivered: their bytes may be released (the zero-copy host
	// hands out the library's memory until then).
	Sent()
	Compact(index uint64)
	IsLeader() bool
	Close()
}

// goPayloads is Payloads in Go memory: k new slices of size bytes.
func goPayloads(k, size int) [][]byte {
	ps := make([][]byte, k)
	for i := range ps {
		ps[i] = make([]byte, size)
	}
	return ps
}

// factory makes node id of a cluster of voters.
type factory func(id uint64, voters []uint64) node

// Parameters shared by both implementations (DESIGN §2 defaults, explicit).
const (
	electionTick  = 10
	heartbeatTick = 1
	maxSizePerMsg = 1 << 20
	maxInflight   = 256
)

// cpuNanos is the CPU time (user + system) of this process: the machines
// are shared, so the figures come from CPU time, as in the Rust harness.
// The Go runtime's own threads (the garbage collector) are counted too.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// procStatusKiB reads a field (VmHWM, VmRSS) of /proc/self/status in KiB.
func procStatusKiB(field string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, field+":") {
			f := strings.Fields(l)
			if len(f) >= 2 {
				v, _ := strconv.ParseFloat(f[1], 64)
				return v
			}
		}
	}
	return 0
}

// raftpbHeartbeat is MsgHeartbeat from 1 to 2 at term 1, marshalled.
func raftpbHeartbeat() []byte {
	m := raftpb.Message{Type: raftpb.MsgHeartbeat, From: 1, To: 2, Term: 1}
	b, err := m.Marshal()
	if err != nil {
		panic(err)
	}
	return b
}
