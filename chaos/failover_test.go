//go:build chaos

package chaos

import (
	"context"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/orderflow/orderflow/platform/database"
	"github.com/orderflow/orderflow/tenants/apikeys"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// pgNode is a PostgreSQL 15 server of the row's own, in dir, on port.
type pgNode struct {
	bin, dir, port string
}

// pgBin is the directory of the server's binaries, as scripts/stack finds it.
func pgBin(t *testing.T) string {
	t.Helper()
	for _, d := range []string{"/usr/lib/postgresql/15/bin", "/usr/local/pgsql/bin"} {
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err == nil {
			return d
		}
	}
	p, err := exec.LookPath("pg_ctl")
	if err != nil {
		t.Fatal("PostgreSQL 15 server binaries (initdb, pg_ctl) not found")
	}
	return filepath.Dir(p)
}

// pgDir is a directory the server may own: PostgreSQL refuses to run as root,
// so under root it runs as the postgres user, as the stack's does.
func pgDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "orderflow-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root needs a 'postgres' user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// command runs one of the server's tools, as the postgres user under root.
func (n *pgNode) command(tool string, args ...string) *exec.Cmd {
	name := filepath.Join(n.bin, tool)
	if os.Geteuid() == 0 {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", name}, args...)...)
	}
	return exec.Command(name, args...)
}

func (n *pgNode) run(t *testing.T, tool string, args ...string) {
	t.Helper()
	if out, err := n.command(tool, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", tool, err, out)
	}
}

func (n *pgNode) data() string { return filepath.Join(n.dir, "data") }
func (n *pgNode) addr() string { return "127.0.0.1:" + n.port }

// start appends lines to the server's configuration, with its own port and
// socket directory, and starts it; the row's end stops it.
func (n *pgNode) start(t *testing.T, lines ...string) {
	t.Helper()
	conf := append([]string{"listen_addresses = '127.0.0.1'", "port = " + n.port, "unix_socket_directories = '" + n.dir + "'"}, lines...)
	f, err := os.OpenFile(filepath.Join(n.data(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString("\n" + strings.Join(conf, "\n") + "\n")
		f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	n.run(t, "pg_ctl", "-D", n.data(), "-l", filepath.Join(n.dir, "server.log"), "-w", "-t", "60", "start")
	t.Cleanup(func() { _ = n.command("pg_ctl", "-D", n.data(), "-m", "immediate", "stop").Run() })
}

// exec runs statements on the node's database (or postgres's, before it has one).
func (n *pgNode) exec(t *testing.T, db string, sql ...string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), "postgres://orderflow@"+n.addr()+"/"+db+"?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, s := range sql {
		if _, err := conn.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// count is a count on the node's database.
func (n *pgNode) count(t *testing.T, query string) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), "postgres://orderflow@"+n.addr()+"/orderflow?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var c int
	if err := conn.QueryRow(context.Background(), query).Scan(&c); err != nil {
		t.Fatal(err)
	}
	return c
}

func freePort(t *testing.T) string {
	_, port, _ := net.SplitHostPort(stacktest.FreeAddr(t))
	return port
}

// newPrimary starts a primary that streams its WAL, with an orderflow database.
func newPrimary(t *testing.T) *pgNode {
	t.Helper()
	n := &pgNode{bin: pgBin(t), dir: pgDir(t), port: freePort(t)}
	n.run(t, "initdb", "-D", n.data(), "-U", "orderflow", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8")
	n.start(t, "wal_level = replica", "max_wal_senders = 4", "synchronous_commit = on")
	n.exec(t, "postgres", "CREATE DATABASE orderflow")
	return n
}

// replica starts an asynchronous streaming replica of n and waits until it
// streams.
func (n *pgNode) replica(t *testing.T) *pgNode {
	t.Helper()
	m := &pgNode{bin: n.bin, dir: pgDir(t), port: freePort(t)}
	m.run(t, "pg_basebackup", "-h", "127.0.0.1", "-p", n.port, "-U", "orderflow", "-D", m.data(), "-R", "-X", "stream", "--checkpoint=fast")
	m.start(t)
	stacktest.Eventually(t, 30*time.Second, "the replica to stream", func() bool {
		return n.count(t, `SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'`) == 1
	})
	return m
}

// detach cuts the replica off its primary, as a network partition or a lagging
// replica would: what the primary commits from now on is not replicated.
func (n *pgNode) detach(t *testing.T, primary *pgNode) {
	t.Helper()
	n.exec(t, "orderflow", `ALTER SYSTEM SET primary_conninfo = 'host=127.0.0.1 port=1 user=orderflow'`, `SELECT pg_reload_conf()`)
	stacktest.Eventually(t, 30*time.Second, "the replica to stop streaming", func() bool {
		return primary.count(t, `SELECT count(*) FROM pg_stat_replication`) == 0
	})
}

// kill is the primary's crash: SIGKILL to its postmaster.
func (n *pgNode) kill(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(n.data(), "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0])
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	stacktest.Eventually(t, 30*time.Second, "the primary to be gone", func() bool {
		c, err := net.DialTimeout("tcp", n.addr(), time.Second)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
}

// switcher forwards connections to its target; point moves the target and
// breaks the connections open to the old one, as a failover's virtual IP or
// DNS name does.
type switcher struct {
	ln     net.Listener
	target atomic.Value
	mu     sync.Mutex
	conns  []net.Conn
}

func newSwitcher(t *testing.T, target string) *switcher {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &switcher{ln: ln}
	s.target.Store(target)
	t.Cleanup(func() { ln.Close(); s.point("") })
	go s.serve()
	return s
}

func (s *switcher) point(target string) {
	s.target.Store(target)
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.conns = nil
	s.mu.Unlock()
}

func (s *switcher) serve() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		go s.forward(c)
	}
}

func (s *switcher) forward(c net.Conn) {
	up, err := net.Dial("tcp", s.target.Load().(string))
	if err != nil {
		c.Close()
		return
	}
	s.mu.Lock()
	s.conns = append(s.conns, c, up)
	s.mu.Unlock()
	go func() { _, _ = io.Copy(up, c); up.Close() }()
	_, _ = io.Copy(c, up)
	c.Close()
}

// The primary dies with commits its asynchronous replica never received: the
// replica was cut off before 20 HTTP and 10 Kafka orders were paid, the primary
// is killed, the replica promoted, and the services' address moved to it.
// orderflow runs on a PostgreSQL pair of the row's own; Temporal, Kafka and the
// provider are the stack's.
func TestChaosPostgresFailsOverToAnAsyncReplica(t *testing.T) {
	// Alone: two PostgreSQL servers of its own, and a repair it times.
	primary := newPrimary(t)
	replica := primary.replica(t)
	sw := newSwitcher(t, primary.addr())
	dsn := "postgres://orderflow@" + sw.ln.Addr().String() + "/orderflow?sslmode=disable"
	ctx := context.Background()
	pool, err := database.Open(ctx, dsn, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close) // after the rig's audit, which reads it
	if err := database.Migrate(ctx, pool, stacktest.Logger(t)); err != nil {
		t.Fatal(err)
	}

	r := newRig(t)
	r.Env = maps.Clone(r.Env)
	r.Env["DATABASE_URL"], r.Pool = dsn, pool
	if r.apiKey, err = apikeys.New(pool, apikeys.DefaultCacheTTL).Create(ctx, r.tenant); err != nil {
		t.Fatal(err)
	}
	r.probe, r.careful = r.client(1), r.client(1000)
	r.startWorker(t, nil)
	r.startAPI(t)
	r.reconciler(t)
	r.loseTheTail(t, "PostgreSQL failed over to an async replica", func() { replica.detach(t, primary) }, func() {
		primary.kill(t)
		replica.exec(t, "orderflow", `SELECT pg_promote()`)
		if n := replica.count(t, `SELECT count(*) FROM orders`); n != 0 {
			t.Fatalf("the promoted replica holds %d orders: the tail was replicated after all", n)
		}
		sw.point(replica.addr())
	})
}
