package external_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/openmax/openmax/core/tool/external"
)

// TestRunOutput: what a tool writes is its result, capped at
// external.OutputCap, valid UTF-8, with a note when it was cut.
func TestRunOutput(t *testing.T) {
	a := func(n int) string { return strings.Repeat("a", n) }
	capped := external.OutputCap
	tests := []struct {
		name, script, want string
	}{
		{"whole", "printf 'hi\\n'; printf 'err\\n' >&2", "hi\nerr\n"},
		{"invalid bytes replaced", `printf '\377 ok'`, "\uFFFD ok"},
		{"cut at the cap", "head -c 40000 /dev/zero | tr '\\0' a",
			a(capped) + "\n[output cut: 40000 bytes, showing the first 32768]"},
		{"cut inside a character", "head -c 32767 /dev/zero | tr '\\0' a; printf '\\303\\251 more'",
			a(capped-1) + "\n[output cut: 32774 bytes, showing the first 32767]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := project(t, map[string]string{
				".openmax/tools/out.json": `{"code": "out.sh", "interpreter": ["/bin/sh"]}`,
				"out.sh":                  tc.script + "\n",
			})
			tl, err := external.LoadManifest(dir, ".openmax/tools/out.json", external.Options{Getenv: func(k string) string { return map[string]string{"PATH": os.Getenv("PATH")}[k] }})
			if err != nil {
				t.Fatal(err)
			}
			res := tl.Run(context.Background(), json.RawMessage(`{}`))
			if !res.OK || res.Output != tc.want {
				t.Errorf("result OK=%v, output %q (%d bytes), want %q", res.OK, trim(res.Output), len(res.Output), trim(tc.want))
			}
		})
	}
}

// trim shortens long output for a failure message.
func trim(s string) string {
	if len(s) > 120 {
		return s[:40] + "…" + s[len(s)-80:]
	}
	return s
}
