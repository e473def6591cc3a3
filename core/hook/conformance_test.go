//go:build linux

package hook

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

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

// TestPerEventInterceptGetsOneMessageThenEOF: "A process-per-event backend
// receives exactly one JSON-RPC message on stdin, followed by EOF"
// (ahp-stdio-binding.md; AHP PE-1 in docs/conformance.md), for an intercept
// request, whose process must answer: the hook (a /bin/sh script, run by
// argv) reads stdin to its end before it answers, so an answer at all
// means EOF came, and its reason counts the lines it read.
func TestPerEventInterceptGetsOneMessageThenEOF(t *testing.T) {
	const script = `n=0; first=""
while IFS= read -r line; do n=$((n+1)); [ -n "$first" ] || first=$line; done
id=$(printf '%s' "$first" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
printf '{"jsonrpc":"2.0","id":%s,"result":{"decision":"refuse","reason":"%s message(s), then EOF"}}\n' "$id" "$n"`
	h := &Hook{Name: "counter", Event: core.HookUserPromptSubmit, Mode: ModeIntercept, Command: "/bin/sh",
		Args: []string{"-c", script}, Lifecycle: PerEvent, Timeout: 20 * time.Second, Dir: t.TempDir()}
	s := newSet(t, Options{}, h)
	for i := 0; i < 2; i++ {
		v, fs := s.Intercept(context.Background(), core.HookUserPromptSubmit, prompt)
		expect(t, v, fs, want{refused: true, reason: "1 message(s), then EOF"}, "counter")
	}
}

// TestArgvReachesTheHookLiterally: "The harness MUST invoke the configured
// command and argument array directly without implicit shell
// interpolation" (ahp-stdio-binding.md; AHP S-1 in docs/conformance.md).
// The arguments a hook process receives are the configured strings, shell
// syntax included: $HOME, ${X}, backticks, $(...), quotes, a glob and a
// semicolon each arrive as written, one argument each, both lifecycles.
func TestArgvReachesTheHookLiterally(t *testing.T) {
	t.Setenv("X", "expanded")
	args := []string{"$HOME", "${X}", "`id`", "$(id)", `'q' "d"`, "*", "a; b"}
	// The script answers with its arguments, one a line, base64 so that
	// any byte survives the JSON reason.
	const script = `IFS= read -r line
id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
enc=$(for a in "$@"; do printf '%s\n' "$a"; done | base64 | tr -d '\n')
printf '{"jsonrpc":"2.0","id":%s,"result":{"decision":"refuse","reason":"%s"}}\n' "$id" "$enc"
if [ "$0" = persistent ]; then cat >/dev/null; fi`
	for _, lc := range lifecycles {
		t.Run(lc, func(t *testing.T) {
			h := &Hook{Name: "argv", Event: core.HookUserPromptSubmit, Mode: ModeIntercept, Command: "/bin/sh",
				Args: append([]string{"-c", script, lc}, args...), Lifecycle: lc, Timeout: 20 * time.Second, Dir: t.TempDir()}
			s := newSet(t, Options{}, h)
			v, fs := s.Intercept(context.Background(), core.HookUserPromptSubmit, prompt)
			if len(fs) != 0 || !v.Refused {
				t.Fatalf("verdict %+v, failures %+v", v, fs)
			}
			got, err := base64.StdEncoding.DecodeString(v.Reason)
			if err != nil {
				t.Fatalf("reason %q: %v", v.Reason, err)
			}
			if want := strings.Join(args, "\n") + "\n"; string(got) != want {
				t.Errorf("the hook got the arguments\n%q\nwant\n%q", got, want)
			}
		})
	}
}
