package version_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/orderflow/orderflow/platform/version"
)

// The version make image links in (the Dockerfile's -X flag) is what the binary
// prints.
func TestLinkedVersionIsPrinted(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "api")
	build := exec.Command("go", "build", "-o", bin,
		"-ldflags=-X github.com/orderflow/orderflow/platform/version.linked=v9.8.7-3-gabc1234", "../../cmd/api")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil || strings.TrimSpace(string(out)) != "api v9.8.7-3-gabc1234" {
		t.Fatalf("api version: %q %v", out, err)
	}
}

// The release a build from source names is CHANGELOG.md's newest.
func TestReleaseIsTheChangelogsNewest(t *testing.T) {
	b, err := os.ReadFile("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^## (v\d+\.\d+\.\d+)`).FindStringSubmatch(string(b))
	if m == nil || m[1] != version.Release {
		t.Fatalf("CHANGELOG.md's newest release %v, version.Release %s", m, version.Release)
	}
	if got := version.String(); !strings.HasPrefix(got, version.Release+" devel") {
		t.Fatalf("String() = %q, want the release and devel", got)
	}
}
