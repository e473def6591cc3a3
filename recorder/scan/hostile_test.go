package scan

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestHostileFiles: what scan does with files that are not what it
// expects: each is scanned or refused, never hangs, and a secret in what
// it can read is still found on its line.
func TestHostileFiles(t *testing.T) {
	g := newSecretGen(9)
	secret := "sk-proj-" + g.key(48)
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}

	t.Run("a huge line, the secret across a block boundary", func(t *testing.T) {
		var b bytes.Buffer
		b.WriteString("first line\n")
		pad := textChunk - textOverlap - 10 - b.Len()
		b.WriteString(strings.Repeat("a b ", pad/4))
		b.WriteString(strings.Repeat(" ", pad%4))
		b.WriteString(" " + secret + " ")
		b.WriteString(strings.Repeat("z ", 5<<20))
		b.WriteString("\nlast " + secret + "x\n")
		res, err := File(write("huge.httprr", b.Bytes()), Options{})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{fmt.Sprintf("2 %s", Fingerprint(RuleOpenAI, secret)), fmt.Sprintf("3 %s", Fingerprint(RuleOpenAI, secret+"x"))}
		if got := lineFPs(res); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("findings %v, want %v", got, want)
		}
	})

	t.Run("a cassette over MaxYAML is read as text, streaming", func(t *testing.T) {
		var b bytes.Buffer
		b.WriteString("version: 1\ninteractions:\n  - request:\n      body: '")
		b.WriteString(strings.Repeat("x", 3<<20))
		b.WriteString("'\n      headers:\n        X-Debug:\n          - " + secret + "\n")
		res, err := File(write("big.yaml", b.Bytes()), Options{MaxYAML: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		if got := lineFPs(res); len(got) != 1 || got[0] != "7 "+Fingerprint(RuleOpenAI, secret) {
			t.Errorf("findings %v", got)
		}
		if res.Kind != "text" || len(res.Problems) != 1 || !strings.Contains(res.Problems[0].Message, "read as text") {
			t.Errorf("kind %q, problems %v; want text and a problem saying so", res.Kind, res.Problems)
		}
	})

	t.Run("a gzip body past MaxBody is a problem, not scanned", func(t *testing.T) {
		c := &cassetteBuilder{}
		c.w("version: 1")
		c.w("interactions:")
		c.request(nil, "", "https://api.example.test/")
		c.w("    response:")
		line := c.binaryBlock("      ", "body", gzipBytes(bytes.Repeat([]byte("0"), 8<<20)))
		c.w("      headers:")
		c.w("        Content-Encoding:")
		c.w("          - gzip")
		res := Bytes("bomb.yaml", []byte(c.b.String()), Options{MaxBody: 1 << 20})
		if len(res.Problems) != 1 || res.Problems[0].Line != line || !strings.Contains(res.Problems[0].Message, "over 1 MiB") {
			t.Errorf("problems %v; want one at line %d", res.Problems, line)
		}
	})

	t.Run("not YAML: a problem, and the text still scanned", func(t *testing.T) {
		res, err := File(write("bad.yaml", []byte("{{ not: [yaml\nkey: "+secret+"\n")), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Kind != "text" || len(res.Problems) != 1 || !strings.Contains(res.Problems[0].Message, "not well-formed YAML") {
			t.Errorf("kind %q, problems %v", res.Kind, res.Problems)
		}
		if got := lineFPs(res); len(got) != 1 || got[0] != "2 "+Fingerprint(RuleOpenAI, secret) {
			t.Errorf("findings %v", got)
		}
	})

	t.Run("text after the document end line is scanned", func(t *testing.T) {
		data := "version: 1\ninteractions: []\n...\n  - request:\n      body: '" + secret + "\n"
		res := Bytes("torn.yaml", []byte(data), Options{})
		if got := lineFPs(res); len(got) != 1 || got[0] != "5 "+Fingerprint(RuleOpenAI, secret) || res.Findings[0].Where != "after the document end" {
			t.Errorf("findings %v", res.Findings)
		}
	})

	t.Run("findings past MaxFindings are a problem, not listed", func(t *testing.T) {
		var b strings.Builder
		for i := range 3 * MaxFindings {
			fmt.Fprintf(&b, "X-Api-Key: abcdefgh%06d\n", i)
		}
		res, err := File(write("many.httprr", []byte(b.String())), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Findings) != MaxFindings || res.Findings[MaxFindings-1].Line != MaxFindings ||
			len(res.Problems) != 1 || !strings.Contains(res.Problems[0].Message, "not listed") {
			t.Errorf("%d findings, problems %v", len(res.Findings), res.Problems)
		}
	})

	t.Run("aliases are not expanded", func(t *testing.T) {
		var b strings.Builder
		b.WriteString("a: &a [\"" + secret + "\"]\n")
		prev := "a"
		for i := 0; i < 30; i++ {
			name := fmt.Sprintf("l%d", i)
			fmt.Fprintf(&b, "%s: &%s [*%s, *%s, *%s, *%s]\n", name, name, prev, prev, prev, prev)
			prev = name
		}
		res := Bytes("laughs.yaml", []byte(b.String()), Options{})
		if got := lineFPs(res); len(got) != 1 || got[0] != "1 "+Fingerprint(RuleOpenAI, secret) {
			t.Errorf("findings %v", got)
		}
	})

	t.Run("a FIFO is refused without opening it", func(t *testing.T) {
		fifo := filepath.Join(dir, "pipe.yaml")
		if err := syscall.Mkfifo(fifo, 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		if _, err := File(fifo, Options{}); !errors.Is(err, ErrNotRegular) {
			t.Errorf("err %v, want ErrNotRegular", err)
		}
	})

	t.Run("an unreadable file is an error", func(t *testing.T) {
		p := write("secret.yaml", []byte("a: b\n"))
		os.Chmod(p, 0)
		if os.Geteuid() == 0 {
			// Root reads every file; /proc/self/mem is a regular file whose
			// first page no one can read.
			p = "/proc/self/mem"
			if _, err := os.Stat(p); err != nil {
				t.Skip("root reads every file, and there is no /proc/self/mem")
			}
		}
		if _, err := File(p, Options{}); err == nil {
			t.Errorf("%s: no error", p)
		}
	})
}

// lineFPs is each finding as "LINE FINGERPRINT".
func lineFPs(res Result) []string {
	var out []string
	for _, f := range res.Findings {
		out = append(out, fmt.Sprintf("%d %s", f.Line, f.Fingerprint))
	}
	return out
}

// TestWalk: a directory is walked for recordings in lexical order; .git
// and other files are skipped; a symbolic link loop ends; a link to a
// file is followed, and so is a path given that links to a directory; a
// FIFO is listed (and refused by File); a missing path is an error
// beside the rest.
func TestWalk(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"b.yaml", "a/x.yml", "a/y.txt", ".git/c.yaml", "z.httprr", "g/t.golden", "g/s.txtar"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), []byte("a: b\n"), 0o644)
	}
	os.Symlink(dir, filepath.Join(dir, "a", "loop"))
	os.Symlink(filepath.Join(dir, "b.yaml"), filepath.Join(dir, "a", "link.yaml"))
	syscall.Mkfifo(filepath.Join(dir, "fifo.yaml"), 0o644)
	linked := filepath.Join(t.TempDir(), "linked")
	os.Symlink(filepath.Join(dir, "g"), linked)
	files, errs := Files([]string{dir, filepath.Join(dir, "missing.yaml"), filepath.Join(dir, "a", "y.txt"), linked})
	var rel []string
	for _, f := range files {
		r, _ := filepath.Rel(dir, f)
		if strings.HasPrefix(f, linked) {
			r = "linked:" + filepath.Base(f)
		}
		rel = append(rel, r)
	}
	want := "a/link.yaml a/x.yml b.yaml fifo.yaml g/s.txtar g/t.golden z.httprr a/y.txt linked:s.txtar linked:t.golden"
	if got := strings.Join(rel, " "); got != want {
		t.Errorf("files %s\nwant      %s", got, want)
	}
	if len(errs) != 1 || !errors.Is(errs[0], os.ErrNotExist) {
		t.Errorf("errors %v; want the missing path's", errs)
	}
}
