// Package web holds WebFetch, the tool that reads a web page for the model: it fetches
// one http(s) URL, turns an HTML page into Markdown, and answers the call's prompt from
// the page through a Summarizer the runner supplies (or, without one, returns the
// Markdown itself). It judges no permission: the runner's gate decides every call before
// the tool runs, by the call's URL (WebFetch(domain:host) rules).
//
// # Invariants
//
//   - Only http and https URLs are fetched, and never one carrying credentials
//     (user:pass@host). A URL whose host is a number in another spelling than the dotted
//     quad (127.1, 0x7f000001, 2130706433) is refused, as resolvers disagree on what
//     such a host means. Unless Config.PlainHTTP, an http URL is fetched as https.
//   - No connection is made to an address that is not public — loopback, private,
//     link-local, unspecified, multicast, carrier-grade NAT (100.64.0.0/10), reserved,
//     the IPv6 equivalents (::1, fc00::/7, fe80::/10, …) and any IPv6 spelling that
//     carries such an IPv4 address (IPv4-mapped, NAT64, 6to4) — unless
//     Config.AllowPrivate. The check is made on the address the socket is about to
//     connect to, after name resolution, so a host that resolves to a private address,
//     a DNS answer that changes between two requests, and a redirect cannot reach one.
//     For the same reason no proxy from the environment is used: the check must see the
//     real peer.
//   - A redirect is followed only to the same site (the same host and port, or http
//     upgraded to https on the default ports), at most MaxRedirects times. A redirect to
//     another site is not followed: the answer names its target, so that a new call —
//     judged by the permission gate again — fetches it.
//   - At most Config.MaxBytes of the body are read (then the page is cut and the answer
//     says so), and the whole fetch, redirects included, ends after Config.Timeout.
//   - HTML and XHTML become Markdown, other text types pass as they are, and any other
//     type (images, PDF, archives, …) is refused with a result naming its content type.
//   - Every call answers with a tools.Result; a failure the model should see is an
//     error Result with a stable code (the Code constants), never a panic or a Go error.
package web
