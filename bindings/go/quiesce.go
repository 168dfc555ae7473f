package raftlet

import "runtime"

// IsQuiesced reports whether the node is quiesced (Config.Quiesce): it
// ignores Tick until a message other than the quiescence exchange, a
// proposal, a read, a campaign or a transfer wakes it, or the host calls
// Wake or WakeLeaderLost. A host of many groups need not tick a quiesced
// group at all.
func (rn *RawNode) IsQuiesced() bool {
	p, err := rn.ptr()
	must(err)
	q, err := cNodeIsQuiesced(p)
	must(err)
	runtime.KeepAlive(rn)
	return q
}

// Wake wakes a quiesced node: it ticks again from where its clocks
// stopped. A no-op on a node that is awake.
func (rn *RawNode) Wake() {
	p, err := rn.ptr()
	must(err)
	must(cNodeWake(p))
	runtime.KeepAlive(rn)
}

// WakeLeaderLost tells a follower that the host has heard nothing from
// the leader's node (no message, no node-level heartbeat) for at least an
// election timeout of this node's ticks: it wakes and campaigns within
// one more election timeout. Call it for every follower of that leader,
// asleep or awake; never while the leader's node is heard from (under
// lease-based reads the follower could then vote inside the leader's
// lease). A no-op on a leader or candidate.
func (rn *RawNode) WakeLeaderLost() {
	p, err := rn.ptr()
	must(err)
	must(cNodeWakeLeaderLost(p))
	runtime.KeepAlive(rn)
}
