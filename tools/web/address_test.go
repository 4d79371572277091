package web

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/sema-agent/sema"
)

// fakeResolver answers from a table, and for a name with several answers gives the
// next one at each lookup (a DNS answer that changes: rebinding). A name it does not
// know fails: no test asks a real DNS server.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][][]netip.Addr
	asked   map[string]int
}

func resolver(answers map[string][][]netip.Addr) *fakeResolver {
	return &fakeResolver{answers: answers, asked: map[string]int{}}
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seq, ok := r.answers[host]
	if !ok {
		return nil, errors.New("no such host (test resolver)")
	}
	n := r.asked[host]
	r.asked[host]++
	return seq[min(n, len(seq)-1)], nil
}

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

// portOfServer is the port of a test server, to aim hostile URLs at it: were a check to
// let one through, the server would count the request.
func portOfServer(srv *site) string {
	return srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
}

// Every hostile URL is refused with a code, under the default configuration, and none
// reaches the server — which listens on 127.0.0.1, as most of these aim at.
func TestHostileURLsRefused(t *testing.T) {
	t.Parallel()
	srv := serve(t, body("text/plain", "secret"))
	port := portOfServer(srv)
	res := resolver(map[string][][]netip.Addr{
		"loopback.test": {addrs("127.0.0.1")},
		"mapped.test":   {addrs("::ffff:127.0.0.1")},
		"metadata.test": {addrs("169.254.169.254")},
		"mixed.test":    {addrs("10.0.0.1", "::1")},
	})
	for _, tc := range []struct{ url, code string }{
		{"file:///etc/passwd", CodeSchemeRefused},
		{"FILE:///etc/passwd", CodeSchemeRefused},
		{"ftp://example.com/x", CodeSchemeRefused},
		{"gopher://127.0.0.1:" + port + "/", CodeSchemeRefused},
		{"javascript:alert(1)", CodeSchemeRefused},
		{"data:text/html,<h1>x</h1>", CodeSchemeRefused},
		{"example.com/page", CodeURLInvalid},
		{"//example.com/page", CodeURLInvalid},
		{"http:example.com", CodeURLInvalid},
		{"http:///path", CodeURLInvalid},
		{"http://example.com:99999/", CodeURLInvalid},
		{"http://example.com:0/", CodeURLInvalid},
		{"https://example.com/" + strings.Repeat("a", MaxURLLength), CodeURLInvalid},
		{"http://exa mple.com/", CodeURLInvalid},
		{" http://127.0.0.1:" + port + "/", CodeURLInvalid},
		{"http://user:pass@example.com/", CodeCredentialsRefused},
		{"http://user@example.com/", CodeCredentialsRefused},
		{"http://:@example.com/", CodeCredentialsRefused},
		{"http://127.0.0.1:" + port + "/", CodeAddressRefused},
		{"HTTP://127.0.0.1:" + port + "/", CodeAddressRefused},
		{"http://127.0.0.1.:" + port + "/", CodeAddressRefused},
		{"http://[::1]/", CodeAddressRefused},
		{"http://[::1]:" + port + "/", CodeAddressRefused},
		{"http://[0:0:0:0:0:0:0:1]/", CodeAddressRefused},
		{"http://[::ffff:127.0.0.1]:" + port + "/", CodeAddressRefused},
		{"http://[::ffff:7f00:1]/", CodeAddressRefused},
		{"http://[::127.0.0.1]/", CodeAddressRefused},
		{"http://[64:ff9b::7f00:1]/", CodeAddressRefused},
		{"http://[2002:7f00:1::]/", CodeAddressRefused},
		{"http://[fd12:3456::1]/", CodeAddressRefused},
		{"http://[fe80::1%25eth0]/", CodeAddressRefused},
		{"http://[ff02::1]/", CodeAddressRefused},
		{"http://[::]/", CodeAddressRefused},
		{"http://0.0.0.0:" + port + "/", CodeAddressRefused},
		{"http://10.0.0.1/", CodeAddressRefused},
		{"http://172.16.5.4/", CodeAddressRefused},
		{"http://192.168.1.1/", CodeAddressRefused},
		{"http://169.254.169.254/latest/meta-data/", CodeAddressRefused},
		{"http://100.64.0.1/", CodeAddressRefused},
		{"http://100.127.255.254/", CodeAddressRefused},
		{"http://224.0.0.1/", CodeAddressRefused},
		{"http://255.255.255.255/", CodeAddressRefused},
		{"http://0x7f000001:" + port + "/", CodeHostAmbiguous},
		{"http://0X7F000001/", CodeHostAmbiguous},
		{"http://127.1:" + port + "/", CodeHostAmbiguous},
		{"http://127.0.1/", CodeHostAmbiguous},
		{"http://2130706433:" + port + "/", CodeHostAmbiguous},
		{"http://017700000001/", CodeHostAmbiguous},
		{"http://0177.0.0.1/", CodeHostAmbiguous},
		{"http://127.000.000.001/", CodeHostAmbiguous},
		{"http://0x7f.0.0.1/", CodeHostAmbiguous},
		{"http://1.2.3.4.5/", CodeHostAmbiguous},
		{"http://example.0x10/", CodeHostAmbiguous},
		{"http://%31%32%37.0.0.1:" + port + "/", CodeURLInvalid},
		{"http://loopback.test:" + port + "/", CodeAddressRefused},
		{"http://mapped.test:" + port + "/", CodeAddressRefused},
		{"http://metadata.test/latest/meta-data/", CodeAddressRefused},
		{"http://mixed.test:" + port + "/", CodeAddressRefused},
		{"http://unknown.test/", CodeFetchFailed},
	} {
		t.Run(tc.url, func(t *testing.T) {
			t.Parallel()
			r := call(t, New(Config{PlainHTTP: true, Resolver: res}), tc.url, "read it")
			wantCode(t, r, tc.code)
		})
	}
	t.Cleanup(func() {
		if n := srv.hits.Load(); n != 0 {
			t.Errorf("hostile URLs reached the server %d times", n)
		}
	})
}

// Without AllowPrivate, the server on 127.0.0.1 is out of reach by its own URL.
func TestLoopbackRefusedByDefault(t *testing.T) {
	t.Parallel()
	srv := serve(t, body("text/plain", "secret"))
	r := call(t, New(Config{PlainHTTP: true}), srv.URL, "read it")
	wantCode(t, r, CodeAddressRefused)
	if !strings.Contains(r.TextOf(), "127.0.0.1") || !strings.Contains(r.TextOf(), "loopback") || strings.Contains(r.TextOf(), "secret") {
		t.Fatalf("answer: %s", r.TextOf())
	}
	if srv.hits.Load() != 0 {
		t.Fatal("the server was reached")
	}
}

// The guard judges every connection, not the URL: a name that resolves to a refused
// address, an answer that changes between two requests of one call (DNS rebinding),
// and a name with a refused and an admitted address.
func TestDialTimeCheck(t *testing.T) {
	t.Parallel()
	onlyServer := func(a netip.Addr) bool { return a == netip.MustParseAddr("127.0.0.1") }
	for _, tc := range []struct {
		name    string
		answers [][]netip.Addr
		path    string
		code    string
		hits    int64
	}{
		{name: "admitted address", answers: [][]netip.Addr{addrs("127.0.0.1")}, path: "/", hits: 1},
		{name: "refused address", answers: [][]netip.Addr{addrs("127.0.0.2")}, path: "/", code: CodeAddressRefused},
		{name: "rebinding between a redirect's two requests", answers: [][]netip.Addr{addrs("127.0.0.1"), addrs("10.1.2.3")}, path: "/hop", code: CodeAddressRefused, hits: 1},
		{name: "rebinding to IPv4-mapped loopback", answers: [][]netip.Addr{addrs("127.0.0.1"), addrs("::ffff:127.0.0.2")}, path: "/hop", code: CodeAddressRefused, hits: 1},
		{name: "a refused address is skipped for an admitted one", answers: [][]netip.Addr{addrs("10.0.0.1", "127.0.0.1")}, path: "/", hits: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/hop" {
					http.Redirect(w, r, "/final", http.StatusFound)
					return
				}
				body("text/plain", "served")(w, r)
			})
			cfg := Config{PlainHTTP: true, Resolver: resolver(map[string][][]netip.Addr{"site.test": tc.answers}), testAllow: onlyServer}
			r := call(t, New(cfg), "http://site.test:"+portOfServer(srv)+tc.path, "read it")
			if tc.code != "" {
				wantCode(t, r, tc.code)
			} else if got := wantOK(t, r); !strings.Contains(got, "served") {
				t.Fatalf("answer: %s", got)
			}
			if got := srv.hits.Load(); got != tc.hits {
				t.Fatalf("the server answered %d requests, want %d", got, tc.hits)
			}
		})
	}
}

// A hostname's www. variant is another host: a rule for one does not name the other,
// so the redirect is reported, not followed.
func TestRedirectToWWWIsAnotherHost(t *testing.T) {
	t.Parallel()
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		_, port, _ := net.SplitHostPort(r.Host)
		http.Redirect(w, r, "http://www.docs.test:"+port+"/", http.StatusMovedPermanently)
	})
	cfg := loopback()
	cfg.Resolver = resolver(map[string][][]netip.Addr{"docs.test": {addrs("127.0.0.1")}, "www.docs.test": {addrs("127.0.0.1")}})
	got := wantOK(t, call(t, New(cfg), "http://docs.test:"+portOfServer(srv)+"/", "read it"))
	if !strings.Contains(got, "Redirect URL: http://www.docs.test:"+portOfServer(srv)+"/") || srv.hits.Load() != 1 {
		t.Fatalf("hits %d, answer:\n%s", srv.hits.Load(), got)
	}
}

func TestControlJudgesTheAddress(t *testing.T) {
	t.Parallel()
	g := newGuard(&Config{})
	for _, tc := range []struct {
		address string
		refused bool
	}{
		{"127.0.0.1:80", true},
		{"[::1]:443", true},
		{"[::ffff:10.0.0.1]:80", true},
		{"[fe80::1%eth0]:80", true},
		{"169.254.169.254:80", true},
		{"93.184.216.34:443", false},
		{"[2606:4700:4700::1111]:443", false},
		{"not an address", true},
		{"example.com:80", true},
	} {
		err := g.control("tcp", tc.address, nil)
		if (err != nil) != tc.refused {
			t.Errorf("control(%q) = %v, want refused=%v", tc.address, err, tc.refused)
		}
		if err != nil && sema.CodeOf(err) != CodeAddressRefused {
			t.Errorf("control(%q) code %q", tc.address, sema.CodeOf(err))
		}
	}
	if err := newGuard(&Config{AllowPrivate: true}).control("tcp", "127.0.0.1:80", nil); err != nil {
		t.Fatalf("AllowPrivate still refuses loopback: %v", err)
	}
}

func TestAddressRefusal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr    string
		refused bool
	}{
		{"8.8.8.8", false},
		{"1.1.1.1", false},
		{"93.184.216.34", false},
		{"100.63.255.255", false},
		{"100.128.0.0", false},
		{"172.15.255.255", false},
		{"172.32.0.0", false},
		{"2606:4700:4700::1111", false},
		{"2a00:1450:4001:80b::200e", false},
		{"64:ff9b::808:808", false},   // NAT64 of 8.8.8.8
		{"2002:808:808::1", false},    // 6to4 of 8.8.8.8
		{"::ffff:8.8.8.8", false},     // mapped public
		{"0.0.0.0", true},             // unspecified
		{"0.1.2.3", true},             // this network
		{"127.0.0.1", true},           // loopback
		{"127.255.255.254", true},     // loopback
		{"10.0.0.1", true},            // private
		{"172.16.0.1", true},          // private
		{"172.31.255.255", true},      // private
		{"192.168.0.1", true},         // private
		{"169.254.169.254", true},     // link-local (cloud metadata)
		{"100.64.0.0", true},          // CGNAT
		{"100.127.255.255", true},     // CGNAT
		{"192.0.0.8", true},           // IETF protocol assignments
		{"198.18.0.1", true},          // benchmarking
		{"224.0.0.251", true},         // multicast
		{"239.255.255.250", true},     // multicast
		{"240.0.0.1", true},           // reserved
		{"255.255.255.255", true},     // broadcast
		{"::", true},                  // unspecified
		{"::1", true},                 // loopback
		{"::ffff:127.0.0.1", true},    // IPv4-mapped loopback
		{"::ffff:192.168.1.1", true},  // IPv4-mapped private
		{"::ffff:100.64.1.1", true},   // IPv4-mapped CGNAT
		{"::7f00:1", true},            // IPv4-compatible
		{"fc00::1", true},             // ULA
		{"fdff:ffff::1", true},        // ULA
		{"fe80::1", true},             // link-local
		{"fe80::1%eth0", true},        // link-local with a zone
		{"febf::1", true},             // link-local
		{"fec0::1", true},             // site-local
		{"ff02::1", true},             // multicast
		{"ff01::1", true},             // interface-local multicast
		{"100::1", true},              // discard
		{"64:ff9b::7f00:1", true},     // NAT64 of loopback
		{"64:ff9b::a00:1", true},      // NAT64 of 10.0.0.1
		{"64:ff9b:1::a00:1", true},    // local-use NAT64 of 10.0.0.1
		{"2002:a00:1::", true},        // 6to4 of 10.0.0.1
		{"2002:a9fe:a9fe::1", true},   // 6to4 of 169.254.169.254
		{"2001:0:4136:e378::1", true}, // Teredo
	} {
		got := addressRefusal(netip.MustParseAddr(tc.addr))
		if (got != "") != tc.refused {
			t.Errorf("addressRefusal(%s) = %q, want refused=%v", tc.addr, got, tc.refused)
		}
	}
}

func TestNumericHost(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"127.1": true, "0x7f000001": true, "2130706433": true, "0x": true, "1.2.3.4.5": true,
		"example.0x1f": true, "a.b.123": true, "2130706433.": true,
		"example.com": false, "1e100.net": false, "0x7f.example": false, "123.example.org": false,
		"xn--bcher-kva.example": false, "localhost": false, "0xg": false, "": false,
	} {
		if got := numericHost(host); got != want {
			t.Errorf("numericHost(%q) = %v, want %v", host, got, want)
		}
	}
}

// AllowPrivate opens addresses, never schemes or credentials: those stay refused.
func TestAllowPrivateOpensAddressesOnly(t *testing.T) {
	t.Parallel()
	tool := New(Config{AllowPrivate: true, PlainHTTP: true})
	for url, code := range map[string]string{
		"file:///etc/passwd":         CodeSchemeRefused,
		"http://u:p@127.0.0.1/":      CodeCredentialsRefused,
		"http://0x7f000001/":         CodeHostAmbiguous,
		"http://127.1/":              CodeHostAmbiguous,
		"https://example.com:70000/": CodeURLInvalid,
	} {
		wantCode(t, call(t, tool, url, "p"), code)
	}
}
