package httpapi

import (
	"net/http/httptest"
	"testing"
)

func TestClientAddrBelievesOnlyTrustedProxies(t *testing.T) {
	p, err := ParseProxies([]string{"10.0.0.0/8", "127.0.0.1", " "})
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
		{"Forwarded first", "127.0.0.1:5000", "192.0.2.9", `for=192.0.2.60;proto=http, for="[2001:db8::7]:4711"`, "2001:db8::7"},
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
		if _, err := ParseProxies([]string{bad}); err == nil {
			t.Errorf("ParseProxies(%q) took it", bad)
		}
	}
	if got := Proxies(nil).ClientAddr(httptest.NewRequest("GET", "/", nil)); got != "192.0.2.1" {
		t.Errorf("no proxies: %q", got)
	}
}
