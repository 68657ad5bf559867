package stacktest

import (
	"fmt"
	"testing"

	"go.temporal.io/api/serviceerror"
)

// The SDK's errors for a server that answered late or not at all are asked
// again; a call the server refused is not.
func TestTimedOutTellsABusyServerFromAWrongCall(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("failed reaching server: %w", serviceerror.NewDeadlineExceeded("context deadline exceeded while waiting for connections to become ready")), true},
		{serviceerror.NewUnavailable("connection refused"), true},
		{fmt.Errorf("list: %w", serviceerror.NewInvalidArgument("bad query")), false},
		{serviceerror.NewNotFound("no such workflow"), false},
	} {
		if got := timedOut(c.err); got != c.want {
			t.Errorf("timedOut(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
