//go:build raftlet_intree

package main

func init() { buildFlags = append(buildFlags, "-tags=raftlet_intree") }
