//go:build chaos

package chaos

import (
	"io"
	"net"
	"testing"
	"time"
)

// slowLink is a simulated slow network: a TCP proxy to target that holds every
// chunk a client sends for delay before passing it on, in order. A process given
// its address sees each request to target take at least delay longer.
func slowLink(t *testing.T, target string, delay time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				client.Close()
				continue
			}
			go delayed(client, server, delay)
			go func() { _, _ = io.Copy(client, server); client.Close() }()
		}
	}()
	return ln.Addr().String()
}

// delayed copies src to dst, each chunk delay after it was read.
func delayed(src, dst net.Conn, delay time.Duration) {
	type chunk struct {
		due  time.Time
		data []byte
	}
	q := make(chan chunk, 4096)
	go func() {
		defer close(q)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				q <- chunk{time.Now().Add(delay), buf[:n]}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range q {
		time.Sleep(time.Until(c.due))
		if _, err := dst.Write(c.data); err != nil {
			break
		}
	}
	dst.Close()
	src.Close()
}
