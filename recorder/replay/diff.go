package replay

import "github.com/openmax/openmax/internal/linediff"

// The line diff of a miss lives in internal/linediff, shared with the
// fake codex app-server; these are its names here.
type edit = linediff.Edit

func diffLines(a, b []string) []edit { return linediff.Lines(a, b) }

func changes(ops []edit) int { return linediff.Changes(ops) }

func unified(ops []edit, from, to string, ctx int) string {
	return linediff.Unified(ops, from, to, ctx)
}
