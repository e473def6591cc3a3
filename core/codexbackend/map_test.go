package codexbackend

import (
	"testing"

	"github.com/openmax/openmax/provider/codex"
)

func TestRetryCount(t *testing.T) {
	for _, tt := range []struct {
		msg           string
		n             int
		attempt, max_ int
	}{
		{"Reconnecting... 1/2", 1, 2, 3},
		{"Reconnecting... 5/5", 5, 6, 6},
		{"Reconnecting... waiting for network", 3, 4, 4}, // no count: the attempts seen
		{"Reconnecting... 3/2", 1, 2, 2},                 // nonsense: counted instead
		{"Reconnecting... 99999999999999999999/5", 1, 2, 2},
	} {
		a, m := retryCount(tt.msg, tt.n)
		if a != tt.attempt || m != tt.max_ {
			t.Errorf("retryCount(%q, %d) = %d/%d, want %d/%d", tt.msg, tt.n, a, m, tt.attempt, tt.max_)
		}
		if a < 2 || a > m {
			t.Errorf("retryCount(%q) = %d/%d breaks the wire's 2 <= attempt <= max_attempts", tt.msg, a, m)
		}
	}
}

func TestFileDiff(t *testing.T) {
	for _, tt := range []struct {
		name       string
		change     codex.FileUpdateChange
		diff       string
		add, remov int
	}{
		{"add", codex.FileUpdateChange{Path: "/p/a.txt", Kind: codex.PatchChangeKind{Type: codex.PatchChangeKindTypeAdd}, Diff: "one\ntwo\n"},
			"--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n", 2, 0},
		{"add one line", codex.FileUpdateChange{Kind: codex.PatchChangeKind{Type: codex.PatchChangeKindTypeAdd}, Diff: "one\n"},
			"--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1 @@\n+one\n", 1, 0},
		{"delete", codex.FileUpdateChange{Kind: codex.PatchChangeKind{Type: codex.PatchChangeKindTypeDelete}, Diff: "gone\n"},
			"--- a/a.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n", 0, 1},
		{"update", codex.FileUpdateChange{Kind: codex.PatchChangeKind{Type: codex.PatchChangeKindTypeUpdate}, Diff: "@@ -1,2 +1,2 @@\n-old\n+new\n keep\n"},
			"--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n-old\n+new\n keep\n", 1, 1},
		{"move", codex.FileUpdateChange{Kind: codex.PatchChangeKind{Type: codex.PatchChangeKindTypeUpdate, MovePath: "b.txt"}, Diff: "@@ -1 +1 @@\n-x\n+y\n"},
			"--- a/a.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-x\n+y\n", 1, 1},
		{"empty add", codex.FileUpdateChange{Kind: codex.PatchChangeKind{Type: codex.PatchChangeKindTypeAdd}},
			"--- /dev/null\n+++ b/a.txt\n", 0, 0},
	} {
		d := fileDiff("c1", "a.txt", tt.change)
		if d.Diff != tt.diff || d.Added != tt.add || d.Removed != tt.remov || d.CallID != "c1" || d.Path != "a.txt" {
			t.Errorf("%s: %+v, want diff %q +%d -%d", tt.name, d, tt.diff, tt.add, tt.remov)
		}
	}
}

func TestRelativePaths(t *testing.T) {
	r := &turnRun{b: New(Config{Dir: "/work/p"})}
	for in, want := range map[string]string{
		"/work/p/a.txt":   "a.txt",
		"/work/p/d/b.txt": "d/b.txt",
		"/work/pq/c.txt":  "/work/pq/c.txt",
		"/etc/passwd":     "/etc/passwd",
		"rel.txt":         "rel.txt",
	} {
		if got := r.rel(in); got != want {
			t.Errorf("rel(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestErrorText(t *testing.T) {
	if got := errorText(codex.TurnError{Message: "Reconnecting... 1/2", AdditionalDetails: "stream closed"}); got != "Reconnecting... 1/2: stream closed" {
		t.Errorf("with details: %q", got)
	}
	if got := errorText(codex.TurnError{Message: "Quota exceeded."}); got != "Quota exceeded." {
		t.Errorf("without: %q", got)
	}
}
