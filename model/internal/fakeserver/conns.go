package fakeserver

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// Conns follows the connections of a server the test has not started yet: how many
// were opened, and how many wait idle for a next request.
type Conns struct {
	mu      sync.Mutex
	dialled int
	states  map[net.Conn]http.ConnState
}

// WatchConns makes srv report its connections to the Conns it returns; call it before
// srv.Start.
func WatchConns(srv *httptest.Server) *Conns {
	c := &Conns{states: map[net.Conn]http.ConnState{}}
	srv.Config.ConnState = func(conn net.Conn, s http.ConnState) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if s == http.StateNew {
			c.dialled++
		}
		c.states[conn] = s
	}
	return c
}

// Dialled is how many connections were opened.
func (c *Conns) Dialled() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dialled
}

func (c *Conns) idle() (n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.states {
		if s == http.StateIdle {
			n++
		}
	}
	return n
}

// Waves runs fn n times at once, twice over. Between the waves it waits (up to 5 s)
// until n connections are idle, and a little longer for the client to take them back:
// a client reads a response to its end, and so frees its connection, a moment after
// the last event.
func (c *Conns) Waves(n int, fn func()) {
	for range 2 {
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range n {
			wg.Go(func() {
				<-start
				fn()
			})
		}
		close(start)
		wg.Wait()
		for deadline := time.Now().Add(5 * time.Second); c.idle() < n && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
