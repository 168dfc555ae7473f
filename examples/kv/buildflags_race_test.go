//go:build race

package main

// Under -race the kv processes are built with the race detector too.
func init() { buildFlags = append(buildFlags, "-race") }
