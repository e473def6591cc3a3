// Command gen writes provider/codex/protocol.gen.go, the Go types of codex
// app-server's JSON-RPC protocol, from the server's own JSON schema.
//
// `go generate ./provider/codex` runs it with the codex CLI: it asks
// `codex app-server generate-json-schema --experimental` for the schema
// bundle, keeps it with the CLI's version in provider/codex/schema/, and
// generates from it. With -schema DIR it generates from a schema already
// kept there, without codex.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// clientMethods are the client requests the codex package sends; the
// types of their params and results are generated with everything they
// reference.
var clientMethods = []string{
	"initialize",
	"thread/start",
	"thread/resume",
	"thread/fork",
	"thread/read",
	"turn/start",
	"turn/steer",
	"turn/interrupt",
	"thread/compact/start",
	"account/rateLimits/read",
}

const (
	bundleFile  = "codex_app_server_protocol.schemas.json"
	versionFile = "VERSION"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	codexBin := fs.String("codex", "", "the codex CLI to ask for the schema (default $CODEX, else codex from PATH)")
	schemaDir := fs.String("schema", "", "generate offline from the bundle and VERSION kept in this folder (no codex)")
	keepDir := fs.String("schemadir", "schema", "where the bundle and VERSION asked from codex are kept")
	out := fs.String("out", "protocol.gen.go", "the Go file to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	dir := *schemaDir
	if dir == "" {
		bin := *codexBin
		if bin == "" {
			bin = os.Getenv("CODEX")
		}
		if bin == "" {
			bin = "codex"
		}
		if err := fetchSchema(ctx, bin, *keepDir); err != nil {
			return err
		}
		dir = *keepDir
	}
	bundle, err := os.ReadFile(filepath.Join(dir, bundleFile))
	if err != nil {
		return err
	}
	version, err := os.ReadFile(filepath.Join(dir, versionFile))
	if err != nil {
		return err
	}
	src, st, err := Generate(bundle, strings.TrimSpace(string(version)), clientMethods)
	if err != nil {
		return err
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "gen: %s: %d types (%d structs, %d string enums, %d raw aliases), %d methods, schema %s\n",
		*out, st.Structs+st.Enums+st.Raws, st.Structs, st.Enums, st.Raws, st.Methods, strings.TrimSpace(string(version)))
	return nil
}

// fetchSchema asks the CLI bin for its version and its experimental schema
// bundle and keeps both in dir. The CLI runs with a CODEX_HOME and HOME of
// its own and proxies pointing at a closed loopback port: generating the
// schema needs no network and no configuration.
func fetchSchema(ctx context.Context, bin, dir string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	tmp, err := os.MkdirTemp("", "codex-schema-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	home := filepath.Join(tmp, "home")
	outDir := filepath.Join(tmp, "out")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return err
	}
	const deadProxy = "http://127.0.0.1:9"
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home, "CODEX_HOME=" + home,
		"HTTPS_PROXY=" + deadProxy, "HTTP_PROXY=" + deadProxy, "ALL_PROXY=" + deadProxy,
		"https_proxy=" + deadProxy, "http_proxy=" + deadProxy, "all_proxy=" + deadProxy,
	}
	cmdOut := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env, cmd.Dir = env, tmp
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		b, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w: %s", bin, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
		return b, nil
	}
	v, err := cmdOut("--version")
	if err != nil {
		return err
	}
	version, err := parseVersion(string(v))
	if err != nil {
		return err
	}
	if _, err := cmdOut("app-server", "generate-json-schema", "--experimental", "--out", outDir); err != nil {
		return err
	}
	bundle, err := os.ReadFile(filepath.Join(outDir, bundleFile))
	if err != nil {
		return fmt.Errorf("codex wrote no schema bundle: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, bundleFile), bundle, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, versionFile), []byte(version+"\n"), 0o644)
}

// parseVersion takes the version from `codex --version` ("codex-cli 0.169.0").
func parseVersion(out string) (string, error) {
	f := strings.Fields(out)
	if len(f) == 0 {
		return "", errors.New("codex --version printed nothing")
	}
	v := f[len(f)-1]
	if v == "" || (v[0] < '0' || v[0] > '9') {
		return "", fmt.Errorf("codex --version printed %q: no version number", strings.TrimSpace(out))
	}
	return v, nil
}
