package goldens_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openmax/openmax/replay/goldens"
)

// TestGoldensNoSessionNextStep: goldens.Run on a cassette with no recorded
// session (a proxy recording) fails its subtest with the next step the
// CLI gives: serve it with fake-provider, or import it to make a session
// up. It runs Goldens in a child test process, which must fail.
func TestGoldensNoSessionNextStep(t *testing.T) {
	if dir := os.Getenv("OPENMAX_VCR_GOLDENS_DIR"); dir != "" {
		goldens.Run(t, dir, filepath.Join(dir, "golden"), false)
		return
	}
	data, err := os.ReadFile(filepath.Join("..", "..", "cassettes", "openai_plain.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	head, _, found := strings.Cut(string(data), "\nopenmax:\n")
	if !found {
		t.Fatal("the library cassette has no session to take out")
	}
	dir := t.TempDir()
	cassette := filepath.Join(dir, "proxy.yaml")
	if err := os.WriteFile(cassette, []byte(head+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestGoldensNoSessionNextStep$", "-test.v")
	cmd.Env = append(os.Environ(), "OPENMAX_VCR_GOLDENS_DIR="+dir)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("goldens.Run passed a cassette with no session:\n%s", out)
	}
	for _, want := range []string{"no recorded harness session", "openmax fake-provider --cassette " + cassette, "openmax cassette import " + cassette + " OUT.yaml"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the failure lacks %q:\n%s", want, out)
		}
	}
}
