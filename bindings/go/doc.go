// Package raftlet is the Go binding of raftlet, a Raft library with the
// behaviour of etcd raft v3.6 that speaks etcd's raftpb wire format byte
// for byte. It is cgo over raftlet's C ABI (raftlet.h and libraftlet),
// and it mirrors etcd's raft.RawNode so that a host switches with small
// edits: the types of go.etcd.io/raft/v3/raftpb are used throughout, and
// raftlet and etcd nodes can form one cluster.
//
// # Building
//
// By default the package links an installed raftlet found through
// pkg-config (`#cgo pkg-config: raftlet`): run `make install
// PREFIX=...` in a raftlet checkout, and set PKG_CONFIG_PATH to
// $PREFIX/lib/pkgconfig when pkg-config does not search that prefix. The
// program then loads libraftlet.so at run time: build it with
// CGO_LDFLAGS=-Wl,-rpath,$PREFIX/lib or run it with LD_LIBRARY_PATH. With
// the build tag raftlet_intree the package links the static library of
// the checkout it sits in instead (target/release/libraftlet.a, from
// `make lib`); raftlet's own tests build that way. README.md gives the
// commands.
//
// # The Ready loop
//
//	storage := raftlet.NewMemoryStorage()
//	cfg := raftlet.DefaultConfig(1)
//	cfg.Storage = storage
//	rn, err := raftlet.NewRawNode(&cfg)
//	if err != nil { ... }
//	defer rn.Close()
//	_ = rn.Bootstrap([]raftlet.Peer{{ID: 1}, {ID: 2}, {ID: 3}})
//
//	for {
//		// Every tick interval: rn.Tick(). For every message received:
//		// rn.Step(msg). Then:
//		if !rn.HasReady() {
//			continue
//		}
//		rd := rn.Ready()
//		// 1. Persist snapshot, entries and hard state (fsync if rd.MustSync).
//		if err := storage.AppendReady(rd); err != nil { ... }
//		// 2. Send the messages (after the write, as etcd's contract says:
//		// rd.Messages holds both of the core's lists, so nothing waits
//		// to be sent separately).
//		for _, m := range rd.Messages { send(m) }
//		// 3. Apply the committed entries; conf changes go to the node.
//		for _, e := range rd.CommittedEntries {
//			switch e.Type {
//			case raftpb.EntryNormal:
//				apply(e.Data)
//			case raftpb.EntryConfChange:
//				var cc raftpb.ConfChange
//				_ = cc.Unmarshal(e.Data)
//				rn.ApplyConfChange(cc)
//			case raftpb.EntryConfChangeV2:
//				var cc raftpb.ConfChangeV2
//				_ = cc.Unmarshal(e.Data)
//				rn.ApplyConfChange(cc)
//			}
//		}
//		// 4. Tell the node.
//		rn.Advance(rd)
//	}
//
// # Differences from etcd's RawNode
//
//   - Errors are *Error values carrying the C result code and message;
//     test them with errors.Is against the Err* sentinels.
//   - TransferLeader and ReadIndex return an error (etcd's return nothing;
//     ignoring the result keeps etcd's behaviour).
//   - Promoting a learner that has not caught up is refused with
//     ErrPromotionNotReady; Config.MaxLearners bounds the learners.
//   - ApplyConfChange returns the unchanged configuration when raftlet
//     refuses a committed change, where etcd panics.
//   - DefaultConfig turns check-quorum and pre-vote on, raftlet's defaults;
//     a Config literal keeps etcd's zero values.
//   - Readies are persisted and advanced in the order they were taken,
//     each once. A mistake is refused, with nothing written or
//     acknowledged: AppendReady returns ErrReadyStale for a Ready advanced
//     or released already, or not newer than the one it persisted last;
//     TryAdvance returns ErrReadyStale (advanced twice, or covered by the
//     Advance of a later Ready), ErrReadyForeign (not this node's) or
//     ErrReadyNotPersisted (its entries or snapshot are not in the
//     storage). Advance, which has no result in etcd's API, ignores such
//     a Ready.
//
// # The zero-copy API
//
// Beside the typed Ready, which is copied into Go memory as etcd's is,
// ReadyView reads a Ready in place: RawNode.ReadyViewPersisted takes the
// next Ready, writes it to the storage, reports the write durable (so
// what that made available, such as a single voter's committed entry, is
// in the same view) and returns its views in one cgo crossing, with no Go
// allocation; AdvanceView hands it back. ProposeReady is a proposal and
// that in one crossing.
// EntryView.Data, MessageView.Data (the raftpb bytes to send) and
// ReadStateView.RequestCtx are the library's memory, valid until
// AdvanceView: copy what must outlive it. Methods of a view advanced,
// covered or closed return ErrReadyStale; a slice taken before and read
// after cannot be checked. ProposeBatch and StepBatch pass many payloads
// or messages in one crossing, and a TickSet ticks many nodes in one
// crossing and says which have a Ready. HasReady after the calls that
// change a node crosses nothing: they learn it in their own crossing.
// AdvanceView crosses nothing either when the advance would change
// nothing in the node, or only report the view's entries applied with no
// Ready after it (a single voter's proposal): that report is then made
// first thing in the node's next call.
//
// # Handles
//
// RawNode and MemoryStorage own C handles: release them with Close, which
// is idempotent. A cleanup frees them if they are garbage collected first.
// A RawNode is not safe for concurrent use; a MemoryStorage is.
package raftlet
