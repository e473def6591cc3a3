package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestApproveFlag(t *testing.T) {
	project := t.TempDir()
	files := map[string]string{
		".openmax/tools/greet.json": `{"code": "greet.sh", "interpreter": ["/bin/sh"]}`,
		"greet.sh":                  "echo hello\n",
	}
	for name, content := range files {
		p := filepath.Join(project, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	getenv := trustedEnv(t, testEnv, project)
	sum := sha256.Sum256([]byte("echo hello\n"))
	full := hex.EncodeToString(sum[:])
	cases := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"one file", []string{"--approve", "greet.sh", "--project", project}, 0,
			"approved greet.sh sha " + full[:12] + " (sha256 " + full + ") in " + project + "\n", ""},
		{"equals form, two files", []string{"--project=" + project, "--approve=greet.sh", ".openmax/tools/greet.json"}, 0, "approved greet.sh sha " + full[:12], ""},
		{"missing file", []string{"--approve", "nope.sh", "--project", project}, 1, "", "openmax --approve: approve nope.sh:"},
		{"outside", []string{"--approve", "../x", "--project", project}, 1, "", "not a file inside the project"},
		{"nothing named", []string{"--approve", "", "--project", project}, 2, "", "name the file to approve"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), c.args, strings.NewReader(""), &out, &errOut, env{getenv: getenv})
			if code != c.code || !strings.HasPrefix(out.String(), c.stdout) || !strings.Contains(errOut.String(), c.stderr) {
				t.Errorf("exit %d stdout %q stderr %q; want %d, %q, %q", code, out.String(), errOut.String(), c.code, c.stdout, c.stderr)
			}
		})
	}

	// Approved from the terminal, the tool's first call asks nothing but
	// the gate every mutating call gets in ask mode (declined here at EOF:
	// nobody answers).
	sc := filepath.Join(t.TempDir(), "s.yaml")
	os.WriteFile(sc, []byte("replies:\n  - tool_calls: [{id: c1, name: greet, args: {}}]\n  - text: ok\n"), 0o644)
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"--stdio", "--provider", "script", "--script", sc, "--project", project, "--session-id", "s1"},
		strings.NewReader(`{"cmd":"user","text":"greet"}`+"\n"), &out, &errOut, env{getenv: getenv})
	if code != 0 || strings.Contains(out.String(), "unapproved_source") || !strings.Contains(out.String(), `"reason":"gate"`) {
		t.Errorf("exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
}
