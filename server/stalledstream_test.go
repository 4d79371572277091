package server_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/server"
)

// TestStalledEventStreamCutOff: a client opens a task's event stream and stops
// reading while the task writes more than the connection buffers; the server's write
// gives up after WriteTimeout, the handler returns and the tenant's request slot is
// free again, and the client never got the stream's end. Calibrated: with a stream's
// write deadline lifted instead of renewed per write, the slot was still held at the
// test's limit.
func TestStalledEventStreamCutOff(t *testing.T) {
	t.Run("http", func(t *testing.T) { testStalledStream(t, false) })
	// Over TLS the stream is an HTTP/2 stream, stalled by its flow-control window.
	t.Run("https", func(t *testing.T) { testStalledStream(t, true) })
}

func testStalledStream(t *testing.T, overTLS bool) {
	// The answer and the result that repeats it are 12 MB, past what the sockets (and an
	// HTTP/2 stream's window) hold for a client that does not read.
	text := strings.Repeat("stalled ", 6<<20/8)
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: text}}})
	o := server.HTTPOptions{WriteTimeout: time.Second, MaxRequestsPerTenant: 1}
	hc, scheme := &http.Client{Transport: &http.Transport{}}, "http://"
	if overTLS {
		var pool *x509.CertPool
		o.TLSCert, o.TLSKey, pool = selfSigned(t, t.TempDir())
		hc = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
		scheme = "https://"
	}
	s := serveWith(t, o, p)
	call := func(method, path, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, scheme+s.addr+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+s.token)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	var task struct {
		TaskID string `json:"task_id"`
	}
	// The task is created through the API's handler in this process: over HTTP/2 a POST
	// that outlasts the short WriteTimeout on a loaded machine is reset, which is not
	// what this test is about.
	post := httptest.NewRequest("POST", "/v1/tasks", strings.NewReader(`{"prompt":"say a lot"}`))
	post.Header.Set("Authorization", "Bearer "+s.token)
	created := httptest.NewRecorder()
	s.srv.Handler().ServeHTTP(created, post)
	decodeJSON(t, created.Result(), &task)
	if task.TaskID == "" {
		t.Fatal("no task")
	}
	stream := call("GET", "/v1/tasks/"+task.TaskID+"/events", "")
	defer stream.Body.Close()
	if stream.StatusCode != http.StatusOK {
		t.Fatalf("the stream: %d", stream.StatusCode)
	}
	// The stream is not read from here on. Its handler holds the tenant's one request
	// slot for as long as it runs.
	const limit = 20 * time.Second
	start := time.Now()
	for {
		// A poll may itself outlast the short WriteTimeout while the task's big events are
		// stored (over HTTP/2 the server then resets it): it says nothing, and is repeated.
		req, _ := http.NewRequest("GET", scheme+s.addr+"/v1/tasks/"+task.TaskID, nil)
		req.Header.Set("Authorization", "Bearer "+s.token)
		if resp, err := hc.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
			if resp.StatusCode != http.StatusTooManyRequests {
				t.Fatalf("the task: %d", resp.StatusCode)
			}
		}
		if time.Since(start) > limit {
			t.Fatalf("the stalled stream still held the tenant's slot after %s", limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("the stalled stream's handler returned %s after the stream opened", time.Since(start).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() { <-ctx.Done(); stream.Body.Close() }()
	got, _ := io.ReadAll(stream.Body)
	if strings.Contains(string(got), `"type":"result"`) {
		t.Fatalf("the client got the stream's end (%d bytes): its handler ended with the stream, not for the stall; the test proves nothing", len(got))
	}
}

// TestStalledEventStreamHoldsNoStore: while a client that stopped reading holds a
// stream's write (WriteTimeout is two minutes, so the stall outlasts the test's work),
// another tenant's task runs to its end and every request is answered; the stalled
// stream then delivers everything once read, so it was stalled, never ended.
// Calibrated: when a stream wrote its events while reading them from the store, the
// stalled write held SQLite's one connection, and the service answered nothing.
func TestStalledEventStreamHoldsNoStore(t *testing.T) {
	text := strings.Repeat("stalled ", 6<<20/8)
	p := scripted.New(scripted.Script{Threads: []scripted.Thread{
		{Match: "say a lot", Turns: []scripted.Turn{{Text: text}}},
		{Match: "say little", Turns: []scripted.Turn{{Text: "little"}}},
	}})
	s := serveWith(t, server.HTTPOptions{WriteTimeout: 2 * time.Minute}, p)
	other, err := s.srv.CreateToken(context.Background(), "u", s.base, server.TenantConfig{})
	if err != nil {
		t.Fatal(err)
	}
	// Polls give up after a while: a service that cannot answer is the failure.
	polls := &http.Client{Timeout: 20 * time.Second}
	call := func(hc *http.Client, token, method, path, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+s.addr+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s while a stream is stalled: %v", method, path, err)
		}
		return resp
	}
	waitCompleted := func(token, id string) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			var task struct {
				Status string `json:"status"`
			}
			decodeJSON(t, call(polls, token, "GET", "/v1/tasks/"+id, ""), &task)
			if task.Status == "completed" {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("task %s is %s while a stream is stalled", id, task.Status)
			}
		}
	}
	var big, small struct {
		TaskID string `json:"task_id"`
	}
	decodeJSON(t, call(polls, s.token, "POST", "/v1/tasks", `{"prompt":"say a lot"}`), &big)
	stream := call(stallingClient(), s.token, "GET", "/v1/tasks/"+big.TaskID+"/events", "")
	defer stream.Body.Close()
	// The stream is not read until the end. Once its task has ended, all of its 12 MB
	// are stored, and its writer is blocked: the buffers hold a few.
	waitCompleted(s.token, big.TaskID)
	decodeJSON(t, call(polls, other, "POST", "/v1/tasks", `{"prompt":"say little"}`), &small)
	waitCompleted(other, small.TaskID)
	got, err := io.ReadAll(stream.Body)
	if err != nil || !strings.Contains(string(got), `"type":"result"`) {
		t.Fatalf("the stalled stream, read at last: %d bytes, %v; want it whole, to its result", len(got), err)
	}
}

// stallingClient is an HTTP client whose connections take little before the kernel
// stops the sender: a client that does not read holds a server's write after a few
// kilobytes (the server's send buffer aside) rather than after the tens of megabytes
// loopback's receive buffers may grow to.
func stallingClient() *http.Client {
	d := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 16<<10) })
		return errors.Join(err, serr)
	}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}
