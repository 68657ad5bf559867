//go:build chaos && fleet

package chaos

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"
	"go.temporal.io/sdk/client"

	"github.com/orderflow/orderflow/platform/kafkaclient"
	"github.com/orderflow/orderflow/testkit/stacktest"
	"github.com/orderflow/orderflow/workflows"
)

// TestFleetSecuredProfileRefuses: on the secured cluster profile, every way in
// without the right credential is refused, and nothing changes: Temporal without
// a client certificate, Kafka with a wrong password or without the ACL, the worker
// writing to a topic it does not own, PostgreSQL without TLS or with a wrong
// password.
func TestFleetSecuredProfileRefuses(t *testing.T) {
	env := stacktest.Env(t)
	if env["ORDERFLOW_STACK_PROFILE"] != "cluster" {
		t.Fatalf("runs on the cluster profile; the stack is %q", env["ORDERFLOW_STACK_PROFILE"])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	t.Run("temporal without a client certificate", func(t *testing.T) {
		ca, err := os.ReadFile(env["TEMPORAL_TLS_SERVER_CA_CERT_PATH"])
		if err != nil {
			t.Fatal(err)
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(ca)
		id := "refused-" + stacktest.Name("wf")
		for name, conn := range map[string]client.ConnectionOptions{
			"plaintext":           {},
			"TLS, no certificate": {TLS: &tls.Config{RootCAs: roots, ServerName: env["TEMPORAL_TLS_SERVER_NAME"]}},
		} {
			dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
			c, err := client.DialContext(dctx, client.Options{HostPort: env["TEMPORAL_ADDRESS"], Namespace: env["TEMPORAL_NAMESPACE"], ConnectionOptions: conn})
			if err == nil {
				_, err = c.ExecuteWorkflow(dctx, client.StartWorkflowOptions{ID: id, TaskQueue: "refused"}, workflows.Order, workflows.PlaceOrder{})
				c.Close()
			}
			dcancel()
			t.Logf("%s: %v", name, err)
			if err == nil {
				t.Fatalf("%s: a workflow was started", name)
			}
		}
		if _, err := stacktest.Temporal(t).DescribeWorkflow(ctx, id, ""); err == nil {
			t.Fatal("the refused start made a workflow")
		}
	})

	t.Run("kafka", func(t *testing.T) {
		topic := stacktest.Topic(t, 1)
		principal := func(name, password string) kafkaclient.Cluster {
			c, _ := stacktest.KafkaPrincipal(t, name, password)
			return c
		}
		// No listener answers without a credential: the brokers have no plaintext
		// one, and the controllers want a client certificate.
		for _, addr := range append(strings.Split(env["ORDERFLOW_KAFKA_PLAINTEXT"], ","), strings.Split(env["ORDERFLOW_KAFKA_CONTROLLERS"], ",")...) {
			dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
			conn, err := (&kafka.Dialer{Timeout: 5 * time.Second}).DialContext(dctx, "tcp", addr)
			if err == nil {
				_, err = conn.ReadPartitions()
				conn.Close()
			}
			dcancel()
			t.Logf("plaintext to %s: %v", addr, err)
			if err == nil {
				t.Fatalf("%s answered a plaintext client", addr)
			}
		}
		for name, try := range map[string]struct {
			c     kafkaclient.Cluster
			topic string
		}{
			"a producer with the wrong password":          {principal("orderflow-producer", "wrong-password"), "orders.requested"},
			"a principal without the ACL on the topic":    {principal("orderflow-producer", ""), topic},
			"the worker writing to a topic it only reads": {principal("orderflow-worker", ""), "orders.requested"},
		} {
			before := stacktest.EndOffset(t, try.topic, 0)
			w := kafkaclient.NewWriter(try.c, try.topic)
			w.WriteTimeout = 10 * time.Second
			err := w.WriteMessages(ctx, kafka.Message{Key: []byte("k"), Value: []byte(`{"eventId":"refused"}`)})
			w.Close()
			t.Logf("%s: %v", name, err)
			if err == nil {
				t.Fatalf("%s: written", name)
			}
			if after := stacktest.EndOffset(t, try.topic, 0); after != before {
				t.Fatalf("%s: %s grew from %d to %d", name, try.topic, before, after)
			}
		}
	})

	t.Run("postgres without TLS or with a wrong password", func(t *testing.T) {
		u, err := url.Parse(env["DATABASE_URL"])
		if err != nil {
			t.Fatal(err)
		}
		plain := *u
		q := plain.Query()
		q.Set("sslmode", "disable")
		plain.RawQuery = q.Encode()
		wrong := *u
		wrong.User = url.UserPassword(u.User.Username(), "wrong-password")
		for name, dsn := range map[string]string{"without TLS": plain.String(), "wrong password": wrong.String()} {
			conn, err := pgx.Connect(ctx, dsn)
			if err == nil {
				conn.Close(ctx)
				t.Fatalf("%s: connected", name)
			}
			t.Logf("%s: %v", name, err)
		}
		conn, err := pgx.Connect(ctx, u.String())
		if err != nil {
			t.Fatalf("with TLS and the password: %v", err)
		}
		defer conn.Close(ctx)
		var ssl bool
		if err := conn.QueryRow(ctx, `SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()`).Scan(&ssl); err != nil || !ssl {
			t.Fatalf("the connection is not encrypted: %v, %v", ssl, err)
		}
	})
}
