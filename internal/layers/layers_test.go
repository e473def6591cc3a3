package layers

import (
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/openmax/openmax/"

// rank orders the top-level folders: a package may import only packages
// of its own folder or of a folder ranked below it.
var rank = map[string]int{
	"internal": 1,
	"provider": 2,
	"core":     3,
	"recorder": 4,
	"replay":   5,
	"cmd":      6,
	"bench":    6,
}

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// list is `go list -json` of the patterns, production files only.
func list(t *testing.T, deps bool, patterns ...string) []pkg {
	t.Helper()
	args := []string{"list", "-json"}
	if deps {
		args = append(args, "-deps")
	}
	cmd := exec.Command("go", append(args, patterns...)...)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func folder(path string) string {
	f, _, _ := strings.Cut(strings.TrimPrefix(path, module), "/")
	return f
}

// TestImportsPointDown: no production import goes up a layer.
func TestImportsPointDown(t *testing.T) {
	for _, p := range list(t, false, "./...") {
		from, ok := rank[folder(p.ImportPath)]
		if !ok {
			t.Errorf("%s: top-level folder %q has no layer; add it to rank", p.ImportPath, folder(p.ImportPath))
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			if to := rank[folder(imp)]; to > from {
				t.Errorf("%s imports %s, a layer above it", p.ImportPath, imp)
			}
		}
	}
}

// TestLeaves: what a user's test compiles. The cassette package needs
// no engine, hook, codex client or tool; vcr.New needs none either. And
// what every openmax process pays for at start: runtime/metrics' init
// builds its whole table (~1 ms of a 20 ms start on a 2-core VM).
func TestLeaves(t *testing.T) {
	for _, tt := range []struct {
		pkg       string
		forbidden []string
	}{
		{"./recorder/cassette", []string{"core/harness", "core/hook", "provider/codex", "core/tool/builtin", "core", "recorder/replay"}},
		{"./recorder/vcr", []string{"core/harness", "core/hook", "provider/codex", "core/tool/builtin", "core/codexbackend", "core"}},
		{"./cmd/openmax", []string{"runtime/metrics"}},
	} {
		for _, p := range list(t, true, tt.pkg) {
			if name := strings.TrimPrefix(p.ImportPath, module); slices.Contains(tt.forbidden, name) {
				t.Errorf("%s depends on %s", tt.pkg, name)
			}
		}
	}
}
