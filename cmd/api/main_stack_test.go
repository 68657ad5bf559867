//go:build stack

package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/orderflow/orderflow/testkit/stacktest"
)

// TestServeDrainsAndSurvivesSlowClients calls run as main does: a slow-loris client
// is cut off by the header timeout while others are served, and cancelling the
// context (SIGTERM) makes run return nil promptly.
func TestServeDrainsAndSurvivesSlowClients(t *testing.T) {
	env := stacktest.Env(t)
	stacktest.Pool(t) // migrated
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ops := stacktest.FreeAddr(t)
	vars := map[string]string{
		"DATABASE_URL": env["DATABASE_URL"], "TEMPORAL_ADDRESS": env["TEMPORAL_ADDRESS"],
		"PAYLOAD_KEYS": env["PAYLOAD_KEYS"], "API_ADDR": addr, "OPS_ADDR": ops, "DRAIN_DELAY": "0s", "LOG_LEVEL": "warn",
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- app(func(k string) string { return vars[k] }, &logs, &logs).Run(ctx, nil) }()
	stacktest.Eventually(t, 30*time.Second, "the API to be ready", func() bool {
		resp, err := http.Get("http://" + ops + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})

	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	began := time.Now()
	_, _ = slow.Write([]byte("POST /v1/orders HTTP/1.1\r\nHost: x\r\n"))
	closed := make(chan time.Duration, 1)
	go func() {
		for {
			time.Sleep(time.Second)
			if _, err := slow.Write([]byte("X-Slow: 1\r\n")); err != nil {
				closed <- time.Since(began)
				return
			}
			if time.Since(began) > 20*time.Second {
				closed <- 0
				return
			}
		}
	}()
	// Meanwhile the server answers others.
	resp, err := http.Get("http://" + addr + "/openapi.yaml")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET during a slow client: %v", err)
	}
	resp.Body.Close()
	if d := <-closed; d == 0 || d > 12*time.Second {
		t.Fatalf("slow-loris connection kept for %s, want it cut after the 5s header timeout", d)
	}
	// Whatever the slow client got, the server never read a full request from it.
	_ = slow.SetReadDeadline(time.Now().Add(time.Second))
	rest, _ := io.ReadAll(slow)
	if len(rest) > 0 && !strings.HasPrefix(string(rest), "HTTP/1.1 4") {
		t.Fatalf("slow client got %q", rest)
	}

	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve exited %d on shutdown, want 0: %s", code, logs.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return within 10s of the cancel")
	}
}
