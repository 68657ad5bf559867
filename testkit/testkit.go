// Package testkit is the core of orderflow's test harness, shared by the stack tests
// (through testkit/stacktest, which adds testing.TB) and cmd/bench: the local
// stack's settings, unique names, free ports, topics and child processes. Every
// function returns an error instead of failing a test.
package testkit

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/orderflow/orderflow/platform/config"
	"github.com/orderflow/orderflow/platform/kafkaclient"
)

// ErrNoStack is the local stack's env file missing: scripts/stack up has not run.
var ErrNoStack = fmt.Errorf("local stack not running (scripts/stack up)")

// Env returns the variables of the stack's env file: $ORDERFLOW_STACK_ENV, or
// .stack/env in the working directory or one of its parents.
func Env() (map[string]string, error) {
	path := os.Getenv("ORDERFLOW_STACK_ENV")
	if path == "" {
		path = findEnvFile()
	}
	if path == "" {
		return nil, ErrNoStack
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoStack, err)
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			env[k] = v
		}
	}
	return env, sc.Err()
}

func findEnvFile() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		p := filepath.Join(dir, ".stack", "env")
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Name returns prefix plus a random suffix, to keep runs apart on a shared stack.
func Name(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// FreeAddr returns a loopback address with a port that was free a moment ago,
// below the kernel's ephemeral range (32768 and up on Linux): a port the kernel
// hands out for :0 is also one it may give an outgoing connection before the
// process that was to listen on it starts.
func FreeAddr() (string, error) {
	var lastErr error
	for range 50 {
		n, err := rand.Int(rand.Reader, big.NewInt(freePortSpan))
		if err != nil {
			return "", fmt.Errorf("find a free port: %w", err)
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", freePortBase+n.Int64()))
		if err != nil {
			lastErr = err
			continue
		}
		defer ln.Close()
		return ln.Addr().String(), nil
	}
	return "", fmt.Errorf("find a free port: %w", lastErr)
}

// The ports FreeAddr picks from: above the stack's fixed ones (up to 19197, and
// 18233 for the UI), below the ephemeral range.
const (
	freePortBase = 20000
	freePortSpan = 12000
)

// Topic creates a topic with a unique name, the given partitions and the stack's
// replication factor.
func Topic(ctx context.Context, env map[string]string, prefix string, partitions int) (string, error) {
	topic := Name(prefix)
	cluster, err := Kafka(env)
	if err != nil {
		return topic, err
	}
	return topic, kafkaclient.CreateTopic(ctx, cluster, topic, partitions, Replicas(env))
}

// Connections are the stack's connection settings a child process needs, taken
// from env with their security (a secured profile's TLS and credentials):
// DATABASE_URL, PAYLOAD_KEYS, TEMPORAL_* and KAFKA_*, plus extra on top.
func Connections(env map[string]string, extra map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range env {
		if k == "DATABASE_URL" || k == "PAYLOAD_KEYS" || strings.HasPrefix(k, "TEMPORAL_") && k != "TEMPORAL_UI_URL" ||
			strings.HasPrefix(k, "KAFKA_") && k != "KAFKA_REPLICATION_FACTOR" {
			out[k] = v
		}
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// Kafka is the stack's Kafka cluster, with the security its env names (the
// KAFKA_* variables a process reads).
func Kafka(env map[string]string) (kafkaclient.Cluster, error) {
	e := config.New(func(k string) string { return env[k] })
	c := e.Kafka()
	return c, e.Err()
}

// Replicas is the replication factor of the stack's topics: 3 on the cluster
// profile, 1 on the dev one.
func Replicas(env map[string]string) int {
	if n, err := strconv.Atoi(env["KAFKA_REPLICATION_FACTOR"]); err == nil && n > 0 {
		return n
	}
	return 1
}

// Proc is a child process whose output goes to a log file.
type Proc struct {
	Name string
	Log  string // path of its combined output
	cmd  *exec.Cmd
	done chan struct{}
}

// Start runs bin with env added to this process's environment, its output in a new
// file under logDir.
func Start(bin string, env map[string]string, logDir string, args ...string) (*Proc, error) {
	logf, err := os.CreateTemp(logDir, filepath.Base(bin)+"-*.log")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &Proc{Name: filepath.Base(bin), Log: logf.Name(), cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process's ID.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the process, if it still runs.
func (p *Proc) Signal(sig syscall.Signal) {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Signal(sig)
	}
}

// Wait waits up to d for the process to exit and returns its exit code.
func (p *Proc) Wait(d time.Duration) (int, error) {
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode(), nil
	case <-time.After(d):
		return -1, fmt.Errorf("process %s still running after %s", p.Name, d)
	}
}

// Stop sends SIGTERM, and SIGKILL if the process has not exited after grace.
func (p *Proc) Stop(grace time.Duration) {
	p.Signal(syscall.SIGTERM)
	if _, err := p.Wait(grace); err != nil {
		p.Signal(syscall.SIGKILL)
		<-p.done
	}
}

// WaitReady polls url until it answers 200, the process exits, or d passes.
func (p *Proc) WaitReady(url string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before it was ready (log: %s)", p.Name, p.Log)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s (log: %s)", p.Name, d, p.Log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Build builds a main package of this module (e.g. "cmd/worker") into dir.
func Build(pkg, dir string) (string, error) {
	bin := filepath.Join(dir, filepath.Base(pkg))
	out, err := exec.Command("go", "build", "-o", bin, "github.com/orderflow/orderflow/"+pkg).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
	}
	return bin, nil
}
