package stacktest

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Builds are shared by every test of the process: each binary is built once.
var (
	buildMu sync.Mutex
	built   = map[string]string{}
)

// Binary builds a main package of this module once per test process and returns
// the path of the executable.
func Binary(tb testing.TB, pkg string) string {
	tb.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if bin, ok := built[pkg]; ok {
		return bin
	}
	dir, err := os.MkdirTemp("", "orderflow-bin-")
	if err != nil {
		tb.Fatal(err)
	}
	bin := filepath.Join(dir, filepath.Base(pkg))
	out, err := exec.Command("go", "build", "-o", bin, "github.com/orderflow/orderflow/"+pkg).CombinedOutput()
	if err != nil {
		tb.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	built[pkg] = bin
	return bin
}

// Proc is a process started by a test, killed at cleanup if still running.
type Proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
	Log  string // path of its combined output
}

// Start runs bin with env added to the environment; output goes to a log file that
// is printed when the test fails.
func Start(tb testing.TB, bin string, env map[string]string, args ...string) *Proc {
	tb.Helper()
	logf, err := os.CreateTemp(tb.TempDir(), filepath.Base(bin)+"-*.log")
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", bin, err)
	}
	p := &Proc{cmd: cmd, done: make(chan struct{}), Log: logf.Name()}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	tb.Cleanup(func() {
		p.Signal(syscall.SIGKILL)
		<-p.done
		if tb.Failed() {
			out, _ := os.ReadFile(p.Log)
			tb.Logf("%s output:\n%s", filepath.Base(bin), tail(out, 4000))
		}
	})
	return p
}

// Signal sends sig to the process, if it still runs.
func (p *Proc) Signal(sig syscall.Signal) {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Signal(sig)
	}
}

// Kill sends SIGKILL and waits for the process to be gone.
func (p *Proc) Kill(tb testing.TB) {
	tb.Helper()
	p.Signal(syscall.SIGKILL)
	<-p.done
}

// Wait waits up to d for the process to exit and returns its exit code.
func (p *Proc) Wait(tb testing.TB, d time.Duration) int {
	tb.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		tb.Fatalf("process %s still running after %s", p.cmd.Path, d)
	}
	return p.cmd.ProcessState.ExitCode()
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// Eventually polls cond every 100 ms until it holds or d passes.
func Eventually(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// FreeAddr returns a loopback address with a port that was free a moment ago.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
