package stacktest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/orderflow/orderflow/testkit"
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
	cache, err := os.UserCacheDir()
	if err != nil {
		tb.Fatal(err)
	}
	shared, err := sharedBuild(filepath.Join(cache, "orderflow", "bin", "checkout"), pkg)
	if err != nil {
		tb.Fatal(err)
	}
	bin := filepath.Join(dir, filepath.Base(pkg))
	if err := copyFile(shared, bin); err != nil {
		tb.Fatal(err)
	}
	built[pkg] = bin
	return bin
}

// sharedBuild builds pkg under root, in a directory shared by the test processes
// of this checkout, one at a time: go build relinks only a binary that is out of date,
// so the processes after the first skip the link. Each process runs a copy,
// which a later build cannot change under it.
func sharedBuild(root, pkg string) (string, error) {
	mod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	sum := sha256.Sum256(bytes.TrimSpace(mod))
	dir := filepath.Join(root, hex.EncodeToString(sum[:6]), pkg)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", err
	}
	defer lock.Close() // releases the lock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("lock %s: %w", dir, err)
	}
	return testkit.Build(pkg, dir)
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return fmt.Errorf("copy %s: %w", from, err)
	}
	return dst.Close()
}

// Proc is a process started by a test, killed at cleanup if still running.
type Proc struct {
	*testkit.Proc
}

// Start runs bin with env added to the environment; output goes to a log file that
// is printed when the test fails.
func Start(tb testing.TB, bin string, env map[string]string, args ...string) *Proc {
	tb.Helper()
	p, err := testkit.Start(bin, env, tb.TempDir(), args...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		p.Signal(syscall.SIGKILL)
		_, _ = p.Wait(time.Minute)
		if tb.Failed() {
			out, _ := os.ReadFile(p.Log)
			tb.Logf("%s output:\n%s", filepath.Base(bin), tail(out, 4000))
		}
	})
	return &Proc{p}
}

// Kill sends SIGKILL and waits for the process to be gone.
func (p *Proc) Kill(tb testing.TB) {
	tb.Helper()
	p.Signal(syscall.SIGKILL)
	if _, err := p.Proc.Wait(time.Minute); err != nil {
		tb.Fatal(err)
	}
}

// Wait waits up to d for the process to exit and returns its exit code.
func (p *Proc) Wait(tb testing.TB, d time.Duration) int {
	tb.Helper()
	code, err := p.Proc.Wait(d)
	if err != nil {
		tb.Fatal(err)
	}
	return code
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
	if !Within(d, cond) {
		tb.Fatalf("timed out after %s waiting for %s", d, what)
	}
}

// Within polls cond every 100 ms for up to d and says whether it held: for a
// row that judges a wait that ran out instead of failing on it.
func Within(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	return true
}

// Progressing polls count every 200 ms until it reaches want. It gives up when
// count has not grown for stall, or when limit has passed since the call: a busy
// machine slows work that is moving, and only work that stopped is a failure.
func Progressing(stall, limit time.Duration, want int, count func() int) error {
	return progressing(stall, limit, 200*time.Millisecond, want, count)
}

func progressing(stall, limit, every time.Duration, want int, count func() int) error {
	start := time.Now()
	best, moved := count(), start
	for best < want {
		now := time.Now()
		switch {
		case now.Sub(moved) > stall:
			return fmt.Errorf("%d of %d after %s: none for %s", best, want, now.Sub(start).Round(time.Second), stall)
		case now.Sub(start) > limit:
			return fmt.Errorf("%d of %d after %s", best, want, limit)
		}
		time.Sleep(every)
		if n := count(); n > best {
			best, moved = n, time.Now()
		}
	}
	return nil
}

// The addresses FreeAddr has handed out in this test process: a port picked at
// random is free until its process listens, so two picks in a row may name the
// same one.
var (
	addrMu sync.Mutex
	addrs  = map[string]bool{}
)

// FreeAddr returns a loopback address with a port that was free a moment ago, and
// that no other call in this test process returned.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	addrMu.Lock()
	defer addrMu.Unlock()
	for {
		addr, err := testkit.FreeAddr()
		if err != nil {
			tb.Fatal(err)
		}
		if !addrs[addr] {
			addrs[addr] = true
			return addr
		}
	}
}

// BinaryAt builds a main package of this module as it was at a git commit: the
// binary a deployment of that version runs. The test skips, saying so, when the
// clone does not hold the commit (a shallow clone).
func BinaryAt(tb testing.TB, commit, pkg string) string {
	tb.Helper()
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		tb.Fatalf("find the repository: %v", err)
	}
	root := strings.TrimSpace(string(top))
	sha, err := exec.Command("git", "-C", root, "rev-parse", "--verify", "--quiet", commit+"^{commit}").Output()
	if err != nil {
		tb.Skipf("commit %s is not in this clone (a shallow clone?); a full clone runs this test", commit)
	}
	// A commit's binary never changes: it is built once per machine.
	cache, err := os.UserCacheDir()
	if err != nil {
		tb.Fatal(err)
	}
	cached := filepath.Join(cache, "orderflow", "bin", "at", strings.TrimSpace(string(sha)), filepath.Base(pkg))
	if _, err := os.Stat(cached); err == nil {
		return cached
	}
	src := filepath.Join(tb.TempDir(), commit)
	if err := os.MkdirAll(src, 0o755); err != nil {
		tb.Fatal(err)
	}
	if out, err := exec.Command("sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", root, commit, src).CombinedOutput(); err != nil {
		tb.Fatalf("check out %s: %v\n%s", commit, err, out)
	}
	// Built beside its place and moved in whole: a concurrent test finds the
	// binary complete or not at all.
	if err := os.MkdirAll(filepath.Dir(cached), 0o755); err != nil {
		tb.Fatal(err)
	}
	bin := cached + "." + strconv.Itoa(os.Getpid())
	build := exec.Command("go", "build", "-o", bin, "./"+pkg)
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		tb.Fatalf("build %s at %s: %v\n%s", pkg, commit, err, out)
	}
	if err := os.Rename(bin, cached); err != nil {
		tb.Fatal(err)
	}
	return cached
}
