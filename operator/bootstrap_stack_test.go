//go:build stack

package operator

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/orderflow/orderflow/platform/config"
	"github.com/orderflow/orderflow/platform/kafkaclient"
	"github.com/orderflow/orderflow/testkit"
	"github.com/orderflow/orderflow/testkit/stacktest"
	"github.com/orderflow/orderflow/workflows"
)

// worker bootstrap makes a namespace and three topics that did not exist, and a
// second run (the next rollout) leaves them as they are.
func TestBootstrapCreatesTheNamespaceAndTopicsOnce(t *testing.T) {
	env := stacktest.Env(t)
	name := stacktest.Name("bootstrap")
	vars := testkit.Connections(env, map[string]string{"TEMPORAL_NAMESPACE": name,
		"REQUESTS_TOPIC": name + ".requested", "EVENTS_TOPIC": name + ".events", "DLQ_TOPIC": name + ".dlq"})
	delete(vars, "DATABASE_URL") // it needs no database
	delete(vars, "PAYLOAD_KEYS")
	args := []string{"bootstrap", "--partitions", "3", "--replication-factor", strconv.Itoa(testkit.Replicas(env))}
	for run := range 2 {
		var out bytes.Buffer
		if code := workerApp(func(k string) string { return vars[k] }, &out, &out).Run(context.Background(), args); code != 0 {
			t.Fatalf("run %d: exit %d: %s", run+1, code, out.String())
		}
		want := map[int]string{0: "registered", 1: "exists"}[run]
		if !strings.Contains(out.String(), "namespace "+name+" "+want) || strings.Count(out.String(), map[int]string{0: "created", 1: "exists"}[run]) < 3 ||
			!strings.Contains(out.String(), "search attributes "+map[int]string{0: "registered", 1: "exist:"}[run]) {
			t.Fatalf("run %d: %s", run+1, out.String())
		}
	}
	e := config.New(func(k string) string { return vars[k] })
	opts, cluster := e.Temporal(), e.Kafka()
	nc, err := client.NewNamespaceClient(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ns, err := nc.Describe(context.Background(), name)
	if err != nil || ns.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration() != 72*time.Hour {
		t.Fatalf("namespace %s: %v %v", name, ns.GetConfig(), err)
	}
	c, err := client.Dial(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sas, err := c.OperatorService().ListSearchAttributes(context.Background(), &operatorservice.ListSearchAttributesRequest{Namespace: name})
	if err != nil {
		t.Fatal(err)
	}
	for _, sa := range workflows.SearchAttributeNames() {
		if typ := sas.GetCustomAttributes()[sa]; typ != enumspb.INDEXED_VALUE_TYPE_KEYWORD {
			t.Errorf("search attribute %s: %v, want Keyword", sa, typ)
		}
	}
	sched, err := c.ScheduleClient().GetHandle(context.Background(), workflows.ReconcileSchedule).Describe(context.Background())
	if err != nil || len(sched.Schedule.Spec.Intervals) != 1 || sched.Schedule.Spec.Intervals[0].Every != time.Minute ||
		sched.Schedule.Policy.Overlap != enumspb.SCHEDULE_OVERLAP_POLICY_SKIP {
		t.Fatalf("schedule %s: %+v %v", workflows.ReconcileSchedule, sched, err)
	}
	for topic, partitions := range map[string]int{name + ".requested": 3, name + ".events": 3, name + ".dlq": 1} {
		if n, err := kafkaclient.Partitions(context.Background(), cluster, topic); err != nil || n != partitions {
			t.Errorf("topic %s: %d partitions, want %d (%v)", topic, n, partitions, err)
		}
	}
}
