package main

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestNPMInstallSkip(t *testing.T) {
	refused := "npm error code ECONNREFUSED\nnpm error errno ECONNREFUSED\nnpm error FetchError: request to http://127.0.0.1:9/ts-algebra failed, reason: connect ECONNREFUSED 127.0.0.1:9\n"
	cases := []struct {
		name string
		ci   string
		out  string
		skip bool
	}{
		{"refused, not CI", "", refused, true},
		{"refused, CI=false", "false", refused, true},
		{"refused, CI=true", "true", refused, false},
		{"refused, CI=1", "1", refused, false},
		{"no DNS, npm 9", "", "npm ERR! code ENOTFOUND\nnpm ERR! syscall getaddrinfo\n", true},
		{"timed out", "", "npm error code ETIMEDOUT\n", true},
		{"offline, not cached", "", "npm error code ENOTCACHED\n", true},
		{"a corrupt download fails anywhere", "", "npm error code EINTEGRITY\nnpm error sha512-... integrity checksum failed\n", false},
		{"a lockfile out of step fails anywhere", "", "npm error code EUSAGE\nnpm error `npm ci` can only install packages when your package.json and package-lock.json are in sync\n", false},
		{"a code only inside the error object", "", "npm error   code: 'ECONNREFUSED',\n", false},
		{"no code at all", "", "Killed\n", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			why := npmInstallSkip(c.ci, []byte(c.out))
			if (why != "") != c.skip {
				t.Fatalf("npmInstallSkip(CI=%q) = %q, want skip %v", c.ci, why, c.skip)
			}
			if c.skip && !strings.Contains(why, "cannot reach its registry") {
				t.Errorf("the reason does not say why: %q", why)
			}
		})
	}
}

// TestForeignClientsWithoutRegistry runs TestForeignClients (this test
// binary, as a child) where npm's registry refuses connections and
// nothing is cached: outside CI it is skipped with the reason, with
// CI=true it fails.
func TestForeignClientsWithoutRegistry(t *testing.T) {
	if testing.Short() {
		t.Skip("runs npm; skipped in -short mode")
	}
	needNode(t, "simulating an unreachable registry and its tests")
	// A loopback port nothing listens on: connecting is refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	registry := "http://" + l.Addr().String() + "/"
	l.Close()
	cases := []struct {
		name string
		ci   []string // CI in the child's environment
		fail bool
		has  string
	}{
		{"not CI", nil, false, "--- SKIP: TestForeignClients"},
		{"CI=true", []string{"CI=true"}, true, "--- FAIL: TestForeignClients"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
				name, _, _ := strings.Cut(kv, "=")
				return name == "CI" || strings.HasPrefix(strings.ToLower(name), "npm_config_")
			})
			env = append(env, "npm_config_registry="+registry, "npm_config_fetch_retries=0",
				"npm_config_cache="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir(), "HOME="+t.TempDir())
			cmd := exec.Command(os.Args[0], "-test.run", "^TestForeignClients$", "-test.v", "-test.count=1")
			cmd.Env = append(env, c.ci...)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if failed := errors.As(err, &exit); failed != c.fail || (err != nil && !failed) {
				t.Fatalf("the child exited with %v, want failure %v\n%s", err, c.fail, out)
			}
			if !strings.Contains(string(out), c.has) || !strings.Contains(string(out), "ECONNREFUSED") {
				t.Errorf("the child's output lacks %q or the reason (ECONNREFUSED):\n%s", c.has, out)
			}
			if !c.fail && !strings.Contains(string(out), "npm cannot reach its registry") {
				t.Errorf("the skip does not say why:\n%s", out)
			}
		})
	}
}
