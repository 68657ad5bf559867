//go:build stack

package main

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/orderflow/orderflow/platform/kafkaclient"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// The overload scenario reads its group's lag every second for the whole run:
// each read must reuse the scenario's one client. A client per read kept a
// connection and a metadata refresh each, over a thousand by the end of a run.
func TestTheLagIsReadWithoutAConnectionPerRead(t *testing.T) {
	cluster := stacktest.Kafka(t)
	o := &overload{b: &bench{kafka: cluster, group: stacktest.Name("lag")}, topic: stacktest.Name("lag"), admin: cluster.Client()}
	ctx := context.Background()
	if _, err := o.lag(ctx); err != nil { // the client's own connection and refresh
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	for range 20 {
		if _, err := o.lag(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if grew := runtime.NumGoroutine() - before; grew >= 10 {
		t.Fatalf("20 reads of the lag left %d goroutines behind", grew)
	}
	kafkaclient.CloseClient(o.admin)
	if !stacktest.Within(10*time.Second, func() bool { return runtime.NumGoroutine() < before }) {
		t.Fatalf("%d goroutines after the client closed, %d before", runtime.NumGoroutine(), before)
	}
}
