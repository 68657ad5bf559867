package httpapi

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Proxies are the addresses whose word on a request's client the API takes
// (TRUSTED_PROXIES): the ingress controller or load balancer in front of it.
// Behind them every connection comes from a proxy, so without them every
// client shares the proxy's address and its bound on unknown API keys.
type Proxies []netip.Prefix

// ParseProxies reads addresses and CIDR ranges ("10.0.0.0/8", "127.0.0.1").
func ParseProxies(list []string) (Proxies, error) {
	var p Proxies
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !strings.Contains(s, "/") {
			a, err := netip.ParseAddr(s)
			if err != nil {
				return nil, fmt.Errorf("TRUSTED_PROXIES: %q is not an address or a CIDR range", s)
			}
			s = netip.PrefixFrom(a, a.BitLen()).String()
		}
		pre, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("TRUSTED_PROXIES: %q is not an address or a CIDR range", s)
		}
		p = append(p, pre.Masked())
	}
	return p, nil
}

func (p Proxies) trusted(a netip.Addr) bool {
	a = a.Unmap()
	for _, pre := range p {
		if pre.Contains(a) {
			return true
		}
	}
	return false
}

// maxHops bounds the forwarded addresses read from one request.
const maxHops = 20

// ClientAddr is the address of the client that sent r: the connection's peer,
// unless that is a trusted proxy; then the nearest address in the forwarded
// chain (Forwarded's for=, else X-Forwarded-For, read from the right) that is
// not a trusted proxy. Addresses a client wrote itself sit left of the first
// untrusted hop and are never believed.
func (p Proxies) ClientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil || !p.trusted(peer) {
		return host
	}
	hops := forwarded(r.Header)
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

// forwarded lists the chain of client addresses the proxies recorded, oldest
// first: Forwarded (RFC 7239) when present, else X-Forwarded-For.
func forwarded(h http.Header) []string {
	var hops []string
	for _, v := range h.Values("Forwarded") {
		for _, elem := range strings.Split(v, ",") {
			for _, pair := range strings.Split(elem, ";") {
				k, val, ok := strings.Cut(strings.TrimSpace(pair), "=")
				if ok && strings.EqualFold(k, "for") {
					hops = append(hops, nodeAddr(strings.Trim(val, `"`)))
				}
			}
		}
	}
	if len(hops) > 0 {
		return hops
	}
	for _, v := range h.Values("X-Forwarded-For") {
		for _, a := range strings.Split(v, ",") {
			hops = append(hops, strings.TrimSpace(a))
		}
	}
	return hops
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
