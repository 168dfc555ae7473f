// Command kv is a replicated key-value service over raftlet, one process
// per node, in the shape of etcd's contrib/raftexample: durable storage
// (raftlet's disk storage), peers over TCP, and an HTTP API.
//
//	kv --id 1 --data DIR --raft-listen 127.0.0.1:7001 --http 127.0.0.1:8001 \
//	   --peers 1=127.0.0.1:7001,2=127.0.0.1:7002,3=127.0.0.1:7003 \
//	   [--join] [--snapshot-entries N] [--unsafe-stale-reads]
//
// README.md and INTERFACE.md in this directory describe the HTTP API.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// parsePeers parses "1=host:port,2=host:port".
func parsePeers(s string) (map[uint64]string, error) {
	peers := map[uint64]string{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok || v == "" {
			return nil, fmt.Errorf("bad peer %q (want ID=HOST:PORT)", part)
		}
		id, err := parseID(k)
		if err != nil {
			return nil, err
		}
		if _, _, err := net.SplitHostPort(v); err != nil {
			return nil, fmt.Errorf("bad peer address %q: %v", v, err)
		}
		if _, dup := peers[id]; dup {
			return nil, fmt.Errorf("peer %d given twice", id)
		}
		peers[id] = v
	}
	return peers, nil
}

func main() {
	id := flag.Uint64("id", 0, "this node's id (> 0)")
	dir := flag.String("data", "", "data directory (created if missing)")
	raftListen := flag.String("raft-listen", "", "address to accept peers' connections on")
	httpAddr := flag.String("http", "", "address of the HTTP API")
	peersFlag := flag.String("peers", "", "ID=HOST:PORT,...: the address this node dials for each peer; the first voters of a new cluster")
	join := flag.Bool("join", false, "start empty as a new member (added with POST /members) and wait for the leader")
	snapEntries := flag.Uint64("snapshot-entries", 10000, "snapshot the state and compact the log every N applied entries (0: never)")
	staleReads := flag.Bool("unsafe-stale-reads", false, "serve plain GETs from local state without ReadIndex (a planted bug for the linearizability checker)")
	reqTimeout := flag.Duration("request-timeout", 2*time.Second, "how long a request waits to be committed and applied")
	tick := flag.Duration("tick", 100*time.Millisecond, "raft tick (heartbeat every tick, election after 10 to 20 ticks)")
	flag.Parse()

	log.SetFlags(log.Ltime | log.Lmicroseconds)
	log.SetPrefix(fmt.Sprintf("[node %d] ", *id))
	if *id == 0 || *dir == "" || *raftListen == "" || *httpAddr == "" {
		fmt.Fprintln(os.Stderr, "kv: --id, --data, --raft-listen and --http are required")
		flag.Usage()
		os.Exit(2)
	}
	peers, err := parsePeers(*peersFlag)
	if err != nil {
		log.Fatalf("--peers: %v", err)
	}
	if _, ok := peers[*id]; !ok && !*join {
		// A new cluster's voters are the peers: this node is one of them.
		peers[*id] = *raftListen
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		log.Fatal(err)
	}
	n, err := newNode(nodeConfig{
		id: *id, dir: *dir, peers: peers, join: *join,
		snapshotEntries: *snapEntries, tick: *tick,
	})
	if err != nil {
		log.Fatalf("open: %v", err)
	}
	if err := n.start(*raftListen); err != nil {
		log.Fatalf("raft listen: %v", err)
	}
	ln, err := net.Listen("tcp", *httpAddr)
	if err != nil {
		log.Fatalf("http listen: %v", err)
	}
	api := &api{n: n, timeout: *reqTimeout, staleReads: *staleReads}
	srv := &http.Server{
		Handler:           api.routes(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      *reqTimeout + 10*time.Second,
		IdleTimeout:       time.Minute,
		ErrorLog:          log.New(os.Stderr, fmt.Sprintf("[node %d] http: ", *id), log.Ltime|log.Lmicroseconds),
	}
	if *staleReads {
		log.Printf("UNSAFE: plain GETs are served from local state without ReadIndex")
	}
	log.Printf("serving HTTP on %s, raft on %s", *httpAddr, *raftListen)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	select {
	case s := <-sig:
		log.Printf("%v: stopping", s)
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			log.Printf("http: %v", err)
		}
	}
	// Fail what is in flight (the node first, so requests return at once),
	// then let the HTTP server send those answers.
	n.close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
}
