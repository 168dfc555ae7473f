//go:build cgo && raftlet_intree

package raftlet

// For development inside a raftlet checkout (-tags raftlet_intree): the
// header of include/ and the static library target/release/libraftlet.a
// that `make lib` builds, linked into the program. scripts/go-test.sh and
// the interop tests build this way.

// #cgo CFLAGS: -I${SRCDIR}/../../include
// #cgo LDFLAGS: ${SRCDIR}/../../target/release/libraftlet.a -lm -ldl -lpthread
import "C"
