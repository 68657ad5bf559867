// Package version names the build a binary is: the version make image links in
// (git describe), else the release this source is (CHANGELOG.md's newest) with the
// VCS revision the Go toolchain recorded.
package version

import (
	"runtime/debug"
)

// Release is this source's release: the newest in CHANGELOG.md, tagged on the
// commit that makes it.
const Release = "v1.4.0"

// linked is set at link time: -ldflags "-X github.com/orderflow/orderflow/platform/version.linked=v1.2.3".
var linked string

// String is the build's version: linked, or Release with "devel", the VCS revision
// and whether the tree had local changes.
func String() string {
	if linked != "" {
		return linked
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return Release + " devel"
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	v := Release + " devel"
	if rev != "" {
		v += " " + rev
	}
	if dirty {
		v += "-dirty"
	}
	return v
}
