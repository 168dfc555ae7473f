//go:build !race

package raftlet

const raceEnabled = false
