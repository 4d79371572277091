package web

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"syscall"
	"time"

	"github.com/sema-agent/sema"
)

// Resolver looks up the addresses of a host name. *net.Resolver (net.DefaultResolver)
// is one; tests give their own, so that no test asks a real DNS server.
type Resolver interface {
	// LookupNetIP returns the addresses of host for network "ip", "ip4" or "ip6".
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// guard is WebFetch's dialer: it resolves the host itself and connects to the
// addresses in turn, and its Control hook refuses a socket whose peer is not public
// just before it connects. The hook is the authority: it sees the address the kernel
// is given, whoever resolved it.
type guard struct {
	resolver     Resolver
	allowPrivate bool
	// allow, in tests only, admits addresses that are not public (a loopback server)
	// without admitting all of them, so that a test can see others refused.
	allow  func(netip.Addr) bool
	dialer net.Dialer
}

func newGuard(cfg *Config) *guard {
	g := &guard{resolver: cfg.Resolver, allowPrivate: cfg.AllowPrivate, allow: cfg.testAllow}
	if g.resolver == nil {
		g.resolver = net.DefaultResolver
	}
	g.dialer = net.Dialer{Timeout: 10 * time.Second, Control: g.control}
	return g
}

// refusal says why the guard does not connect to a, or "" when it may.
func (g *guard) refusal(a netip.Addr) string {
	if g.allowPrivate || g.allow != nil && g.allow(a.Unmap().WithZone("")) {
		return ""
	}
	return addressRefusal(a)
}

// control runs after the socket is made and before it connects. An address it cannot
// read is refused: a dialer that connects to something the guard could not judge
// would defeat it.
func (g *guard) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return sema.Errorf(CodeAddressRefused, "WebFetch cannot read the address %q it was about to connect to, so it does not connect", address)
	}
	if why := g.refusal(ap.Addr()); why != "" {
		return refusedAddr(ap.Addr(), why)
	}
	return nil
}

// dial connects to address ("host:port"), trying each address of the host in turn.
// An address the guard refuses is skipped; when every one is refused, the refusal of
// the first is the answer, so that the model learns why rather than that nothing
// answered.
func (g *guard) dial(ctx context.Context, network, address string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, sema.Errorf(CodeURLInvalid, "the port %q is not a port number", portText)
	}
	var addrs []netip.Addr
	if a, ok := literalAddr(host); ok {
		addrs = []netip.Addr{a}
	} else {
		addrs, err = g.resolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, sema.Errorf(CodeFetchFailed, "the host %s could not be resolved: %v", host, err)
		}
		if len(addrs) == 0 {
			return nil, sema.Errorf(CodeFetchFailed, "the host %s has no address", host)
		}
	}
	var refused, failed error
	for _, a := range addrs {
		conn, err := g.dialer.DialContext(ctx, network, netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return conn, nil
		}
		var se *sema.Error
		switch {
		case errors.As(err, &se) && se.Code == CodeAddressRefused:
			if refused == nil {
				refused = se
			}
		case failed == nil:
			failed = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	if failed != nil {
		return nil, failed
	}
	return nil, refused
}

// transport is the HTTP transport of one WebFetch tool. It keeps no idle connection, so
// nothing outlives a call, and uses no proxy from the environment, whose address the
// guard would judge in place of the page's.
func (g *guard) transport() *http.Transport {
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            g.dial,
		ForceAttemptHTTP2:      true,
		DisableKeepAlives:      true,
		TLSHandshakeTimeout:    10 * time.Second,
		MaxResponseHeaderBytes: 1 << 20,
	}
}
