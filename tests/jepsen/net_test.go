package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"reflect"
	"testing"
	"time"
)

// echoServer answers every line with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return l.Addr().String()
}

// roundTrip sends a line through addr and waits up to wait for the echo.
func roundTrip(addr string, wait time.Duration) error {
	c, err := net.DialTimeout("tcp", addr, wait)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(wait))
	if _, err := fmt.Fprintf(c, "ping\n"); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "ping\n" {
		return fmt.Errorf("echo %q", line)
	}
	return nil
}

func TestNetFaults(t *testing.T) {
	up := echoServer(t)
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	listen := fmt.Sprintf("127.0.0.1:%d", ports[0])
	n := NewNet()
	defer n.Close()
	if err := n.AddLink(1, 2, listen, up); err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(listen, 5*time.Second); err != nil {
		t.Fatalf("healthy link: %v", err)
	}

	// A connection open before the blackhole loses its bytes, and is reset
	// when the link heals so no frame is spliced from two halves.
	before, err := net.Dial("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	defer before.Close()
	if err := n.Set(1, 2, LinkDrop, 0); err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(listen, 300*time.Millisecond); err == nil {
		t.Fatal("a blackholed link passed data")
	}
	_, _ = fmt.Fprintf(before, "lost\n")
	if err := n.Set(1, 2, LinkOK, 0); err != nil {
		t.Fatal(err)
	}
	_ = before.SetDeadline(time.Now().Add(5 * time.Second))
	if line, err := bufio.NewReader(before).ReadString('\n'); err == nil {
		t.Fatalf("a connection that lost bytes survived the heal and read %q", line)
	}
	if err := roundTrip(listen, 5*time.Second); err != nil {
		t.Fatalf("healed blackhole: %v", err)
	}

	// A connection open before the cut is reset at its next byte; new
	// connections pass nothing; the port stays held by the proxy, so the
	// heal cannot lose it to another process.
	open, err := net.Dial("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	if err := n.Set(1, 2, LinkCut, 0); err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(listen, 300*time.Millisecond); err == nil {
		t.Fatal("a cut link passed data")
	}
	_, _ = fmt.Fprintf(open, "cut\n")
	_ = open.SetDeadline(time.Now().Add(5 * time.Second))
	if line, err := bufio.NewReader(open).ReadString('\n'); err == nil {
		t.Fatalf("a connection open before the cut passed %q", line)
	}
	if l, err := net.Listen("tcp", listen); err == nil {
		l.Close()
		t.Fatal("a cut link released its port")
	}
	if n.Fault(1, 2) != LinkCut {
		t.Fatalf("fault is %v", n.Fault(1, 2))
	}
	if err := n.HealAll(); err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(listen, 5*time.Second); err != nil {
		t.Fatalf("healed cut: %v", err)
	}

	// Delay passes the data, later; no timing asserted.
	if err := n.Set(1, 2, LinkDelay, 30); err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(listen, 5*time.Second); err != nil {
		t.Fatalf("delayed link: %v", err)
	}
	if err := n.HealAll(); err != nil {
		t.Fatal(err)
	}
	if err := n.Set(3, 1, LinkCut, 0); err == nil {
		t.Fatal("a fault on a link that does not exist was accepted")
	}
}

func TestScheduleReplayableBySeed(t *testing.T) {
	a := Schedule(42, 3, 2*time.Minute, false, nil)
	b := Schedule(42, 3, 2*time.Minute, false, nil)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed drew two schedules")
	}
	if reflect.DeepEqual(a, Schedule(43, 3, 2*time.Minute, false, nil)) {
		t.Fatal("two seeds drew the same schedule")
	}
	var total time.Duration
	kinds := map[FaultKind]bool{}
	for _, s := range a {
		total += s.Hold + s.Quiet
		kinds[s.Kind] = true
		for _, m := range s.Minority {
			if m < 1 || m > 3 {
				t.Fatalf("step %v names node %d", s, m)
			}
		}
		if s.Kind == FaultPartition && len(s.Minority) != 1 {
			t.Fatalf("a 3-node minority of %d: %v", len(s.Minority), s)
		}
	}
	if total < 2*time.Minute {
		t.Fatalf("schedule covers %v", total)
	}
	if len(a) >= len(AllFaults) && len(kinds) != len(AllFaults) {
		t.Fatalf("%d steps drew only %d kinds of fault", len(a), len(kinds))
	}
	st := Schedule(7, 3, time.Minute, true, nil)
	if st[0].Kind != FaultIsolateLeader {
		t.Fatalf("the stale-read schedule starts with %v", st[0])
	}
}

func TestFreePortsBelowEphemeralRange(t *testing.T) {
	ports, err := freePorts(12)
	if err != nil {
		t.Fatal(err)
	}
	low := ephemeralLow()
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Fatalf("port %d handed out twice: %v", p, ports)
		}
		seen[p] = true
		if low > reservedBase+100 && (p < reservedBase || p >= low) {
			t.Fatalf("port %d is not below the ephemeral range (from %d): %v", p, low, ports)
		}
	}
}
