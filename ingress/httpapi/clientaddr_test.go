package httpapi

import (
	"net/http/httptest"
	"testing"
)

func TestClientAddrBelievesOnlyTrustedProxies(t *testing.T) {
	p, err := ParseProxies([]string{"10.0.0.0/8", "127.0.0.1", " "}, "X-Forwarded-For")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, peer, xff, fwd, want string
	}{
		{"no proxy", "203.0.113.7:5000", "", "", "203.0.113.7"},
		{"an untrusted peer's word is ignored", "203.0.113.7:5000", "198.51.100.1", "", "203.0.113.7"},
		{"behind the ingress", "10.1.2.3:5000", "198.51.100.1", "", "198.51.100.1"},
		{"two proxies deep", "10.1.2.3:5000", "198.51.100.1, 10.9.9.9", "", "198.51.100.1"},
		{"a client's own header stays left", "10.1.2.3:5000", "1.1.1.1, 198.51.100.1", "", "198.51.100.1"},
		{"a client's own Forwarded is ignored", "127.0.0.1:5000", "192.0.2.9", `for=192.0.2.60;proto=http, for="[2001:db8::7]:4711"`, "192.0.2.9"},
		{"a forged Forwarded without the proxy's header", "127.0.0.1:5000", "", "for=192.0.2.60", "127.0.0.1"},
		{"every hop a proxy", "10.1.2.3:5000", "10.0.0.1", "", "10.1.2.3"},
		{"an unreadable hop", "10.1.2.3:5000", "198.51.100.1, unknown", "", "10.1.2.3"},
		{"no header", "127.0.0.1:5000", "", "", "127.0.0.1"},
		{"mapped IPv4", "[::ffff:10.1.2.3]:5000", "198.51.100.1", "", "198.51.100.1"},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = c.peer
		if c.xff != "" {
			r.Header.Set("X-Forwarded-For", c.xff)
		}
		if c.fwd != "" {
			r.Header.Set("Forwarded", c.fwd)
		}
		if got := p.ClientAddr(r); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "proxy.example", "10.0.0"} {
		if _, err := ParseProxies([]string{bad}, "X-Forwarded-For"); err == nil {
			t.Errorf("ParseProxies(%q) took it", bad)
		}
	}
	if got := (Proxies{}).ClientAddr(httptest.NewRequest("GET", "/", nil)); got != "192.0.2.1" {
		t.Errorf("no proxies: %q", got)
	}
}

// With Forwarded named, only Forwarded is read: a client's own
// X-Forwarded-For is ignored, and the header's instances are one chain.
func TestClientAddrReadsOnlyTheNamedHeader(t *testing.T) {
	p, err := ParseProxies([]string{"10.0.0.0/8"}, "forwarded")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, xff string
		fwd       []string
		want      string
	}{
		{"the rightmost untrusted for=", "", []string{`for=192.0.2.60;proto=http, for="[2001:db8::7]:4711";by=10.0.0.2`}, "2001:db8::7"},
		{"a forged X-Forwarded-For is ignored", "198.51.100.1", []string{"for=192.0.2.60"}, "192.0.2.60"},
		{"no Forwarded: the peer", "198.51.100.1", nil, "10.1.2.3"},
		{"instances in order", "", []string{"for=192.0.2.60", "for=10.0.0.9"}, "192.0.2.60"},
		{"the client's instance stays left", "", []string{"for=198.51.100.9", "for=192.0.2.60, for=10.0.0.9"}, "192.0.2.60"},
		{"an element without for= ends the chain", "", []string{"for=192.0.2.60, proto=https"}, "10.1.2.3"},
		{"an obfuscated node", "", []string{"for=_hidden"}, "10.1.2.3"},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "10.1.2.3:5000"
		if c.xff != "" {
			r.Header.Set("X-Forwarded-For", c.xff)
		}
		for _, v := range c.fwd {
			r.Header.Add("Forwarded", v)
		}
		if got := p.ClientAddr(r); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	for _, bad := range []string{"", "X-Real-IP", "X-Forwarded-For, Forwarded"} {
		if _, err := ParseProxies(nil, bad); err == nil {
			t.Errorf("ParseProxies(header %q) took it", bad)
		}
	}
}
