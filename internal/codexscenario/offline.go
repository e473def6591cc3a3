package codexscenario

import (
	"fmt"
	"os"
	"path/filepath"
)

// CodexHomeConfig is the config.toml of a CODEX_HOME that runs the real
// codex offline: the model provider "openmax" at base (an `openmax
// fake-provider` or a recording proxy, on loopback) speaking the Responses
// wire, retries retries of a failed request or stream, and plugins,
// update checks and analytics off.
func CodexHomeConfig(base string, retries int) string {
	return fmt.Sprintf(`model = "gpt-5-codex"
model_provider = "openmax"
check_for_update_on_startup = false

[analytics]
enabled = false

[features]
plugins = false
remote_plugin = false
shell_snapshot = false

[model_providers.openmax]
name = "openmax"
base_url = "%s/v1"
wire_api = "responses"
env_key = "OPENMAX_CODEX_KEY"
request_max_retries = %d
stream_max_retries = %d
stream_idle_timeout_ms = 20000
`, base, retries, retries)
}

// deadProxy is a closed loopback port: a request codex sends anywhere but
// loopback goes there and fails at once.
const deadProxy = "http://127.0.0.1:9"

// OfflineEnv is the environment a real codex needs besides what it
// inherits to stay offline: HOME and CODEX_HOME, the fake provider's key,
// and every proxy variable at a closed loopback port (loopback exempted).
func OfflineEnv(home, codexHome string) []string {
	env := []string{"HOME=" + home, "CODEX_HOME=" + codexHome, "OPENMAX_CODEX_KEY=sk-openmax-test",
		"NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost"}
	for _, k := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"} {
		env = append(env, k+"="+deadProxy)
	}
	return env
}

// WriteCodexHome writes CodexHomeConfig into codexHome (created if
// missing).
func WriteCodexHome(codexHome, base string, retries int) error {
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(CodexHomeConfig(base, retries)), 0o644)
}
