package main

import (
	"encoding/json"
	"fmt"
	"sort"
)

// command is one write, as it travels in a raft entry (JSON). Node and Seq
// identify the request: the node that proposed it answers its waiter when
// it applies the entry.
type command struct {
	Op  string `json:"op"` // "put", "del" or "cas"
	Key string `json:"k"`
	Val string `json:"v,omitempty"`
	// Old is the value a "cas" expects; nil expects the key absent.
	Old  *string `json:"old,omitempty"`
	Node uint64  `json:"n"`
	Seq  uint64  `json:"s"`
}

// result is the outcome of applying a command.
type result struct {
	// OK is false only for a cas whose expected value differed.
	OK bool
	// Current is the value the key held before the command (nil: absent).
	Current *string
}

// memberInfo is how to reach a member added by POST /members: the address
// every node dials (Raft) unless Peers names another one for that node (a
// proxy on that directed link). It travels in the conf change's context.
type memberInfo struct {
	Raft  string            `json:"raft"`
	Peers map[string]string `json:"peers,omitempty"`
}

// addrFor is the address node `self` dials to reach this member.
func (m memberInfo) addrFor(self uint64) string {
	if a, ok := m.Peers[fmt.Sprint(self)]; ok && a != "" {
		return a
	}
	return m.Raft
}

// kvStore is the replicated state machine: the keys and the addresses of
// the members added at run time (a node that restores a snapshot learns
// them from it, not from the conf change entries it never sees).
type kvStore struct {
	data    map[string]string
	members map[uint64]memberInfo
}

func newKVStore() *kvStore {
	return &kvStore{data: map[string]string{}, members: map[uint64]memberInfo{}}
}

// apply applies one command and returns its outcome.
func (s *kvStore) apply(c command) result {
	cur, ok := s.data[c.Key]
	var before *string
	if ok {
		v := cur
		before = &v
	}
	switch c.Op {
	case "put":
		s.data[c.Key] = c.Val
	case "del":
		delete(s.data, c.Key)
	case "cas":
		if (c.Old == nil) != (before == nil) || (c.Old != nil && *c.Old != *before) {
			return result{OK: false, Current: before}
		}
		s.data[c.Key] = c.Val
	default:
		// An unknown operation changes nothing (a newer version's entry).
		return result{OK: false, Current: before}
	}
	return result{OK: true, Current: before}
}

// get reads a key.
func (s *kvStore) get(key string) (string, bool) {
	v, ok := s.data[key]
	return v, ok
}

// snapshotData is the encoding of a snapshot of the state machine.
type snapshotData struct {
	KV      map[string]string     `json:"kv"`
	Members map[uint64]memberInfo `json:"members,omitempty"`
}

// marshal encodes the whole state (keys sorted by encoding/json).
func (s *kvStore) marshal() ([]byte, error) {
	return json.Marshal(snapshotData{KV: s.data, Members: s.members})
}

// restore replaces the state with a snapshot's.
func (s *kvStore) restore(b []byte) error {
	var d snapshotData
	if len(b) > 0 {
		if err := json.Unmarshal(b, &d); err != nil {
			return fmt.Errorf("snapshot data: %w", err)
		}
	}
	if d.KV == nil {
		d.KV = map[string]string{}
	}
	if d.Members == nil {
		d.Members = map[uint64]memberInfo{}
	}
	s.data, s.members = d.KV, d.Members
	return nil
}

// sortedIDs returns ids in ascending order (never nil, for JSON).
func sortedIDs(ids []uint64) []uint64 {
	out := append([]uint64{}, ids...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
