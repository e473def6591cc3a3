package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// reportDoc is the part of report.json these tests read.
type reportDoc struct {
	Format    string
	Cassettes []struct {
		Name, Page  string
		ReplayError string `json:"replay_error"`
		Chunks      int
		Turns       []struct {
			Interactions []struct{ Chunks int }
		}
		Unused []struct{ Chunks int }
	}
	Suite *struct{ Passed, Failed, Unchecked int }
	Sweep *struct {
		Page             string
		Variants, Failed int
		Cassettes        []struct {
			Rows []struct {
				Cells [][]struct{ Page string }
			}
		}
	}
}

// runReportTo runs `openmax report ARGS --html OUT` and reads OUT's
// report.json, failing t unless it exits 0.
func runReportTo(t *testing.T, args ...string) (string, reportDoc) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "site")
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := run(context.Background(), append(append([]string{"report"}, args...), "--html", out), nil, &stdout, &stderr, env{})
	t.Logf("openmax report %s: %s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout.Bytes(), stderr.Bytes())
	}
	if got := strings.TrimSpace(stdout.String()); got != filepath.Join(out, "index.html") {
		t.Errorf("stdout %q, want the index page", got)
	}
	var doc reportDoc
	raw, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, c := range doc.Cassettes {
		if _, err := os.Stat(filepath.Join(out, c.Page)); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
	}
	return out, doc
}

// TestReportLibrary: the whole library, as a suite against its golden
// files; every chunk of every cassette is on a timeline.
func TestReportLibrary(t *testing.T) {
	_, doc := runReportTo(t, libraryDir)
	paths, _ := filepath.Glob(filepath.Join(libraryDir, "*.yaml"))
	if len(doc.Cassettes) != len(paths) || doc.Suite == nil {
		t.Fatalf("%d cassettes reported, the library has %d; suite %v", len(doc.Cassettes), len(paths), doc.Suite)
	}
	if doc.Suite.Passed != len(paths) {
		t.Errorf("suite: %+v, want every cassette to pass", *doc.Suite)
	}
	for _, c := range doc.Cassettes {
		n := 0
		for _, turn := range c.Turns {
			for _, it := range turn.Interactions {
				n += it.Chunks
			}
		}
		if c.ReplayError != "" || len(c.Unused) > 0 || n != c.Chunks {
			t.Errorf("%s: replay error %q, %d unused interactions, %d of its %d chunks in turns", c.Name, c.ReplayError, len(c.Unused), n, c.Chunks)
		}
	}
}

// TestReportReal: the recordings of other tools, converted as they are
// loaded; with no golden files they are replayed, not judged.
func TestReportReal(t *testing.T) {
	real := filepath.Join(libraryDir, "real")
	_, doc := runReportTo(t, real)
	paths, _ := filepath.Glob(filepath.Join(real, "*.yaml"))
	if len(doc.Cassettes) != len(paths) {
		t.Fatalf("%d cassettes reported, %s has %d", len(doc.Cassettes), real, len(paths))
	}
	for _, c := range doc.Cassettes {
		n := 0
		for _, turn := range c.Turns {
			for _, it := range turn.Interactions {
				n += it.Chunks
			}
		}
		for _, it := range c.Unused {
			n += it.Chunks
		}
		if c.Chunks == 0 || n != c.Chunks {
			t.Errorf("%s: %d chunks on its timelines, %d recorded", c.Name, n, c.Chunks)
		}
	}
	if doc.Suite == nil || doc.Suite.Unchecked == 0 {
		t.Errorf("suite %+v: the real recordings have no golden files", doc.Suite)
	}
}

// TestReportSweep: --sweep adds the matrix, every cell a page.
func TestReportSweep(t *testing.T) {
	out, doc := runReportTo(t, filepath.Join(libraryDir, "story.yaml"), "--sweep", "--max-variants", "30")
	if doc.Sweep == nil || doc.Sweep.Variants < 30 {
		t.Fatalf("sweep %+v", doc.Sweep)
	}
	cells := 0
	for _, m := range doc.Sweep.Cassettes {
		for _, r := range m.Rows {
			for _, c := range r.Cells {
				for _, v := range c {
					cells++
					if _, err := os.Stat(filepath.Join(out, v.Page)); err != nil {
						t.Error(err)
					}
				}
			}
		}
	}
	if cells != doc.Sweep.Variants-1 { // the unmodified replay is no cell
		t.Errorf("%d cells for %d variants", cells, doc.Sweep.Variants)
	}
	if _, err := os.Stat(filepath.Join(out, doc.Sweep.Page)); err != nil {
		t.Error(err)
	}
}

func TestReportCLI(t *testing.T) {
	story := filepath.Join(libraryDir, "story.yaml")
	full := t.TempDir()
	os.WriteFile(filepath.Join(full, "old.html"), []byte("x"), 0o644)
	reportSubcommands["test-sub"] = func(_ context.Context, args []string, stdout, _ io.Writer, _ env) int {
		io.WriteString(stdout, "sub "+strings.Join(args, " "))
		return 0
	}
	defer delete(reportSubcommands, "test-sub")
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string // in stdout or stderr
	}{
		{"help", []string{"--help"}, 0, "usage: openmax report CASSETTE|DIR"},
		{"no --html", []string{story}, 2, "--html OUTDIR is required"},
		{"two inputs", []string{story, story, "--html", t.TempDir()}, 2, "want one cassette or directory, got 2"},
		{"an OUTDIR with files", []string{story, "--html", full}, 2, "already holds files"},
		{"the cassettes' folder", []string{libraryDir, "--html", libraryDir}, 2, "is the folder of cassettes"},
		{"a missing cassette", []string{"no-such.yaml", "--html", filepath.Join(t.TempDir(), "o")}, 1, "no-such.yaml"},
		{"a subcommand beside it", []string{"test-sub", "a", "b"}, 0, "sub a b"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"report"}, tt.args...), nil, &stdout, &stderr, env{})
			if code != tt.code || !strings.Contains(stdout.String()+stderr.String(), tt.want) {
				t.Errorf("exit %d, want %d with %q\nstdout: %s\nstderr: %s", code, tt.code, tt.want, stdout.Bytes(), stderr.Bytes())
			}
		})
	}
	// --overwrite writes into a folder that holds files.
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"report", story, "--html", full, "--overwrite"}, nil, io.Discard, &stderr, env{}); code != 0 {
		t.Errorf("--overwrite: exit %d: %s", code, stderr.Bytes())
	}
}
