//go:build chaos && fleet

package chaos

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/orderflow/orderflow/testkit/stacktest"
)

// member is one process of the fleet and how to start it again.
type member struct {
	name  string
	ops   string // its ops address, for /healthz
	proc  *stacktest.Proc
	start func(t *testing.T) *stacktest.Proc
}

// TestFleetRollingRestart runs the deployment users run: two API processes and
// three workers in one consumer group, against the cluster profile (the Temporal
// server on PostgreSQL with 4 history shards; 3 Kafka brokers, topics replicated 3
// ways with min.insync.replicas=2). Under HTTP and Kafka traffic, every process is
// restarted one at a time with SIGTERM, one worker is killed with SIGKILL, and one
// broker is stopped and started. The ledger then balances: every request is one
// order, one workflow, one charge and one OrderPaid event; no refunds.
func TestFleetRollingRestart(t *testing.T) {
	r := newRig(t)
	if p := r.Env["ORDERFLOW_STACK_PROFILE"]; p != "cluster" {
		t.Fatalf("the fleet test runs on the cluster profile (ORDERFLOW_STACK_PROFILE=cluster scripts/stack up); the stack is %q", p)
	}
	// About 8 orders a second: what the cluster profile settles on two cores while
	// five processes restart around it, so the ledger measures faults, not backlog.
	r.httpGap, r.eventGap = 400*time.Millisecond, 250*time.Millisecond

	var fleet []*member
	for i := range 2 {
		addr, ops := stacktest.FreeAddr(t), stacktest.FreeAddr(t)
		r.fleetAPIs = append(r.fleetAPIs, addr)
		fleet = append(fleet, &member{name: fmt.Sprintf("api-%d", i+1), ops: ops, start: func(t *testing.T) *stacktest.Proc {
			return r.startAPIOn(t, addr, ops, "1s")
		}})
	}
	for i := range 3 {
		ops := stacktest.FreeAddr(t)
		fleet = append(fleet, &member{name: fmt.Sprintf("worker-%d", i+1), ops: ops, start: func(t *testing.T) *stacktest.Proc {
			return r.startWorker(t, map[string]string{"OPS_ADDR": ops})
		}})
	}
	for _, m := range fleet {
		m.proc = m.start(t)
	}

	began := time.Now()
	wait := r.traffic(t, "fleet", 80*time.Second)
	r.flowing(t, 5)

	// Rolling restart: each process drains and exits 0, then comes back.
	for _, m := range fleet {
		stopped := time.Now()
		m.proc.Signal(syscall.SIGTERM)
		if code := m.proc.Wait(t, 40*time.Second); code != 0 {
			t.Errorf("%s exited %d on SIGTERM, want 0", m.name, code)
		}
		drained := time.Since(stopped)
		m.proc = m.start(t)
		t.Logf("%s: drained in %s, serving again after %s", m.name, drained.Round(time.Millisecond), time.Since(stopped).Round(time.Millisecond))
		time.Sleep(2 * time.Second)
	}

	// A worker dies mid-work.
	w := fleet[3]
	w.proc.Kill(t)
	time.Sleep(3 * time.Second)
	w.proc = w.start(t)
	t.Logf("%s: SIGKILL, restarted", w.name)

	// One broker of three goes away: with min.insync.replicas=2 the topics still
	// take writes, and the consumer group goes on committing.
	stacktest.Service(t, "stop", "kafka-1")
	stoppedAt := time.Now()
	before := r.committed(t)
	probe := r.writer()
	id := stacktest.Name("fleet-broker-down")
	r.produce(t, probe, id, []byte(id))
	wrote := time.Since(stoppedAt)
	probe.Close()
	stacktest.Eventually(t, 60*time.Second, "offsets committed while a broker is down", func() bool { return r.committed(t) > before })
	committedAfter := time.Since(stoppedAt)
	time.Sleep(5 * time.Second)
	stacktest.Service(t, "start", "kafka-1")
	t.Logf("kafka-1 down for %s: an event written after %s, offsets moved after %s", time.Since(stoppedAt).Round(time.Second), wrote.Round(time.Millisecond), committedAfter.Round(time.Millisecond))

	wait()
	t.Logf("traffic and faults took %s", time.Since(began).Round(time.Second))
	r.ledger(t, "fleet 2 api + 3 workers: rolling SIGTERM, worker SIGKILL, broker stop")
}
