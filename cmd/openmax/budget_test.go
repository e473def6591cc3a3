package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/provider"
)

// bigToolManifest is an external tool whose schema is large and written
// the way people write JSON, indented; only what goes to the model (the
// schema without the layout) is re-sent every request.
func bigToolManifest() string {
	var props []string
	for i := range 24 {
		props = append(props, fmt.Sprintf(`      "field_%02d": {
        "type": "string",
        "description": "Field number %d of the record to look up, as written in the ledger."
      }`, i, i))
	}
	return `{
  "description": "Look a record up in the project's ledger.",
  "code": ".openmax/tools/ledger.sh",
  "interpreter": ["/bin/sh"],
  "parameters": {
    "type": "object",
    "properties": {
` + strings.Join(props, ",\n") + `
    },
    "required": ["field_00"]
  }
}
`
}

// TestBudgetCountsFrozenToolSchemas: the budget that opens a turn is the
// estimate (core.EstimateTokens) of the request that follows it, computed
// from what that request carried as the loopback vendor received it: its
// system prompt, its messages and the tool schemas it re-sends. The same
// first turn in a project with an external tool of a large schema opens
// higher than in one without, by exactly what that tool adds to the
// estimate; the estimate counts the schema as it goes to the model, not
// the manifest's indentation. Removing the tool and adding another
// changes nothing until reload (the schemas are frozen), and after reload
// the budget counts the new tool set and no longer the old one.
func TestBudgetCountsFrozenToolSchemas(t *testing.T) {
	for _, w := range vendorWires {
		t.Run(w.name, func(t *testing.T) {
			srv, base := startVendor(t, "replies:\n  - text: one\n  - text: two\n  - text: three\n  - text: four\n")
			project := t.TempDir()
			getenv := trustedEnv(t, testEnv, project)
			args := append([]string{"--stdio", "--project", project}, w.flags(base)...)
			budgetOf := func(lines []map[string]any) int {
				t.Helper()
				if len(lines) == 0 || lines[0]["type"] != "budget" {
					t.Fatalf("the turn does not open with budget: %v", lines)
				}
				return int(lines[0]["used_tokens"].(float64))
			}
			estimate := func(r sentRequest) int { return core.EstimateTokens(r.System, r.Messages, r.Tools) }
			names := func(r sentRequest) []string {
				var out []string
				for _, sp := range r.Tools {
					out = append(out, sp.Name)
				}
				return out
			}

			// Built-in tools only.
			plain := startRun(t, getenv, args...)
			b0 := budgetOf(plain.send(`{"cmd":"user","text":"hi"}`, "done"))
			if code := plain.finish(); code != 0 {
				t.Fatalf("exit %d", code)
			}

			// The same first turn with the big external tool.
			writeFile(t, filepath.Join(project, ".openmax/tools/ledger.sh"), "echo ok\n")
			writeFile(t, filepath.Join(project, ".openmax/tools/ledger.json"), bigToolManifest())
			r := startRun(t, getenv, args...)
			b1 := budgetOf(r.send(`{"cmd":"user","text":"hi"}`, "done"))

			// The tool set changes on disk: frozen until reload.
			if err := os.Remove(filepath.Join(project, ".openmax/tools/ledger.json")); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(project, ".openmax/tools/lint.sh"), "echo ok\n")
			writeFile(t, filepath.Join(project, ".openmax/tools/lint.json"), `{"description":"lint the project","code":".openmax/tools/lint.sh","interpreter":["/bin/sh"]}`)
			b2 := budgetOf(r.send(`{"cmd":"user","text":"again"}`, "done"))
			r.send(`{"cmd":"reload"}`, "refrozen")
			b3 := budgetOf(r.send(`{"cmd":"user","text":"more"}`, "done"))
			if code := r.finish(); code != 0 {
				t.Fatalf("exit %d", code)
			}

			reqs := sentRequests(t, srv)
			if len(reqs) != 4 {
				t.Fatalf("%d requests, want 4", len(reqs))
			}
			r0, r1, r2, r3 := reqs[0], reqs[1], reqs[2], reqs[3]
			builtins := names(r0)
			if len(builtins) == 0 || slices.Contains(builtins, "ledger") {
				t.Fatalf("first session's tools %v", builtins)
			}
			if got := names(r1); !slices.Equal(got, append(slices.Clone(builtins), "ledger")) {
				t.Fatalf("second session's tools %v, want the built-in ones and ledger", got)
			}
			if got := names(r2); !slices.Equal(got, names(r1)) {
				t.Errorf("before reload the tools %v, want the frozen %v", got, names(r1))
			}
			if got := names(r3); !slices.Equal(got, append(slices.Clone(builtins), "lint")) {
				t.Errorf("after reload the tools %v, want the built-in ones and lint", got)
			}
			if r0.System != r1.System || !reflect.DeepEqual(r0.Messages, r1.Messages) {
				t.Fatalf("the two first requests differ in more than their tools:\n%+v\n%+v", r0, r1)
			}

			for i, c := range []struct {
				budget int
				req    sentRequest
			}{{b0, r0}, {b1, r1}, {b2, r2}, {b3, r3}} {
				if want := estimate(c.req); c.budget != want {
					t.Errorf("turn %d: budget %d, but the request that followed is estimated at %d", i+1, c.budget, want)
				}
			}
			// The difference is what the tool adds to the request: its
			// name, description and schema as sent, about four bytes a
			// token (give or take the rounding of the two totals), which
			// also holds the estimator itself to what it promises.
			ledger := r1.Tools[len(r1.Tools)-1]
			sent := len(ledger.Name) + len(ledger.Description) + len(ledger.Schema)
			if got, want := b1-b0, estimate(r1)-estimate(r0); got != want || got < sent/4 || got > sent/4+1 {
				t.Errorf("the big tool (%d bytes as sent) raised the first budget by %d, want %d, about %d", sent, got, want, sent/4)
			}
			// After reload the budget counts the new frozen schemas: the
			// same messages with the old tools would be estimated otherwise.
			old := sentRequest{System: r3.System, Messages: r3.Messages, Tools: r1.Tools}
			if b3 == estimate(old) {
				t.Errorf("after reload the budget %d still counts the old tools", b3)
			}
			if !slices.ContainsFunc(r3.Messages, func(m provider.Message) bool { return strings.Contains(m.Text, "tool ledger: removed") }) {
				t.Errorf("the request after reload carries no note of it: %+v", r3.Messages)
			}
		})
	}
}
