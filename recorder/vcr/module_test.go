package vcr_test

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// userTest is a test in a user's own module: five lines of vcr use around
// a model call. With USERTEST_OFFLINE=1 the upstream is gone, so only the
// cassette can answer.
const userTest = `package agent

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/openmax/openmax/recorder/vcr"
	"github.com/openmax/openmax/replay/goldens"
)

func TestAgent(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, ` + "`" + `{"choices":[{"message":{"content":"hello from upstream"}}]}` + "`" + `)
	}))
	if os.Getenv("USERTEST_OFFLINE") == "1" {
		up.Close()
	}
	client := &http.Client{Transport: vcr.New(t)}
	resp, err := client.Post(up.URL+"/v1/chat/completions", "application/json", strings.NewReader(` + "`" + `{"model":"m"}` + "`" + `))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), "hello from upstream") {
		t.Fatalf("got %s", body)
	}
}

var update = flag.Bool("update", false, "rewrite golden files")

func TestRecordedSessions(t *testing.T) {
	goldens.Run(t, "cassettes", "golden", *update)
}
`

// TestUsedFromAnotherModule: a separate module requiring openmax (through
// a replace directive) records with vcr.New on its first run and replays
// offline on its second, with nothing but the public API.
func TestUsedFromAnotherModule(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test in a separate module; skipped in -short mode")
	}
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Clean(filepath.Join(filepath.Dir(here), "..", ".."))
	dir := t.TempDir()
	gomod := "module example.com/agent\n\ngo 1.26\n\nrequire github.com/openmax/openmax v0.0.0\n\nreplace github.com/openmax/openmax => " + root + "\n"
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"go.mod": gomod, "go.sum": string(sum), "agent_test.go": userTest} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fetchModules(t, dir)
	// Build the user's test binary once (go test -c), then run it twice.
	build := exec.Command("go", "test", "-c", "-mod=mod", "-o", "agent.test", ".")
	build.Dir = dir
	// The module's own settings, not ours (GOFLAGS may name -mod), but
	// the same compiler and linker flags, so what the test command built
	// is reused (.ci/test builds without debug information).
	build.Env = append(os.Environ(), "GOFLAGS="+buildFlags(os.Getenv("GOFLAGS")), "GOPROXY=off", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go test -c in the user's module: %v\n%s", err, out)
	}
	userRun := func(offline string, args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(dir, "agent.test"), append([]string{"-test.count=1"}, args...)...)
		cmd.Dir = dir
		// The user's own machine, not CI: under CI=true a missing
		// cassette is a failure (mode replay), not a recording.
		cmd.Env = append(os.Environ(), "USERTEST_OFFLINE="+offline, "OPENMAX_RECORD=", "OPENMAX_RECORD_MODE=", "CI=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	goTest := func(offline string, args ...string) {
		t.Helper()
		if out, err := userRun(offline, args...); err != nil {
			t.Fatalf("the user's test (offline=%s, %q): %v\n%s", offline, args, err, out)
		}
	}
	goTest("0", "-test.run", "TestAgent")
	cassette, err := os.ReadFile(filepath.Join(dir, "testdata", "TestAgent.yaml"))
	if err != nil || !strings.Contains(string(cassette), "hello from upstream") {
		t.Fatalf("the first run recorded no cassette: %v\n%s", err, cassette)
	}
	goTest("1", "-test.run", "TestAgent")

	// goldens.Run over a recorded harness session: -update writes the very
	// golden openmax's own library pins, a plain run passes, and a changed
	// golden fails with a diff.
	if err := os.MkdirAll(filepath.Join(dir, "cassettes"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain, err := os.ReadFile(filepath.Join(root, "cassettes", "openai_plain.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cassettes", "openai_plain.yaml"), plain, 0o644); err != nil {
		t.Fatal(err)
	}
	goTest("1", "-test.run", "TestRecordedSessions", "-update")
	got, err := os.ReadFile(filepath.Join(dir, "golden", "openai_plain.golden"))
	want, werr := os.ReadFile(filepath.Join(root, "golden", "cassettes", "openai_plain.golden"))
	if err != nil || werr != nil || string(got) != string(want) {
		t.Fatalf("goldens.Run -update wrote (%v, %v):\n%s\nwant the library's golden:\n%s", err, werr, got, want)
	}
	goTest("1", "-test.run", "TestRecordedSessions")
	if err := os.WriteFile(filepath.Join(dir, "golden", "openai_plain.golden"), []byte("something else\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := userRun("1", "-test.run", "TestRecordedSessions"); err == nil || !strings.Contains(out, "-something else") {
		t.Fatalf("a changed golden passed (%v):\n%s", err, out)
	}
}

// fetchModules puts into the module cache what building the user's module
// in dir needs, so that the build can run with GOPROXY=off: the packages'
// modules, and the go.mod of every module in the graph. That is more than
// openmax's own build reads: go-vcr v2.1.0 predates module graph pruning,
// so the go.mod files of its requirements (github.com/modocache/gover) are
// read too, and only `go mod download` fetches them for openmax. It goes
// through the ambient GOPROXY and GOFLAGS, so it needs no network when the
// cache has them already, and fetches them on a fresh machine.
func fetchModules(t *testing.T, dir string) {
	t.Helper()
	list := exec.Command("go", "list", "-mod=mod", "-deps", "-test", ".")
	list.Dir = dir
	list.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	list.Stdout, list.Stderr = io.Discard, &stderr
	if err := list.Run(); err != nil {
		t.Fatalf("fetching the modules the user's module needs (go list -deps through GOPROXY=%s): %v\n%s", goEnv(t, "GOPROXY"), err, stderr.String())
	}
}

// goEnv is go env name, as the go command sees it here.
func goEnv(t *testing.T, name string) string {
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(out))
}

// buildFlags keeps the -gcflags and -ldflags entries of a GOFLAGS value.
func buildFlags(goflags string) string {
	var keep []string
	for _, f := range strings.Fields(goflags) {
		if strings.HasPrefix(f, "-gcflags=") || strings.HasPrefix(f, "-ldflags=") {
			keep = append(keep, f)
		}
	}
	return strings.Join(keep, " ")
}
