package httpapi

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// The headers a trusted proxy may record the client in (TRUSTED_PROXY_HEADER).
const (
	HeaderXForwardedFor = "X-Forwarded-For"
	HeaderForwarded     = "Forwarded"
)

// Proxies are the addresses whose word on a request's client the API takes
// (TRUSTED_PROXIES): the ingress controller or load balancer in front of it,
// and the one header they append the client to (TRUSTED_PROXY_HEADER).
// Behind them every connection comes from a proxy, so without them every
// client shares the proxy's address and its bound on unknown API keys.
// The zero value trusts no proxy: the connection's peer is the client.
type Proxies struct {
	nets []netip.Prefix
	// header is the only header read: the other one is the client's to
	// write, and a proxy that does not append to it passes it on as sent.
	header string
}

// ParseProxies reads addresses and CIDR ranges ("10.0.0.0/8", "127.0.0.1")
// and the header they append to: X-Forwarded-For or Forwarded, in any case.
func ParseProxies(list []string, header string) (Proxies, error) {
	p := Proxies{}
	switch {
	case strings.EqualFold(strings.TrimSpace(header), HeaderXForwardedFor):
		p.header = HeaderXForwardedFor
	case strings.EqualFold(strings.TrimSpace(header), HeaderForwarded):
		p.header = HeaderForwarded
	default:
		return Proxies{}, fmt.Errorf("TRUSTED_PROXY_HEADER=%q: want %s or %s", header, HeaderXForwardedFor, HeaderForwarded)
	}
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !strings.Contains(s, "/") {
			a, err := netip.ParseAddr(s)
			if err != nil {
				return Proxies{}, fmt.Errorf("TRUSTED_PROXIES: %q is not an address or a CIDR range", s)
			}
			s = netip.PrefixFrom(a, a.BitLen()).String()
		}
		pre, err := netip.ParsePrefix(s)
		if err != nil {
			return Proxies{}, fmt.Errorf("TRUSTED_PROXIES: %q is not an address or a CIDR range", s)
		}
		p.nets = append(p.nets, pre.Masked())
	}
	return p, nil
}

func (p Proxies) trusted(a netip.Addr) bool {
	a = a.Unmap()
	for _, pre := range p.nets {
		if pre.Contains(a) {
			return true
		}
	}
	return false
}

// maxHops bounds the forwarded addresses read from one request.
const maxHops = 20

// ClientAddr is the address of the client that sent r: the connection's peer,
// unless that is a trusted proxy; then the nearest address in the chain the
// proxies appended to their header (read from the right) that is not a
// trusted proxy. Addresses a client wrote itself sit left of the first
// untrusted hop, or in the header the proxies do not append to, and are never
// believed.
func (p Proxies) ClientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil || !p.trusted(peer) {
		return host
	}
	hops := p.chain(r.Header)
	for i := len(hops) - 1; i >= 0 && i >= len(hops)-maxHops; i-- {
		a, err := netip.ParseAddr(hops[i])
		if err != nil {
			return host // a hop we cannot read: the last proxy's word ends there
		}
		if !p.trusted(a) {
			return a.Unmap().String()
		}
	}
	return host
}

// chain lists the client addresses the proxies recorded in their header,
// oldest first; several instances of it are one list, in order (RFC 7239
// section 7.1, and X-Forwarded-For as proxies write it).
func (p Proxies) chain(h http.Header) []string {
	var hops []string
	for _, v := range h.Values(p.header) {
		for _, elem := range strings.Split(v, ",") {
			if p.header == HeaderForwarded {
				hops = append(hops, forwardedFor(elem))
				continue
			}
			hops = append(hops, strings.TrimSpace(elem))
		}
	}
	return hops
}

// forwardedFor is the address in an RFC 7239 element's for= parameter, or ""
// when it has none: a hop that names no client ends the chain.
func forwardedFor(elem string) string {
	for _, pair := range strings.Split(elem, ";") {
		k, val, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if ok && strings.EqualFold(strings.TrimSpace(k), "for") {
			return nodeAddr(strings.Trim(strings.TrimSpace(val), `"`))
		}
	}
	return ""
}

// nodeAddr is the address of an RFC 7239 node: "[2001:db8::1]:4711" or
// "192.0.2.1:80" without its port.
func nodeAddr(n string) string {
	if strings.HasPrefix(n, "[") {
		if end := strings.Index(n, "]"); end > 0 {
			return n[1:end]
		}
	}
	if host, _, err := net.SplitHostPort(n); err == nil {
		return host
	}
	return n
}
