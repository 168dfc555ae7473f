//go:build cgo && !raftlet_intree

package raftlet

// The default: an installed raftlet (make install PREFIX=...), found
// through pkg-config as git2go and go-sqlite3 find their system
// libraries. Point PKG_CONFIG_PATH at $PREFIX/lib/pkgconfig when the
// prefix is not one pkg-config searches; the shared library is then
// found at run time through an rpath (CGO_LDFLAGS=-Wl,-rpath,$PREFIX/lib)
// or LD_LIBRARY_PATH. See README.md.

// #cgo pkg-config: raftlet
import "C"
