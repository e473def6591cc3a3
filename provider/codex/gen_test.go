package codex

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestSchemaVersionMatchesCodex compares SchemaVersion with the codex CLI
// at hand: $CODEX, else codex on PATH, else the pinned npm install the
// cmd/openmax tests make. Without any of them it skips.
func TestSchemaVersionMatchesCodex(t *testing.T) {
	kept, err := os.ReadFile(filepath.Join("schema", "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	if v := strings.TrimSpace(string(kept)); v != SchemaVersion {
		t.Fatalf("schema/VERSION says %s, protocol.gen.go says %s: run `go generate ./provider/codex`", v, SchemaVersion)
	}
	bin, from := codexForVersion(t)
	if bin == "" {
		t.Skip("no codex CLI: set $CODEX, put codex on PATH, or install the pinned npm packages (go test ./cmd/openmax -run TestCodex does)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--version")
	home := t.TempDir()
	const deadProxy = "http://127.0.0.1:9"
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "CODEX_HOME=" + home,
		"HTTPS_PROXY=" + deadProxy, "HTTP_PROXY=" + deadProxy, "ALL_PROXY=" + deadProxy}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s --version: %v", bin, err)
	}
	f := strings.Fields(string(out))
	if len(f) == 0 {
		t.Fatalf("%s --version printed nothing", bin)
	}
	if got := f[len(f)-1]; got != SchemaVersion {
		t.Fatalf("codex (%s, %s) is %s but the protocol types were generated from %s: "+
			"run `go generate ./provider/codex` with this codex, then re-record the transcripts", bin, from, got, SchemaVersion)
	}
}

// TestCommittedSchemaMatchesCodex runs the generator as go generate does,
// with the codex CLI at hand when it is the version of the committed
// schema: the bundle it prints and the file made from it must be the
// committed ones.
func TestCommittedSchemaMatchesCodex(t *testing.T) {
	bin, from := codexForVersion(t)
	if bin == "" {
		t.Skip("no codex CLI: set $CODEX, put codex on PATH, or install the pinned npm packages (go test ./cmd/openmax -run TestCodex does)")
	}
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		t.Skipf("no go command at %s: %v", goBin, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	keep := t.TempDir()
	out := filepath.Join(keep, "protocol.gen.go")
	cmd := exec.CommandContext(ctx, goBin, "run", "./internal/gen", "-codex", bin, "-schemadir", keep, "-out", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run ./internal/gen -codex %s: %v\n%s", bin, err, b)
	}
	version, err := os.ReadFile(filepath.Join(keep, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	if v := strings.TrimSpace(string(version)); v != SchemaVersion {
		t.Skipf("codex (%s) is %s, not %s: TestSchemaVersionMatchesCodex says what to do", from, v, SchemaVersion)
	}
	for _, f := range []struct{ got, want string }{
		{filepath.Join(keep, "codex_app_server_protocol.schemas.json"), filepath.Join("schema", "codex_app_server_protocol.schemas.json")},
		{out, "protocol.gen.go"},
	} {
		got, err := os.ReadFile(f.got)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(f.want)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("codex %s (%s) makes a %s other than the committed one: run `go generate ./provider/codex` and commit the result",
				SchemaVersion, from, filepath.Base(f.want))
		}
	}
}

// codexForVersion finds a codex CLI and says where it came from; "" when
// there is none.
func codexForVersion(t *testing.T) (bin, from string) {
	t.Helper()
	if env := os.Getenv("CODEX"); env != "" {
		return env, "$CODEX"
	}
	if p, err := exec.LookPath("codex"); err == nil {
		return p, "PATH"
	}
	// The npm install of cmd/openmax's tests: keyed by the lock file's
	// hash, the platform's native package inside.
	pkgs := map[string][2]string{
		"linux/amd64":  {"codex-linux-x64", "x86_64-unknown-linux-musl"},
		"linux/arm64":  {"codex-linux-arm64", "aarch64-unknown-linux-musl"},
		"darwin/amd64": {"codex-darwin-x64", "x86_64-apple-darwin"},
		"darwin/arm64": {"codex-darwin-arm64", "aarch64-apple-darwin"},
	}
	pkg, ok := pkgs[runtime.GOOS+"/"+runtime.GOARCH]
	if !ok {
		return "", ""
	}
	lock, err := os.ReadFile(filepath.Join("..", "..", "cmd", "openmax", "testdata", "npm", "package-lock.json"))
	if err != nil {
		return "", ""
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", ""
	}
	sum := sha256.Sum256(lock)
	dir := filepath.Join(cache, "openmax-npm", hex.EncodeToString(sum[:])[:16], "node_modules")
	if _, err := os.Stat(filepath.Join(dir, ".openmax-installed")); err != nil {
		return "", ""
	}
	p := filepath.Join(dir, "@openai", pkg[0], "vendor", pkg[1], "bin", "codex")
	if _, err := os.Stat(p); err != nil {
		return "", ""
	}
	return p, "the pinned npm install"
}

// The sessions in internal/gen/testdata/*.ndjson are real sessions of
// codex-cli 0.169.0's app-server, recorded offline against `openmax
// fake-provider --scenario`: every line both ways as {"dir","msg"}.
// session-text: initialize, a thread with a dynamic-tool namespace, a turn
// answered with text, thread/read, a refused account/rateLimits/read.
// session-tool-retry: a turn whose model calls the dynamic tool (answered),
// then a turn whose first model request gets a 429 (error with willRetry).
const sessionGlob = "internal/gen/testdata/*.ndjson"

// TestRealMessagesDecode decodes every message of the real sessions into
// the generated types, refusing unknown members, and checks that encoding
// the typed value again keeps every member that is not null or empty.
func TestRealMessagesDecode(t *testing.T) {
	files, err := filepath.Glob(sessionGlob)
	if err != nil || len(files) == 0 {
		t.Fatalf("no sessions in %s (%v)", sessionGlob, err)
	}
	seen := map[string]bool{}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			decodeSession(t, file, seen)
		})
	}
	for _, want := range []string{
		"result of initialize", "result of thread/start", "result of turn/start", "result of thread/read",
		"params of thread/start", "params of turn/start",
		"notification turn/started", "notification item/started", "notification item/agentMessage/delta",
		"notification item/completed", "notification thread/tokenUsage/updated", "notification turn/completed",
		"server request item/tool/call", "answer to item/tool/call", "notification error",
	} {
		if !seen[want] {
			t.Errorf("no session has a %s", want)
		}
	}
}

// decodeSession checks one session file; seen collects what it decoded.
func decodeSession(t *testing.T, file string, seen map[string]bool) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// The params the client sends: the types it sends with.
	sendParams := map[string]func() any{
		MethodInitialize:            func() any { return new(InitializeParams) },
		MethodThreadStart:           func() any { return new(ThreadStartParams) },
		MethodThreadResume:          func() any { return new(ThreadResumeParams) },
		MethodThreadFork:            func() any { return new(ThreadForkParams) },
		MethodThreadRead:            func() any { return new(ThreadReadParams) },
		MethodTurnStart:             func() any { return new(TurnStartParams) },
		MethodTurnSteer:             func() any { return new(TurnSteerParams) },
		MethodTurnInterrupt:         func() any { return new(TurnInterruptParams) },
		MethodThreadCompactStart:    func() any { return new(ThreadCompactStartParams) },
		MethodAccountRateLimitsRead: func() any { return new(GetAccountRateLimitsParams) },
	}
	clientPending := map[string]string{} // id of a client request → its method
	serverPending := map[string]string{} // id of a server request → its method
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		var raw struct {
			Msg json.RawMessage `json:"msg"`
		}
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		if !bytes.HasPrefix(bytes.TrimSpace(raw.Msg), []byte("{")) {
			continue // a line that is no message (sent to test the server's refusal)
		}
		var line struct {
			Dir string `json:"dir"`
			Msg struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
				Result json.RawMessage `json:"result"`
			} `json:"msg"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		m := line.Msg
		var what string
		var mk func() any
		var body json.RawMessage
		switch {
		case line.Dir == "send" && m.Method != "":
			if m.ID != nil {
				clientPending[string(m.ID)] = m.Method
			}
			what, mk, body = "params of "+m.Method, sendParams[m.Method], m.Params
		case line.Dir == "send" && m.Result != nil:
			method := serverPending[string(m.ID)]
			what, mk, body = "answer to "+method, serverRequestResponses[method], m.Result
		case line.Dir == "recv" && m.Method != "" && m.ID != nil:
			serverPending[string(m.ID)] = m.Method
			what, mk, body = "server request "+m.Method, serverRequestParams[m.Method], m.Params
			if mk == nil {
				t.Errorf("line %d: server request %s has no params type", n, m.Method)
			}
		case line.Dir == "recv" && m.Method != "":
			what, mk, body = "notification "+m.Method, notificationParams[m.Method], m.Params
			if mk == nil {
				t.Errorf("line %d: notification %s has no params type", n, m.Method)
			}
		case line.Dir == "recv" && m.Result != nil:
			method := clientPending[string(m.ID)]
			what, mk, body = "result of "+method, clientResults[method], m.Result
			if mk == nil {
				t.Errorf("line %d: %s has no result type", n, method)
			}
		}
		if mk == nil || body == nil {
			continue
		}
		seen[what] = true
		v := mk()
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			t.Errorf("line %d: %s into %T: %v", n, what, v, err)
			continue
		}
		again, err := json.Marshal(v)
		if err != nil {
			t.Errorf("line %d: %s: encode %T: %v", n, what, v, err)
			continue
		}
		if a, b := pruned(t, body), pruned(t, again); !reflect.DeepEqual(a, b) {
			t.Errorf("line %d: %s changed going through %T:\n got %s\nwant %s", n, what, v, again, body)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// pruned decodes JSON and drops, at every depth, the members and elements
// that are null, false, 0, "" or empty: what omitempty may leave out.
func pruned(t *testing.T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return prune(v)
}

func prune(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if p := prune(e); p != nil {
				out[k] = p
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		var out []any
		for _, e := range x {
			out = append(out, prune(e))
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case bool:
		if !x {
			return nil
		}
	case string:
		if x == "" {
			return nil
		}
	case json.Number:
		if f, err := x.Float64(); err == nil && f == 0 {
			return nil
		}
	}
	return v
}
