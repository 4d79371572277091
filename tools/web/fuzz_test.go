package web

import (
	"net/netip"
	"testing"

	"github.com/sema-agent/sema"
)

// FuzzCheckURL attacks the URL check: whatever it accepts is an http(s) URL without
// credentials whose host is a name or a public address, never a number in another
// spelling; its own output is accepted again as the same host; AllowPrivate only ever
// accepts more; and every refusal carries one of the package's codes.
func FuzzCheckURL(f *testing.F) {
	for _, seed := range []string{
		"https://example.com/a?b=c#d", "http://127.0.0.1:8080/", "http://[::1]/", "http://0x7f000001/",
		"http://127.1/", "http://2130706433/", "file:///etc/passwd", "http://u:p@host/", "http://[fe80::1%25eth0]/",
		"http://[::ffff:127.0.0.1]/", "http://%31%32%37.0.0.1/", "HTTPS://EXAMPLE.COM.", "http://example.com:65535",
		"http://[64:ff9b::a00:1]/", "http://1.2.3.4.5/", "http:example.com", "//example.com", "http://ex\u00e4mple.de/",
		"http://[::]:0/", "http://127.0.0.1./", "https://8.8.8.8/", "http://a.b.c.0x10/",
	} {
		f.Add(seed)
	}
	codes := map[string]bool{CodeURLInvalid: true, CodeSchemeRefused: true, CodeCredentialsRefused: true, CodeHostAmbiguous: true, CodeAddressRefused: true}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := checkURL(raw, false)
		open, openErr := checkURL(raw, true)
		if err != nil {
			if !codes[sema.CodeOf(err)] {
				t.Fatalf("checkURL(%q) refused with the code %q: %v", raw, sema.CodeOf(err), err)
			}
			if openErr != nil && !codes[sema.CodeOf(openErr)] {
				t.Fatalf("checkURL(%q, allowPrivate) refused with the code %q", raw, sema.CodeOf(openErr))
			}
			return
		}
		if openErr != nil {
			t.Fatalf("checkURL(%q) accepts only without AllowPrivate: %v", raw, openErr)
		}
		if hostKey(u) != hostKey(open) {
			t.Fatalf("checkURL(%q) reads the host %q, or %q with AllowPrivate", raw, hostKey(u), hostKey(open))
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			t.Fatalf("checkURL(%q) accepted the scheme %q", raw, u.Scheme)
		}
		if u.User != nil {
			t.Fatalf("checkURL(%q) accepted credentials", raw)
		}
		host := u.Hostname()
		if host == "" {
			t.Fatalf("checkURL(%q) accepted a URL without a host", raw)
		}
		if a, ok := literalAddr(host); ok {
			if why := addressRefusal(a); why != "" {
				t.Fatalf("checkURL(%q) accepted %s, which is %s", raw, a, why)
			}
		} else if numericHost(host) {
			t.Fatalf("checkURL(%q) accepted the numeric host %q", raw, host)
		}
		// What the fetch requests is u's own spelling: it must mean the same host.
		again, err := checkURL(u.String(), false)
		if err != nil {
			t.Fatalf("checkURL(%q) accepted it, but refuses its own spelling %q: %v", raw, u.String(), err)
		}
		if hostKey(again) != hostKey(u) || portOf(again) != portOf(u) {
			t.Fatalf("checkURL(%q): %q reparses to host %q port %s, not %q port %s", raw, u.String(), hostKey(again), portOf(again), hostKey(u), portOf(u))
		}
	})
}

// FuzzAddressRefusal checks that every spelling of one IPv4 address meets the same
// answer — IPv4-mapped always, and the NAT64 and 6to4 forms whenever the address itself
// is refused — and that the dial-time check agrees with it.
func FuzzAddressRefusal(f *testing.F) {
	for _, seed := range [][4]byte{{127, 0, 0, 1}, {10, 1, 2, 3}, {8, 8, 8, 8}, {100, 64, 0, 1}, {169, 254, 169, 254}, {0, 0, 0, 0}, {255, 255, 255, 255}} {
		f.Add(seed[0], seed[1], seed[2], seed[3])
	}
	g := newGuard(&Config{})
	f.Fuzz(func(t *testing.T, a, b, c, d byte) {
		v4 := netip.AddrFrom4([4]byte{a, b, c, d})
		refused := addressRefusal(v4) != ""
		mapped := netip.AddrFrom16(v4.As16())
		if (addressRefusal(mapped) != "") != refused {
			t.Fatalf("%s and %s meet different answers", v4, mapped)
		}
		nat64 := netip.AddrFrom16([16]byte{0, 0x64, 0xff, 0x9b, 10: 0, 11: 0, 12: a, 13: b, 14: c, 15: d})
		sixto4 := netip.AddrFrom16([16]byte{0x20, 0x02, a, b, c, d, 15: 1})
		if refused && (addressRefusal(nat64) == "" || addressRefusal(sixto4) == "") {
			t.Fatalf("%s is refused but its NAT64 (%s) or 6to4 (%s) form is not", v4, nat64, sixto4)
		}
		for _, x := range []netip.Addr{v4, mapped, nat64, sixto4} {
			err := g.control("tcp", netip.AddrPortFrom(x, 443).String(), nil)
			if (err != nil) != (addressRefusal(x) != "") {
				t.Fatalf("the dialer and addressRefusal disagree on %s: %v", x, err)
			}
		}
	})
}
