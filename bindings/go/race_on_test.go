//go:build race

package raftlet

// raceEnabled: the race detector drops pooled objects at random, so
// allocation counts are not checked under it.
const raceEnabled = true
