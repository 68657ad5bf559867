package stacktest

import (
	"os"
	"testing"
)

// A second build of the same package, as another test process would ask for it,
// finds the shared binary up to date and leaves it as it was: a link would write
// a new file in its place.
func TestSharedBuildLinksOnce(t *testing.T) {
	root := t.TempDir()
	first, err := sharedBuild(root, "cmd/paysim")
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(first)
	if err != nil {
		t.Fatal(err)
	}
	second, err := sharedBuild(root, "cmd/paysim")
	if err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(second)
	if err != nil {
		t.Fatal(err)
	}
	if second != first || !os.SameFile(before, after) {
		t.Errorf("second build: %s, a new file; want %s as it was", second, first)
	}
	copied := t.TempDir() + "/paysim"
	if err := copyFile(second, copied); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(copied); err != nil || info.Size() != after.Size() || info.Mode().Perm()&0o100 == 0 {
		t.Errorf("copy of the binary: %v, %v", info, err)
	}
}
