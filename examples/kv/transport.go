package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"sync"
	"time"
)

// The wire format between peers: a stream of frames, each a 4-byte
// big-endian header and a payload. The header's low 31 bits are the
// payload's length; its top bit says that the payload is a piece of a
// message that goes on in the next frame. An ordinary message is one frame
// (the header is then just its length); a message larger than chunkSize
// (in practice a MsgSnap carrying the state machine) is cut into pieces of
// chunkSize, each written with its own deadline, and the receiver joins
// the pieces up to maxMessage bytes before it decodes them. No frame is
// larger than chunkSize, so a slow link fails one chunk's deadline rather
// than a snapshot's, and a hostile peer cannot make a node allocate more
// than maxMessage.
const (
	chunkSize    = 1 << 20
	moreFlag     = 1 << 31
	maxMessage   = 256 << 20
	queueSize    = 4096
	dialTimeout  = time.Second
	writeTimeout = 5 * time.Second
	// idleTimeout closes an inbound connection that carried nothing for
	// this long (the sender dials again when it has something to send).
	idleTimeout = time.Minute
	// pieceTimeout bounds the wait for the next piece of a message.
	pieceTimeout = 10 * time.Second
	backoffMin   = 20 * time.Millisecond
	backoffMax   = time.Second
)

// outMsg is an encoded raftpb message for one peer.
type outMsg struct {
	b    []byte
	snap bool // a MsgSnap: its outcome goes to onSnapshot
}

// transport sends to and receives from the peers over TCP.
type transport struct {
	id uint64
	// onUnreachable is told that a message to a peer may be lost;
	// onSnapshot how sending a snapshot ended; onMessage gets every
	// inbound frame. They are called from the transport's goroutines.
	onUnreachable func(id uint64)
	onSnapshot    func(id uint64, ok bool)
	onMessage     func(b []byte) error

	mu    sync.Mutex
	peers map[uint64]*peer
	ln    net.Listener
	conns map[net.Conn]struct{}
	stop  chan struct{}
	wg    sync.WaitGroup
}

// peer is the outbound side to one member: a bounded queue drained by one
// goroutine over one connection.
type peer struct {
	id    uint64
	addr  string
	queue chan outMsg
	stop  chan struct{}
}

func newTransport(id uint64) *transport {
	return &transport{id: id, peers: map[uint64]*peer{}, conns: map[net.Conn]struct{}{}, stop: make(chan struct{})}
}

// listen accepts peers' connections on addr.
func (t *transport) listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	t.ln = ln
	t.wg.Add(1)
	go t.accept()
	return nil
}

func (t *transport) accept() {
	defer t.wg.Done()
	for {
		c, err := t.ln.Accept()
		if err != nil {
			select {
			case <-t.stop:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		t.mu.Lock()
		select {
		case <-t.stop:
			t.mu.Unlock()
			c.Close()
			return
		default:
		}
		t.conns[c] = struct{}{}
		t.mu.Unlock()
		t.wg.Add(1)
		go t.serve(c)
	}
}

// serve reads frames from one inbound connection until it fails.
func (t *transport) serve(c net.Conn) {
	defer t.wg.Done()
	defer func() {
		t.mu.Lock()
		delete(t.conns, c)
		t.mu.Unlock()
		c.Close()
	}()
	r := bufio.NewReaderSize(c, 64<<10)
	var from uint64
	for {
		b, err := readMessage(c, r)
		if err != nil {
			if from != 0 && !errors.Is(err, io.EOF) && !isClosed(err) {
				log.Printf("connection from %d (%s) closed: %v", from, c.RemoteAddr(), err)
			} else if from == 0 && !errors.Is(err, io.EOF) && !isClosed(err) {
				log.Printf("connection from %s refused: %v", c.RemoteAddr(), err)
			}
			return
		}
		f, err := t.check(b)
		if err != nil {
			log.Printf("connection from %s: bad message (%v); closing it", c.RemoteAddr(), err)
			return
		}
		if from == 0 {
			from = f
			log.Printf("connection from %d (%s)", from, c.RemoteAddr())
		}
		if err := t.onMessage(b); err != nil {
			rateLog("step", "message from %d refused: %v", f, err)
		}
	}
}

// check decodes the routing fields of an inbound message with raftlet's
// decoder: a frame that is not a raftpb message, or not for this node,
// closes the connection.
func (t *transport) check(b []byte) (uint64, error) {
	h, err := decodeHeader(b)
	if err != nil {
		return 0, err
	}
	if h.To != t.id {
		return 0, fmt.Errorf("message for %d, this is %d", h.To, t.id)
	}
	if h.From == 0 {
		return 0, errors.New("message from node 0")
	}
	return h.From, nil
}

// readMessage reads one message: one frame, or the pieces of a chunked one.
func readMessage(c net.Conn, r *bufio.Reader) ([]byte, error) {
	var msg []byte
	var hdr [4]byte
	for first := true; ; first = false {
		if first {
			_ = c.SetReadDeadline(time.Now().Add(idleTimeout))
		} else {
			_ = c.SetReadDeadline(time.Now().Add(pieceTimeout))
		}
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return nil, err
		}
		h := binary.BigEndian.Uint32(hdr[:])
		n := int(h &^ moreFlag)
		if n > chunkSize {
			return nil, fmt.Errorf("frame of %d bytes (at most %d)", n, chunkSize)
		}
		if len(msg)+n > maxMessage {
			return nil, fmt.Errorf("message over %d bytes", maxMessage)
		}
		_ = c.SetReadDeadline(time.Now().Add(pieceTimeout))
		start := len(msg)
		msg = append(msg, make([]byte, n)...)
		if _, err := io.ReadFull(r, msg[start:]); err != nil {
			return nil, err
		}
		if h&moreFlag == 0 {
			if len(msg) == 0 {
				return nil, errors.New("empty message")
			}
			return msg, nil
		}
	}
}

// writeMessage writes one message as one frame, or in chunks.
func writeMessage(c net.Conn, w *bufio.Writer, b []byte) error {
	var hdr [4]byte
	for {
		n := len(b)
		more := uint32(0)
		if n > chunkSize {
			n, more = chunkSize, moreFlag
		}
		_ = c.SetWriteDeadline(time.Now().Add(writeTimeout))
		binary.BigEndian.PutUint32(hdr[:], uint32(n)|more)
		if _, err := w.Write(hdr[:]); err != nil {
			return err
		}
		if _, err := w.Write(b[:n]); err != nil {
			return err
		}
		b = b[n:]
		if more == 0 {
			return nil
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
}

// setPeer makes addr the address of member id (starting its sender).
func (t *transport) setPeer(id uint64, addr string) {
	if id == t.id || addr == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.peers[id]; ok {
		if p.addr == addr {
			return
		}
		close(p.stop)
	}
	select {
	case <-t.stop:
		return
	default:
	}
	p := &peer{id: id, addr: addr, queue: make(chan outMsg, queueSize), stop: make(chan struct{})}
	t.peers[id] = p
	log.Printf("peer %d at %s", id, addr)
	t.wg.Add(1)
	go t.run(p)
}

// removePeer stops sending to id.
func (t *transport) removePeer(id uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.peers[id]; ok {
		close(p.stop)
		delete(t.peers, id)
		log.Printf("peer %d removed", id)
	}
}

// hasPeer reports whether id has an address.
func (t *transport) hasPeer(id uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.peers[id]
	return ok
}

// send queues b for id without blocking; false when it was dropped (no
// address, or the queue is full): raft retransmits.
func (t *transport) send(to uint64, b []byte, snap bool) bool {
	t.mu.Lock()
	p, ok := t.peers[to]
	t.mu.Unlock()
	if !ok {
		return false
	}
	select {
	case p.queue <- outMsg{b: b, snap: snap}:
		return true
	default:
		return false
	}
}

// run drains one peer's queue over one connection, dialling again with a
// capped exponential backoff after a failure. While the peer cannot be
// reached, what is queued is dropped (and reported) rather than kept.
func (t *transport) run(p *peer) {
	defer t.wg.Done()
	var c net.Conn
	var w *bufio.Writer
	// closed is closed once the peer has closed c (the peer never writes
	// on it, so a read returns only then).
	var closed chan struct{}
	backoff := backoffMin
	var nextDial time.Time
	closeConn := func() {
		if c != nil {
			c.Close()
			c, w = nil, nil
		}
	}
	defer closeConn()
	fail := func(m outMsg) {
		t.onUnreachable(p.id)
		if m.snap {
			t.onSnapshot(p.id, false)
		}
	}
	for {
		var m outMsg
		select {
		case <-t.stop:
			return
		case <-p.stop:
			return
		case m = <-p.queue:
		}
		if c != nil {
			select {
			case <-closed:
				// The peer closed the connection: it restarted, or shut
				// an idle one. A write would still succeed (the kernel
				// takes the bytes and the peer answers with a reset), so
				// this message would vanish, and raft may not send it
				// again for an election timeout (a vote, a vote
				// response). Dial again instead.
				closeConn()
			default:
			}
		}
		if c == nil {
			if time.Now().Before(nextDial) {
				fail(m)
				continue
			}
			conn, err := net.DialTimeout("tcp", p.addr, dialTimeout)
			if err != nil {
				rateLog(fmt.Sprint("dial", p.id), "cannot reach peer %d at %s: %v", p.id, p.addr, err)
				nextDial = time.Now().Add(backoff)
				backoff = min(2*backoff, backoffMax)
				fail(m)
				continue
			}
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetNoDelay(true)
			}
			log.Printf("connected to peer %d at %s", p.id, p.addr)
			c, w = conn, bufio.NewWriterSize(conn, 64<<10)
			closed = watchClose(&t.wg, conn)
			backoff = backoffMin
		}
		err := writeMessage(c, w, m.b)
		// Write what else is queued before flushing: one syscall for a
		// burst of messages.
		for err == nil && len(p.queue) > 0 && w.Buffered() < 256<<10 {
			if m.snap {
				break // report the snapshot once it is flushed
			}
			m = <-p.queue
			err = writeMessage(c, w, m.b)
		}
		if err == nil {
			_ = c.SetWriteDeadline(time.Now().Add(writeTimeout))
			err = w.Flush()
		}
		if err != nil {
			log.Printf("connection to peer %d lost: %v", p.id, err)
			closeConn()
			nextDial = time.Now().Add(backoff)
			backoff = min(2*backoff, backoffMax)
			fail(m)
			continue
		}
		if m.snap {
			t.onSnapshot(p.id, true)
		}
	}
}

// watchClose returns a channel that is closed once c can no longer be
// read: the peer closed it, or it was closed here. The peer never writes
// on an outbound connection; anything it does send is discarded.
func watchClose(wg *sync.WaitGroup, c net.Conn) chan struct{} {
	closed := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(closed)
		var b [64]byte
		for {
			if _, err := c.Read(b[:]); err != nil {
				return
			}
		}
	}()
	return closed
}

// close stops every goroutine and connection of the transport.
func (t *transport) close() {
	t.mu.Lock()
	select {
	case <-t.stop:
		t.mu.Unlock()
		return
	default:
	}
	close(t.stop)
	if t.ln != nil {
		t.ln.Close()
	}
	for c := range t.conns {
		c.Close()
	}
	t.mu.Unlock()
	t.wg.Wait()
}

func isClosed(err error) bool {
	return errors.Is(err, net.ErrClosed)
}

var (
	rateMu   sync.Mutex
	rateLast = map[string]time.Time{}
)

// rateLog logs at most once a second per key (a peer that is down, a
// hostile sender), so that the log stays one line per event.
func rateLog(key, format string, args ...any) {
	rateMu.Lock()
	now := time.Now()
	if now.Sub(rateLast[key]) < time.Second {
		rateMu.Unlock()
		return
	}
	rateLast[key] = now
	rateMu.Unlock()
	log.Printf(format, args...)
}
