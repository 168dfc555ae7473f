package main

import (
	"context"
	"fmt"
	"strings"
	"sync"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// LinkFault is what is wrong with one directed peer link.
type LinkFault int

const (
	// LinkOK passes everything.
	LinkOK LinkFault = iota
	// LinkCut resets connections: every connection the link carries, and
	// every new one, is reset (RST) at its first byte in either direction,
	// and no byte passes. The proxy keeps its port, so no other process
	// on the machine can take it while the link is down (stopping the
	// proxy would release the port, and the heal could then fail to bind).
	LinkCut
	// LinkDrop blackholes the link: connections stay open (and new ones
	// are accepted) but every byte is dropped, as a network that loses
	// packets without resetting anything.
	LinkDrop
	// LinkDelay adds latency with jitter.
	LinkDelay
)

func (f LinkFault) String() string {
	return [...]string{"ok", "cut", "drop", "delay"}[f]
}

// Net is the fault-injecting network between the nodes: one toxiproxy
// proxy for every directed link i→j, which node i dials to reach node j.
// Node i only sends on the connections it dials (raftexample's shape),
// so the proxy i→j carries exactly the traffic from i to j and a fault on
// it is one-way.
type Net struct {
	server  *toxiproxy.ApiServer
	mu      sync.Mutex
	proxies map[[2]int]*toxiproxy.Proxy
	faults  map[[2]int]LinkFault
	delayMs int
}

// NewNet creates an empty network.
func NewNet() *Net {
	return &Net{
		server:  toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()),
		proxies: map[[2]int]*toxiproxy.Proxy{},
		faults:  map[[2]int]LinkFault{},
	}
}

// AddLink starts the proxy for link from→to, listening on listen and
// forwarding to upstream (to's raft address).
func (n *Net) AddLink(from, to int, listen, upstream string) error {
	p := toxiproxy.NewProxy(n.server, fmt.Sprintf("n%d-n%d", from, to), listen, upstream)
	if err := p.Start(); err != nil {
		return fmt.Errorf("proxy %d->%d on %s: %w", from, to, listen, err)
	}
	n.mu.Lock()
	n.proxies[[2]int{from, to}] = p
	n.faults[[2]int{from, to}] = LinkOK
	n.mu.Unlock()
	return nil
}

// Set puts fault f on link from→to, first healing whatever was there.
func (n *Net) Set(from, to int, f LinkFault, delayMs int) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	key := [2]int{from, to}
	p, ok := n.proxies[key]
	if !ok {
		return fmt.Errorf("no link %d->%d", from, to)
	}
	if err := n.healLocked(key, p); err != nil {
		return err
	}
	switch f {
	case LinkOK:
	case LinkCut:
		for _, stream := range []string{"upstream", "downstream"} {
			if _, err := p.Toxics.AddToxicJson(strings.NewReader(fmt.Sprintf(
				`{"name":"cut-%s","type":"reset_peer","stream":"%s","attributes":{"timeout":0}}`, stream, stream))); err != nil {
				return err
			}
		}
	case LinkDrop:
		// timeout 0: drop every byte, never close.
		if _, err := p.Toxics.AddToxicJson(strings.NewReader(
			`{"name":"drop","type":"timeout","stream":"upstream","attributes":{"timeout":0}}`)); err != nil {
			return err
		}
	case LinkDelay:
		j := delayMs / 2
		if _, err := p.Toxics.AddToxicJson(strings.NewReader(fmt.Sprintf(
			`{"name":"delay","type":"latency","stream":"upstream","attributes":{"latency":%d,"jitter":%d}}`, delayMs, j))); err != nil {
			return err
		}
	}
	n.faults[key] = f
	return nil
}

// healLocked removes the fault on one link. A cut connection that carried
// a byte has been reset, and one that carried none lost nothing, so a cut
// heals by removing its toxics. A blackholed connection has lost bytes in
// the middle of its frames, so its connections are reset (stop and start
// the proxy at once, re-binding the port it just released) rather than
// spliced back together.
func (n *Net) healLocked(key [2]int, p *toxiproxy.Proxy) error {
	switch n.faults[key] {
	case LinkOK:
		return nil
	case LinkCut:
		for _, stream := range []string{"upstream", "downstream"} {
			if err := p.Toxics.RemoveToxic(context.Background(), "cut-"+stream); err != nil {
				return err
			}
		}
	case LinkDrop:
		if err := p.Toxics.RemoveToxic(context.Background(), "drop"); err != nil {
			return err
		}
		p.Stop()
		if err := p.Start(); err != nil {
			return fmt.Errorf("restart proxy %v: %w", key, err)
		}
	case LinkDelay:
		if err := p.Toxics.RemoveToxic(context.Background(), "delay"); err != nil {
			return err
		}
	}
	n.faults[key] = LinkOK
	return nil
}

// HealAll removes every fault.
func (n *Net) HealAll() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	var first error
	for key, p := range n.proxies {
		if err := n.healLocked(key, p); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Fault is the fault on link from→to.
func (n *Net) Fault(from, to int) LinkFault {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.faults[[2]int{from, to}]
}

// Close stops every proxy and closes every connection.
func (n *Net) Close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, p := range n.proxies {
		p.Stop()
	}
}
