package raftlet

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// Payload is a proposal's bytes in the library's memory: the host writes
// Data in place and ProposePayloads hands the bytes to the library without
// copying them. Propose and ProposeBatch copy the payload instead (the
// library keeps an entry until it is compacted, and Go memory may not be
// kept by C past a call); for payloads of a few KiB and more that copy is
// the larger part of a proposal's cost.
//
// Data is C memory, valid until the payload is proposed or freed; a
// Payload that is not proposed must be freed with Free (the garbage
// collector does not see C memory). The zero Payload is an empty one that
// was never allocated.
type Payload struct {
	h uintptr
	// Data is the payload's bytes, zeroed when allocated, to be filled in
	// place. Do not append to it: a larger slice would be Go memory that
	// the library never sees.
	Data []byte
}

// NewPayloads allocates one payload per size, in the library's memory and
// in one cgo crossing. Errors: ErrInvalidArg for a negative size or
// memory that cannot be had (nothing is allocated then).
func NewPayloads(sizes ...int) ([]Payload, error) {
	hs, data, err := cPayloadsNew(sizes)
	if err != nil {
		return nil, err
	}
	ps := make([]Payload, len(sizes))
	for i := range ps {
		ps[i].h = hs[i]
		if sizes[i] > 0 {
			ps[i].Data = unsafe.Slice(data[i], sizes[i])
		}
	}
	return ps, nil
}

// Free frees a payload that was not proposed; Data is set to nil. Freeing
// a proposed, freed or zero Payload does nothing.
func (p *Payload) Free() {
	if p.h != 0 {
		cPayloadFree(p.h)
	}
	p.h, p.Data = 0, nil
}

// ProposePayloads proposes the payloads as one proposal, like
// ProposeBatch, in one cgo crossing and without copying their bytes: on
// the leader they are appended together, in order, or not at all.
//
// Every payload is taken by the library, whatever the outcome (a refused
// proposal frees them): each one is set to the zero Payload, and the
// slices of Data held elsewhere must not be used again. Nothing is taken
// when a payload was already proposed or freed, or appears twice
// (ErrInvalidArg), or the node is closed (ErrClosed). Other errors as for
// Propose.
func (rn *RawNode) ProposePayloads(ps []Payload) error {
	p, err := rn.ptr()
	if err != nil {
		return err
	}
	x := rn.scratch()
	hs := x.payloads[:0]
	for i := range ps {
		if ps[i].h == 0 {
			return &Error{CodeInvalidArg, fmt.Sprintf("payload %d was already proposed or freed", i)}
		}
		hs = append(hs, ps[i].h)
	}
	has, known, err := cNodeProposePayloads(p, hs)
	clear(hs)
	x.payloads = hs[:0]
	// The library took them unless it refused the arguments (a payload
	// twice: nothing taken).
	if !errors.Is(err, ErrInvalidArg) && !errors.Is(err, ErrNullArg) {
		for i := range ps {
			ps[i] = Payload{}
		}
	}
	rn.setHR(has, known)
	runtime.KeepAlive(rn)
	return err
}
