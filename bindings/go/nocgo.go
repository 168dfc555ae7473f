//go:build !cgo

package raftlet

// The raftlet binding calls the raftlet C library through cgo: build with
// CGO_ENABLED=1 and a C compiler. This identifier is undefined on purpose
// so that a build without cgo stops here with its name as the message.
var _ = raftlet_requires_cgo__build_with_CGO_ENABLED_1
