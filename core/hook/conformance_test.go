package hook

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/openmax/openmax/core"
)

// TestAbsentEnvAddsNothing: "Absent env adds nothing" (ahp-stdio-binding.md,
// Process environment; AHP E-4 in docs/conformance.md). A hook with no env
// object, and one with an empty one, each get exactly the base environment:
// the same variable names, none beyond the base ones, while openmax's own
// environment holds more.
func TestAbsentEnvAddsNothing(t *testing.T) {
	t.Setenv("OPENMAX_CONFORMANCE_EXTRA", "not-for-hooks")
	for _, lc := range lifecycles {
		t.Run(lc, func(t *testing.T) {
			names := func(env map[string]string) []string {
				dump := filepath.Join(t.TempDir(), "env")
				h := testHook(t, "h1", core.HookUserPromptSubmit, lc, "dumpenv", dump)
				h.Env = env
				s := newSet(t, Options{}, h)
				v, fs := s.Intercept(context.Background(), core.HookUserPromptSubmit, prompt)
				expect(t, v, fs, want{}, "h1")
				data, err := os.ReadFile(dump)
				if err != nil {
					t.Fatal(err)
				}
				var ks []string
				for _, kv := range strings.Split(strings.TrimSpace(string(data)), "\n") {
					k, _, _ := strings.Cut(kv, "=")
					ks = append(ks, k)
				}
				sort.Strings(ks)
				return ks
			}
			absent, empty := names(nil), names(map[string]string{})
			if strings.Join(absent, " ") != strings.Join(empty, " ") {
				t.Errorf("no env: %v; empty env: %v", absent, empty)
			}
			for _, k := range absent {
				switch {
				case k == "PATH", k == "HOME", k == "TMPDIR", k == "OPENMAX_AGENT_SPAWNED", strings.HasPrefix(k, "LC_"), k == "LANG":
				default:
					t.Errorf("%s reached a hook with no env", k)
				}
			}
			if len(absent) == 0 || absent[0] == "" {
				t.Errorf("no base environment at all: %v", absent)
			}
		})
	}
}
