package version_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The version make image links in (the Dockerfile's -X flag) is what the binary
// prints.
func TestLinkedVersionIsPrinted(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "api")
	build := exec.Command("go", "build", "-o", bin,
		"-ldflags=-X github.com/orderflow/orderflow/internal/platform/version.linked=v9.8.7-3-gabc1234", "../../../cmd/api")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil || strings.TrimSpace(string(out)) != "api v9.8.7-3-gabc1234" {
		t.Fatalf("api version: %q %v", out, err)
	}
}
