package database_test

import (
	"context"
	"net"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/orderflow/orderflow/platform/database"
)

// refusing is a server that answers every connection's startup with a fatal
// error of code, as PostgreSQL does while it starts (57P03) or to a wrong
// password (28P01).
func refusing(t *testing.T, code string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			be := pgproto3.NewBackend(conn, conn)
			if _, err := be.ReceiveStartupMessage(); err == nil {
				be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: code, Message: "refused by the test"})
				_ = be.Flush()
			}
			conn.Close()
		}
	}()
	return ln.Addr().String()
}

// What a starting process waits out (a server that does not listen yet, or
// says it is starting) is told from what it must not (a refusal of its
// credentials).
func TestUnansweredIsSilenceOrStartingNotRefusal(t *testing.T) {
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := free.Addr().String()
	free.Close()
	for _, row := range []struct {
		name, addr string
		want       bool
	}{
		{"nothing listening", nobody, true},
		{"starting up (57P03)", refusing(t, "57P03"), true},
		{"password refused (28P01)", refusing(t, "28P01"), false},
		{"no such database (3D000)", refusing(t, "3D000"), false},
	} {
		_, err := database.Open(context.Background(), "postgres://orderflow:secret@"+row.addr+"/orderflow?sslmode=disable", 1, nil)
		if err == nil || database.Unanswered(err) != row.want {
			t.Errorf("%s: %v; unanswered = %v, want %v", row.name, err, err != nil && database.Unanswered(err), row.want)
		}
	}
	if database.Unanswered(context.Canceled) {
		t.Error("a cancelled start was taken for silence")
	}
}
