package httpclient

import (
	"bytes"
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
)

// echoSum answers each request with the sha256 of its body, read through a small
// buffer (io.Copy's own would be 32 KiB of this process's allocation per request).
func echoSum() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		io.CopyBuffer(h, r.Body, make([]byte, 1024))
		w.Write(h.Sum(nil))
	})
}

func post(t testing.TB, c *http.Client, url string, body []byte) []byte {
	t.Helper()
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// Bodies of every size around the transport's 4 KiB write buffer and the copy buffer's
// 32 KiB arrive whole, over connections reused from request to request.
func TestBodiesArriveWhole(t *testing.T) {
	srv := httptest.NewServer(echoSum())
	defer srv.Close()
	c := &http.Client{Transport: Transport()}
	for _, n := range []int{0, 1, 4095, 4096, 4097, 32<<10 - 1, 32 << 10, 32<<10 + 1, 100 << 10, 1 << 20} {
		body := bytes.Repeat([]byte{byte(n)}, n)
		for i := range body {
			body[i] ^= byte(i)
		}
		want := sha256.Sum256(body)
		if got := post(t, c, srv.URL, body); !bytes.Equal(got, want[:]) {
			t.Errorf("a body of %d bytes arrived changed", n)
		}
	}
}

// A request body over HTTP/1.1 costs no copy buffer of its own. Measured here, 64 KiB
// bodies: about 41 KB allocated per request without copyConn (io.Copy's 32 KiB
// buffer), 10 KB with it (the request and response values, the server's side).
func TestBodyCopyAllocatesNoBuffer(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop buffers on purpose; allocation counts mean nothing under it")
	}
	srv := httptest.NewServer(echoSum())
	defer srv.Close()
	c := &http.Client{Transport: Transport()}
	body := bytes.Repeat([]byte("x"), 64<<10)
	post(t, c, srv.URL, body) // the connection and the pool's first buffer
	const n = 100
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		post(t, c, srv.URL, body)
	}
	runtime.ReadMemStats(&after)
	// The server in this process reads each body too; it allocates the same with or
	// without copyConn.
	perRequest := (after.TotalAlloc - before.TotalAlloc) / n
	t.Logf("%d bytes per request", perRequest)
	if perRequest > 24<<10 {
		t.Errorf("each request allocated %d bytes; want under 24 KiB (the copy buffer alone was 32 KiB)", perRequest)
	}
}

// HTTP/2 is still negotiated over TLS with the transport's own dialer.
func TestHTTP2OverTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(echoSum())
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	tr := Transport()
	tr.TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
	c := &http.Client{Transport: tr}
	resp, err := c.Post(srv.URL, "application/json", bytes.NewReader(bytes.Repeat([]byte("y"), 100<<10)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.ProtoMajor != 2 {
		t.Errorf("the response came over %s; want HTTP/2", resp.Proto)
	}
}
