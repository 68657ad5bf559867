package temporalclient_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/orderflow/orderflow/platform/temporalclient"
)

// frontend is a gRPC server that answers every call with code (a frontend
// without GetSystemInfo, as the SDK reads Unimplemented, lets the dial through)
// and counts the calls.
type frontend struct{ calls atomic.Int32 }

func (f *frontend) serve(t *testing.T, ln net.Listener, code codes.Code) {
	srv := grpc.NewServer(grpc.UnknownServiceHandler(func(any, grpc.ServerStream) error {
		f.calls.Add(1)
		return status.Error(code, "unknown method")
	}))
	t.Cleanup(srv.Stop)
	go func() { _ = srv.Serve(ln) }()
}

func settings(addr string) temporalclient.Settings {
	return temporalclient.Settings{Connection: client.Options{HostPort: addr, Namespace: "default"},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// freeAddr is an address nothing listens on yet.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// A process that starts while its frontend is not up yet (a server starting,
// restarting, or too busy to answer) connects once it answers, where one dial
// would have failed and ended the process.
func TestDialWaitsForAFrontendThatIsNotUpYet(t *testing.T) {
	addr := freeAddr(t)
	f := &frontend{}
	up := make(chan time.Time, 1)
	go func() {
		time.Sleep(1500 * time.Millisecond)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Error(err)
			close(up)
			return
		}
		up <- time.Now()
		f.serve(t, ln, codes.Unimplemented)
	}()
	if _, err := temporalclient.Dial(context.Background(), settings(addr)); err == nil {
		t.Fatal("one dial reached a frontend that is not up")
	}
	c, err := temporalclient.DialWithin(context.Background(), settings(addr), 30*time.Second)
	if err != nil {
		t.Fatalf("dial within 30 s of a frontend up after 1.5 s: %v", err)
	}
	defer c.Close()
	if at, ok := <-up; !ok || f.calls.Load() == 0 {
		t.Fatalf("the frontend answered %d calls (up at %v)", f.calls.Load(), at)
	}
}

// A frontend that refuses is not asked again, and one that never comes up is
// given up on once the time allowed has passed.
func TestDialGivesUpOnARefusalAtOnceAndOnSilenceInTime(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &frontend{}
	f.serve(t, ln, codes.Unauthenticated)
	began := time.Now()
	if _, err := temporalclient.DialWithin(context.Background(), settings(ln.Addr().String()), 30*time.Second); serviceerror.ToStatus(err).Code() != codes.Unauthenticated {
		t.Fatalf("dial of a frontend that refuses: %v, want Unauthenticated", err)
	}
	if n, took := f.calls.Load(), time.Since(began); n != 1 || took > 10*time.Second {
		t.Fatalf("a refusal was asked %d times over %s, want once", n, took)
	}

	began = time.Now()
	if _, err := temporalclient.DialWithin(context.Background(), settings(freeAddr(t)), 2*time.Second); serviceerror.ToStatus(err).Code() != codes.Unavailable {
		t.Fatalf("dial of no frontend: %v, want Unavailable", err)
	}
	if took := time.Since(began); took < time.Second || took > 15*time.Second {
		t.Fatalf("gave up on no frontend after %s, want about 2 s", took)
	}
}
