//go:build stack

package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/orderflow/orderflow/testkit/stacktest"
)

// lateLink forwards a free address to target once up is closed; until then
// nothing listens there, as while a server restarts.
func lateLink(t *testing.T, target string, up <-chan struct{}) string {
	t.Helper()
	addr := stacktest.FreeAddr(t)
	var conns sync.WaitGroup
	go func() {
		<-up
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Error(err)
			return
		}
		t.Cleanup(func() { ln.Close(); conns.Wait() })
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			conns.Go(func() { _, _ = io.Copy(out, in); out.Close() })
			conns.Go(func() { _, _ = io.Copy(in, out); in.Close() })
		}
	}()
	return addr
}

// An API started while PostgreSQL and Temporal do not listen yet (a node
// restarted with them) waits for them and serves, instead of exiting at its first
// connection.
func TestTheAPIWaitsForPostgresAndTemporalAtStart(t *testing.T) {
	env := stacktest.Env(t)
	stacktest.Pool(t) // migrated
	up := make(chan struct{})
	db, err := url.Parse(env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	db.Host = lateLink(t, db.Host, up)
	ops := stacktest.FreeAddr(t)
	vars := map[string]string{
		"DATABASE_URL": db.String(), "TEMPORAL_ADDRESS": lateLink(t, env["TEMPORAL_ADDRESS"], up),
		"PAYLOAD_KEYS": env["PAYLOAD_KEYS"], "API_ADDR": stacktest.FreeAddr(t), "OPS_ADDR": ops, "DRAIN_DELAY": "0s", "LOG_LEVEL": "warn",
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- app(func(k string) string { return vars[k] }, &logs, &logs).Run(ctx, nil) }()
	select {
	case code := <-done:
		t.Fatalf("the API exited %d while its servers were down:\n%s", code, logs.String())
	case <-time.After(3 * time.Second):
	}
	close(up)
	stacktest.Eventually(t, time.Minute, "the API to be ready", func() bool {
		select {
		case code := <-done:
			t.Fatalf("the API exited %d:\n%s", code, logs.String())
		default:
		}
		resp, err := http.Get("http://" + ops + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d after SIGTERM:\n%s", code, logs.String())
	}
}
