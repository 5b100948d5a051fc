package harness

import (
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TCPProxy forwards a local port to a service, so a test can take the
// service away from floe alone: [TCPProxy.Down] cuts every connection and
// refuses new ones, as a stopped server does, until [TCPProxy.Up]. The
// service itself keeps running for the readers and for other tests.
type TCPProxy struct {
	t      testing.TB
	target string
	// Addr is the proxy's host:port, to put in floe's config in place of
	// the target's.
	Addr string

	mu    sync.Mutex
	ln    net.Listener // nil while down
	conns map[net.Conn]bool
}

// StartTCPProxy listens on a free 127.0.0.1 port and forwards each
// connection to target (host:port). The proxy goes down when the test
// ends.
func StartTCPProxy(t testing.TB, target string) *TCPProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &TCPProxy{t: t, target: target, Addr: ln.Addr().String(), conns: map[net.Conn]bool{}}
	p.serve(ln)
	t.Cleanup(p.Down)
	return p
}

func (p *TCPProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(c)
		}
	}()
}

func (p *TCPProxy) forward(c net.Conn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	if !p.track(c, s) {
		return
	}
	var wg sync.WaitGroup
	for _, pair := range [][2]net.Conn{{c, s}, {s, c}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = io.Copy(pair[0], pair[1])
			_ = pair[0].Close()
			_ = pair[1].Close()
		}()
	}
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, s)
	p.mu.Unlock()
}

// track records both ends, or closes them when the proxy went down.
func (p *TCPProxy) track(c, s net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		_, _ = c.Close(), s.Close()
		return false
	}
	p.conns[c], p.conns[s] = true, true
	return true
}

// Down closes the listener and every forwarded connection. It may be
// called when already down.
func (p *TCPProxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// Up listens on Addr again. Call it from the test's goroutine, after
// Down: it fails the test when the port cannot be had back.
func (p *TCPProxy) Up() {
	p.t.Helper()
	var ln net.Listener
	var err error
	for range 50 { // the port was just closed; Linux frees a listener's port at once
		if ln, err = net.Listen("tcp", p.Addr); err == nil || !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		p.t.Fatalf("proxy: listen again on %s: %v", p.Addr, err)
	}
	p.serve(ln)
}
