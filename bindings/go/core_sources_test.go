package hilock_test

// The default build compiles the C core through cgo: one core_*.c wrapper
// per core/src .c file (core-sources.sh writes them). A core file without
// its wrapper would leave undefined symbols only when something first calls
// into it, so this test checks the list itself.

import (
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

var coreInclude = regexp.MustCompile(`(?m)^#include "\.\./\.\./core/src/([^"]+\.c)"$`)

func TestCoreSourcesCompiled(t *testing.T) {
	// go test runs in the package directory, bindings/go.
	src := filepath.Join("..", "..", "core", "src")
	if _, err := os.Stat(src); err != nil {
		t.Skipf("no core sources next to the package: %v", err)
	}
	want := map[string]bool{}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".c") {
			rel, _ := filepath.Rel(src, p)
			want[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 {
		t.Fatalf("no .c files under %s", src)
	}

	ctx := build.Default
	ctx.CgoEnabled = true
	pkg, err := ctx.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{} // core file -> wrapper
	for _, f := range pkg.CFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range coreInclude.FindAllStringSubmatch(string(b), -1) {
			if prev, dup := got[m[1]]; dup {
				t.Errorf("core/src/%s is included by both %s and %s", m[1], prev, f)
			}
			got[m[1]] = f
		}
	}
	var missing []string
	for f := range want {
		if _, ok := got[f]; !ok {
			missing = append(missing, "core/src/"+f)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("not compiled into the Go package: %s\n"+
			"run `sh bindings/go/core-sources.sh` and commit the core_*.c files it writes",
			strings.Join(missing, ", "))
	}
	for f, w := range got {
		if !want[f] {
			t.Errorf("%s includes core/src/%s, which does not exist: run `sh bindings/go/core-sources.sh`", w, f)
		}
	}

	// The wrappers' names must not read as GOOS/GOARCH suffixes (a core
	// file named linux.c would be compiled on Linux alone), and the
	// hilock_system tag must leave them all out.
	for _, goos := range []string{"linux", "darwin", "freebsd", "netbsd", "openbsd", "dragonfly", "illumos"} {
		for _, goarch := range []string{"amd64", "arm64", "386", "riscv64", "ppc64le", "s390x"} {
			c := ctx
			c.GOOS, c.GOARCH = goos, goarch
			for _, w := range got {
				if ok, err := c.MatchFile(".", w); err != nil || !ok {
					t.Errorf("%s is not compiled for %s/%s (rename it: core-sources.sh names it after the core file)", w, goos, goarch)
				}
			}
		}
	}
	sys := ctx
	sys.BuildTags = append([]string{"hilock_system"}, sys.BuildTags...)
	spkg, err := sys.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range spkg.CFiles {
		if strings.HasPrefix(f, "core_") {
			t.Errorf("%s is compiled with -tags hilock_system (it must link the installed libhilock only)", f)
		}
	}
}
