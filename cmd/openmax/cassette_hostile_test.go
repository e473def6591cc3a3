package main

// Hostile cassettes and hostile traffic through the real binary (issue 9,
// points 6, 8, 10 and 13): an alias bomb, impossible timing, a credential
// in a header the proxy did not know, in an encoded body or in --base-url,
// and a request body declared at 1 GiB.

import (
	"bufio"
	"bytes"
	"compress/flate"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hostileCassette writes a copy of the library cassette openai_plain.yaml
// edited by edit, and returns its path.
func hostileCassette(t *testing.T, edit func(string) string) string {
	t.Helper()
	orig, err := os.ReadFile(filepath.Join(libraryDir, "openai_plain.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	changed := edit(string(orig))
	if changed == string(orig) {
		t.Fatal("the edit changed nothing")
	}
	p := filepath.Join(t.TempDir(), "hostile.yaml")
	if err := os.WriteFile(p, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// aliasBomb adds one large scalar aliased many times: harmless to a YAML
// parser's node tree, ruinous once decoded (issue 9 measured 3 GB for a
// 5 MB file). This one is small, so it would load on a build that accepts
// aliases; the test asks for the refusal.
func aliasBomb(s string) string {
	var b strings.Builder
	b.WriteString("padding: &big '" + strings.Repeat("x", 64<<10) + "'\nrefs:\n")
	for i := 0; i < 200; i++ {
		b.WriteString("  - *big\n")
	}
	return strings.Replace(s, "version: 1\n", "version: 1\n"+b.String(), 1)
}

// farChunk makes the first chunk arrive 2562047 hours after its request.
func farChunk(s string) string {
	return strings.Replace(s, "        - at: 0s\n", "        - at: 2562047h\n", 1)
}

// negativeStart makes the first request go out before the recording began.
func negativeStart(s string) string {
	return strings.Replace(s, "      start: 0s\n", "      start: -3s\n", 1)
}

// oneHugeLine is a cassette whose first request body is a line of 1 GB:
// a sparse file, its zeros never written.
func oneHugeLine(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "line.yaml")
	fh, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	fh.WriteString("version: 1\ninteractions:\n  - request:\n      body: '")
	if err := fh.Truncate(1e9); err != nil {
		t.Fatal(err)
	}
	return p
}

// deepNesting nests the session 20000 deep.
func deepNesting(s string) string {
	return strings.Replace(s, "\nopenmax:\n", "\nopenmax:\n  hooks: "+strings.Repeat("[", 20000)+"\n", 1)
}

// TestHostileCassettesAreRefused: every command that loads a cassette
// refuses an alias bomb, impossible timing, a line of 1 GB or nesting
// deeper than YAML allows at once, exits nonzero and says why on stderr,
// naming the line or the interaction and field, or the limit.
func TestHostileCassettesAreRefused(t *testing.T) {
	bin := buildBinary(t)
	edited := func(edit func(string) string) func(*testing.T) string {
		return func(t *testing.T) string { return hostileCassette(t, edit) }
	}
	tests := []struct {
		name string
		file func(*testing.T) string
		want string
	}{
		{"alias bomb", edited(aliasBomb), "line 4: a YAML alias (*big): openmax cassettes never use aliases"},
		{"a chunk at 2562047h", edited(farChunk), "interaction 0: openmax.chunks[0].at is 2562047h0m0s: a recorded offset must be under 24h0m0s"},
		{"a negative start", edited(negativeStart), "interaction 0: openmax.start is -3s: a recorded offset cannot be negative"},
		{"a line of 1 GB", oneHugeLine, "is 1000000000 bytes, the limit is 134217728 (128 MiB) (it is not in the layout openmax writes"},
		{"nesting 20000 deep", edited(deepNesting), "exceeded max depth of 10000"},
	}
	for _, tt := range tests {
		path := tt.file(t)
		out := filepath.Join(t.TempDir(), "out.yaml")
		for _, args := range [][]string{
			{"replay", path},
			{"replay", "--pace", "recorded", path},
			{"fake-provider", "--cassette", path, "--pace", "recorded"},
			{"cassette", "show", path},
			{"cassette", "inject", path, out, "--op", "429@0"},
			{"cassette", "sweep", path},
		} {
			t.Run(tt.name+"/"+strings.NewReplacer(path, "FILE", out, "OUT").Replace(strings.Join(args, " ")), func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				cmd := exec.CommandContext(ctx, bin, args...)
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				start := time.Now()
				err := cmd.Run()
				if ctx.Err() != nil {
					t.Fatalf("still running after %v", time.Since(start))
				}
				if err == nil || cmd.ProcessState.ExitCode() == 0 {
					t.Errorf("exit 0, want a refusal\nstdout: %.300s", stdout.String())
				}
				if !strings.Contains(stderr.String(), tt.want) {
					t.Errorf("stderr %q, want it to say %q", stderr.String(), tt.want)
				}
				if args[0] == "fake-provider" && stdout.Len() > 0 {
					t.Errorf("printed a base URL for a cassette it refused: %q", stdout.String())
				}
			})
		}
	}
}

// TestProxyNeverStoresCredentials: a recording proxy in front of a
// loopback API never writes a credential to the cassette, whatever header
// carries it, an encoded body echoing it included; cassette show prints
// none either.
func TestProxyNeverStoresCredentials(t *testing.T) {
	bin := buildBinary(t)
	secrets := map[string]string{
		"X-Goog-Api-Key":            "AIzaSyD-goog-live-key-0001",
		"Ocp-Apim-Subscription-Key": "0123456789abcdef-apim-key",
		"X-Auth-Token":              "auth-token-value-0003",
	}
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		// A deflate body the proxy's transport does not decode, echoing
		// the key: only a recorder that decodes can scrub it.
		var b bytes.Buffer
		fw, _ := flate.NewWriter(&b, flate.BestSpeed)
		fmt.Fprintf(fw, `{"error":{"message":"API key %s not valid"}}`, r.Header.Get("X-Goog-Api-Key"))
		fw.Close()
		w.Header().Set("Content-Encoding", "deflate")
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Set-Cookie", "session=cookie-value-0004")
		w.WriteHeader(400)
		w.Write(b.Bytes())
	}))
	defer upstream.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cas := filepath.Join(t.TempDir(), "c.yaml")
	proxy := startServer(t, ctx, bin, "record", "--proxy", "--upstream", upstream.URL, "--cassette", cas)
	req, _ := http.NewRequestWithContext(ctx, "POST", proxy.URL+"/v1beta/models/gemini:generateContent?key=AIzaSyD-query-key-0005", strings.NewReader(`{"contents":[]}`))
	for k, v := range secrets {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Header.Get("Content-Encoding") != "deflate" || len(body) == 0 {
		t.Fatalf("the client got %s %q, not the upstream's deflate body", resp.Header, body)
	}
	if code := proxy.stop(t); code != 0 {
		t.Fatalf("proxy exit %d: %s", code, proxy.stderr)
	}
	data, err := os.ReadFile(cas)
	if err != nil {
		t.Fatal(err)
	}
	show, err := exec.CommandContext(ctx, bin, "cassette", "show", cas).CombinedOutput()
	if err != nil {
		t.Fatalf("cassette show: %v\n%s", err, show)
	}
	for _, v := range append(mapValues(secrets), "AIzaSyD-query-key-0005", "cookie-value-0004") {
		if bytes.Contains(data, []byte(v)) {
			t.Errorf("the cassette holds %q:\n%s", v, data)
		}
		if bytes.Contains(show, []byte(v)) {
			t.Errorf("cassette show printed %q:\n%s", v, show)
		}
	}
	if !bytes.Contains(data, []byte(`API key [scrubbed] not valid`)) {
		t.Errorf("the deflate body is not stored decoded and scrubbed:\n%s", data)
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// TestRecordScrubsBaseURL: the harness flags a cassette stores carry no
// user information or key from --base-url.
func TestRecordScrubsBaseURL(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	cas := filepath.Join(dir, "c.yaml")
	cmd := exec.Command(bin, "record", "--cassette", cas, "--provider", "openai", "--project", dir,
		"--base-url", "http://alice:base-url-pass-0006@127.0.0.1:9/v1?api_key=base-url-key-0007&alt=sse")
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY=sk-test-not-used", "XDG_STATE_HOME="+filepath.Join(dir, "state"), "XDG_CONFIG_HOME="+filepath.Join(dir, "config"))
	cmd.Stdin = strings.NewReader("")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("record: %v\n%s", err, out)
	}
	data, err := os.ReadFile(cas)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"alice", "base-url-pass-0006", "base-url-key-0007"} {
		if bytes.Contains(data, []byte(v)) {
			t.Errorf("the cassette holds %q:\n%s", v, data)
		}
	}
	if !bytes.Contains(data, []byte("127.0.0.1:9/v1?api_key=[scrubbed]&alt=sse")) {
		t.Errorf("the base URL is not kept, scrubbed:\n%s", data)
	}
}

// TestOversizedRequestBodyIs413: the recording proxy and both fake
// providers answer a request declaring a 1 GiB body with 413 at once,
// without reading it.
func TestOversizedRequestBodyIs413(t *testing.T) {
	bin := buildBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the upstream got %s %s", r.Method, r.URL)
	}))
	defer upstream.Close()
	sc := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(sc, []byte("replies:\n  - chunks: [{text: a}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	servers := map[string][]string{
		"record --proxy":           {"record", "--proxy", "--upstream", upstream.URL, "--cassette", filepath.Join(t.TempDir(), "c.yaml")},
		"fake-provider --cassette": {"fake-provider", "--cassette", filepath.Join(libraryDir, "openai_plain.yaml")},
		"fake-provider --scenario": {"fake-provider", "--scenario", sc},
	}
	for name, args := range servers {
		t.Run(name, func(t *testing.T) {
			srv := startServer(t, ctx, bin, args...)
			conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			start := time.Now()
			fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"model\":\"m\",", 1<<30)
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no response: %v\n%s", err, srv.stderr)
			}
			msg, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(msg), "over the limit of 33554432 (32 MiB)") {
				t.Errorf("%s: %s", resp.Status, msg)
			}
			t.Logf("413 after %v", time.Since(start))
			srv.stop(t)
		})
	}
}
