package web

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/sema-agent/sema"
)

// MaxURLLength is the longest URL WebFetch accepts, in bytes. Claude Code's WebFetch
// has the same bound; a longer URL is refused with CodeURLInvalid.
const MaxURLLength = 2000

// checkURL parses raw and refuses what WebFetch never fetches, whatever the deployment
// allows: a URL that does not parse or is not absolute, a scheme other than http and
// https, credentials, a port out of range, and a host spelled as a number in a form
// resolvers read differently. A host that is an IP literal is also judged as an
// address here (unless allowPrivate), so that the model learns why at once; the dialer
// judges every address again, as this check cannot see what a name resolves to.
func checkURL(raw string, allowPrivate bool) (*url.URL, error) {
	if len(raw) > MaxURLLength {
		return nil, sema.Errorf(CodeURLInvalid, "the URL is %d bytes long; WebFetch takes at most %d", len(raw), MaxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, sema.Errorf(CodeURLInvalid, "the URL does not parse: %v", err)
	}
	if u.Scheme == "" {
		return nil, sema.Errorf(CodeURLInvalid, "%q is not an absolute URL; give one starting with https://", raw)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, sema.Errorf(CodeSchemeRefused, "WebFetch fetches http and https URLs only, not %s:", u.Scheme).With("scheme", u.Scheme)
	}
	if u.User != nil {
		return nil, sema.Errorf(CodeCredentialsRefused, "the URL carries credentials (user:password@); WebFetch never sends them")
	}
	if u.Opaque != "" {
		return nil, sema.Errorf(CodeURLInvalid, "%q has no host; write %s://host/…", raw, u.Scheme)
	}
	host := u.Hostname()
	if host == "" {
		return nil, sema.Errorf(CodeURLInvalid, "%q has no host", raw)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, sema.Errorf(CodeURLInvalid, "the port %q is not between 1 and 65535", p)
		}
	}
	if a, ok := literalAddr(host); ok {
		if !allowPrivate {
			if why := addressRefusal(a); why != "" {
				return nil, refusedAddr(a, why)
			}
		}
		return u, nil
	}
	if numericHost(host) {
		return nil, sema.Errorf(CodeHostAmbiguous, "the host %q is a number in a form resolvers read differently; write the address as a dotted quad (1.2.3.4) or use the host's name", host).With("host", host)
	}
	return u, nil
}

// literalAddr reads host as an IP address. A trailing dot is dropped first, as a
// resolver drops it ("127.0.0.1." is 127.0.0.1).
func literalAddr(host string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(strings.TrimSuffix(host, "."))
	return a, err == nil
}

// numericHost reports a host the WHATWG URL standard, and the C library's inet_aton,
// read as an IPv4 address: its last label is a number (decimal, or hexadecimal after
// 0x). netip refuses every such spelling but the dotted quad, while a resolver may turn
// "127.1" or "0x7f000001" into 127.0.0.1, so what the name means depends on who reads
// it; WebFetch refuses it instead of guessing.
func numericHost(host string) bool {
	host = strings.TrimSuffix(host, ".")
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" {
		return false
	}
	if rest, ok := strings.CutPrefix(strings.ToLower(last), "0x"); ok {
		return strings.Trim(rest, "0123456789abcdef") == ""
	}
	return strings.Trim(last, "0123456789") == ""
}

// nonPublic are the ranges netip's predicates do not name that WebFetch still never
// connects to: none of them reaches a public web server, and several reach the machine
// itself or its network.
var nonPublic = []struct {
	prefix netip.Prefix
	why    string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "the IPv4 \"this network\" range"},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT space"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking space"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved IPv4 space"},
	{netip.MustParsePrefix("::/96"), "an IPv4-compatible IPv6 address"},
	{netip.MustParsePrefix("100::/64"), "the IPv6 discard range"},
	{netip.MustParsePrefix("fec0::/10"), "an IPv6 site-local address"},
	{netip.MustParsePrefix("2001::/32"), "a Teredo tunnel address"},
}

// Prefixes of IPv6 addresses that carry an IPv4 address a gateway may forward to: the
// embedded address is judged as if it had been given.
var (
	nat64Prefixes = []netip.Prefix{netip.MustParsePrefix("64:ff9b::/96"), netip.MustParsePrefix("64:ff9b:1::/48")}
	sixToFour     = netip.MustParsePrefix("2002::/16")
)

// addressRefusal says why WebFetch does not connect to a, or "" when it may. An
// IPv4-mapped address is the IPv4 address it maps, so the two spellings of one address
// always meet the same answer.
func addressRefusal(a netip.Addr) string {
	a = a.Unmap().WithZone("")
	switch {
	case !a.IsValid():
		return "not an address"
	case a.IsUnspecified():
		return "the unspecified address"
	case a.IsLoopback():
		return "a loopback address"
	case a.IsPrivate():
		return "a private address"
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast():
		return "a link-local address"
	case a.IsMulticast(), a.IsInterfaceLocalMulticast():
		return "a multicast address"
	}
	for _, p := range nonPublic {
		if p.prefix.Contains(a) {
			return p.why
		}
	}
	if a.Is6() {
		b := a.As16()
		for _, p := range nat64Prefixes {
			if p.Contains(a) {
				if why := addressRefusal(netip.AddrFrom4([4]byte(b[12:16]))); why != "" {
					return "a NAT64 address of " + why
				}
			}
		}
		if sixToFour.Contains(a) {
			if why := addressRefusal(netip.AddrFrom4([4]byte(b[2:6]))); why != "" {
				return "a 6to4 address of " + why
			}
		}
	}
	return ""
}

// refusedAddr is the error of an address WebFetch does not connect to.
func refusedAddr(a netip.Addr, why string) *sema.Error {
	return sema.Errorf(CodeAddressRefused, "WebFetch does not connect to %s, which is %s; the deployment may allow private addresses (AllowPrivate)", a, why).With("address", a.String())
}
