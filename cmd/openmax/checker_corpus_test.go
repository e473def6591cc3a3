package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openmax/openmax/core/wire"
	"golang.org/x/tools/txtar"
)

// checkerCase is one archive of testdata/checker: a rule of
// stdio-protocol.md (its ID in wire.SpecRules, or a strict rule), the
// sentence it comes from, the violation an illegal stream must produce, and
// legal and illegal streams, each with the client's stdin when a section
// NAME.input goes with it.
type checkerCase struct {
	rule, want, strict string
	streams            []checkerStream
}

type checkerStream struct {
	name          string
	legal         bool
	stream, input []byte
}

func loadCheckerCase(t *testing.T, path string) checkerCase {
	t.Helper()
	a, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c checkerCase
	for _, l := range strings.Split(string(a.Comment), "\n") {
		k, v, _ := strings.Cut(l, ": ")
		switch k {
		case "rule":
			c.rule = v
		case "want":
			c.want = v
		case "strict":
			c.strict = v
		}
	}
	inputs := map[string][]byte{}
	for _, f := range a.Files {
		if name, ok := strings.CutSuffix(f.Name, ".input"); ok {
			inputs[name] = f.Data
		}
	}
	for _, f := range a.Files {
		if strings.HasSuffix(f.Name, ".input") {
			continue
		}
		legal := strings.HasPrefix(f.Name, "legal")
		if !legal && !strings.HasPrefix(f.Name, "illegal") {
			t.Fatalf("%s: section %q is neither legal nor illegal", path, f.Name)
		}
		c.streams = append(c.streams, checkerStream{name: f.Name, legal: legal, stream: f.Data, input: inputs[f.Name]})
	}
	if c.rule == "" || len(c.streams) == 0 {
		t.Fatalf("%s: no rule or no streams", path)
	}
	return c
}

// checkThroughBinary runs openmax --check --stdio [--strict] [--input F] on
// a stream and returns its verdict lines and exit code.
func checkThroughBinary(t *testing.T, bin string, s checkerStream, strict bool) (string, int) {
	t.Helper()
	args := []string{"--check", "--stdio"}
	if strict {
		args = append(args, "--strict")
	}
	if s.input != nil {
		f := filepath.Join(t.TempDir(), "stdin.jsonl")
		if err := os.WriteFile(f, s.input, 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--input", f)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdin = bytes.NewReader(s.stream)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code > 1 {
		t.Fatalf("%s: exit %d: %s", s.name, code, errb.String())
	}
	return out.String(), code
}

// TestCheckerCorpusThroughBinary: openmax --check --stdio checks
// stdio-protocol.md, no more and no less (issue 22, point 1). Every legal
// stream of testdata/checker passes the default mode and every illegal one
// fails it with the case's violation; --strict refuses every illegal stream
// too, and a legal one exactly when the case says openmax's own habits
// refuse it. Every rule of wire.SpecRules has a case both ways.
func TestCheckerCorpusThroughBinary(t *testing.T) {
	bin := buildBinary(t)
	paths, err := filepath.Glob(filepath.Join("testdata", "checker", "*.txtar"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no checker cases: %v", err)
	}
	covered := map[string][2]bool{} // rule: legal, illegal
	for _, path := range paths {
		c := loadCheckerCase(t, path)
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			for _, s := range c.streams {
				cov := covered[c.rule]
				if s.legal {
					cov[0] = true
				} else {
					cov[1] = true
				}
				covered[c.rule] = cov
				out, code := checkThroughBinary(t, bin, s, false)
				switch {
				case s.legal && code != 0:
					t.Errorf("%s: legal stream refused:\n%s", s.name, out)
				case !s.legal && code == 0:
					t.Errorf("%s: illegal stream accepted:\n%s", s.name, out)
				case !s.legal && !strings.Contains(out, c.want):
					t.Errorf("%s: refused, but not for %q:\n%s", s.name, c.want, out)
				}
				sout, scode := checkThroughBinary(t, bin, s, true)
				wantStrict := 1
				if s.legal && c.strict != "refuses" {
					wantStrict = 0
				}
				if scode != wantStrict {
					t.Errorf("%s: --strict exits %d, want %d:\n%s", s.name, scode, wantStrict, sout)
				}
			}
		})
	}
	for _, r := range wire.SpecRules {
		if cov := covered[r.ID]; !cov[0] || !cov[1] {
			t.Errorf("spec rule %s has no corpus case both ways (legal %v, illegal %v)", r.ID, cov[0], cov[1])
		}
	}
}

// goldenStreams are the openmax stdout streams of golden/**: each
// transcript section of a txtar case and each cassette .golden file, up to
// their "exit:" line.
func goldenStreams(t *testing.T) map[string][]byte {
	t.Helper()
	streams := map[string][]byte{}
	cut := func(b []byte) []byte {
		if i := bytes.Index(b, []byte("\nexit:")); i >= 0 {
			return b[:i+1]
		}
		if bytes.HasPrefix(b, []byte("exit:")) {
			return nil
		}
		return b
	}
	err := filepath.WalkDir("../../golden", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch filepath.Ext(path) {
		case ".txtar":
			a, err := txtar.ParseFile(path)
			if err != nil {
				return err
			}
			for _, f := range a.Files {
				if strings.HasPrefix(f.Name, "transcript") {
					streams[path+":"+f.Name] = cut(f.Data)
				}
			}
		case ".golden":
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			streams[path] = cut(b)
		}
		return nil
	})
	if err != nil || len(streams) < 100 {
		t.Fatalf("golden streams: %d, %v", len(streams), err)
	}
	return streams
}

// TestGoldenTranscriptsPassBothModes: every golden transcript of openmax is
// legal under stdio-protocol.md and under openmax's own stricter habits.
func TestGoldenTranscriptsPassBothModes(t *testing.T) {
	for name, stream := range goldenStreams(t) {
		for _, strict := range []bool{false, true} {
			var opts []wire.CheckOption
			if strict {
				opts = append(opts, wire.Strict())
			}
			var bad []string
			if _, err := wire.NewChecker(opts...).Stream(bytes.NewReader(stream), func(v wire.Verdict) {
				if v.Err != nil {
					bad = append(bad, string(v.AppendLine(nil)))
				}
			}); err != nil {
				t.Fatal(err)
			}
			if len(bad) > 0 {
				t.Errorf("%s (strict %v): %s", name, strict, strings.Join(bad, "; "))
			}
		}
	}
}
