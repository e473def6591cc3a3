package codexscenario

import (
	"encoding/json"
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
	return codexHomeConfig(base, retries, false)
}

// codexHomeConfig is CodexHomeConfig with codex's plugins on or off.
func codexHomeConfig(base string, retries int, plugins bool) string {
	return fmt.Sprintf(`model = "gpt-5-codex"
model_provider = "openmax"
check_for_update_on_startup = false

[analytics]
enabled = false

[features]
plugins = %t
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
`, plugins, base, retries, retries)
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

// Home is what a scenario adds to the CODEX_HOME of a live run besides
// CodexHomeConfig. A replay needs none of it: the recording holds what
// codex did with it.
type Home struct {
	// MCPServer names an MCP server configured in config.toml
	// ([mcp_servers.NAME]) that runs the stub MCP server the live
	// harness provides.
	MCPServer string
	// PluginServer names the MCP server a plugin bundles: the live run
	// writes a local plugin marketplace holding the plugin PluginName,
	// whose .mcp.json runs the stub MCP server under this name, installs
	// it into CODEX_HOME with the real codex CLI (`codex plugin
	// marketplace add`, `codex plugin add`), and turns plugins on.
	PluginServer string
}

// The local plugin marketplace a Home with a PluginServer installs from,
// and its one plugin.
const (
	PluginMarketplace = "openmax-test"
	PluginName        = "openmax-probe"
)

// SetUp writes codexHome's config.toml for a live run against the model
// provider at base with retries retries, adding h: mcpCommand is the stub
// MCP server's command line, market an empty folder for the plugin
// marketplace, and cli runs the real codex CLI with the given arguments in
// the run's offline environment (the same CODEX_HOME).
func (h Home) SetUp(codexHome, base string, retries int, mcpCommand []string, market string, cli func(args ...string) error) error {
	if (h.MCPServer != "" || h.PluginServer != "") && len(mcpCommand) == 0 {
		return fmt.Errorf("codexscenario: the scenario's CODEX_HOME needs the stub MCP server's command")
	}
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		return err
	}
	conf := codexHomeConfig(base, retries, h.PluginServer != "")
	if h.MCPServer != "" {
		conf += fmt.Sprintf("\n[mcp_servers.%s]\ncommand = %s\nargs = %s\n", h.MCPServer, tomlValue(mcpCommand[0]), tomlValue(mcpCommand[1:]))
	}
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(conf), 0o644); err != nil {
		return err
	}
	if h.PluginServer == "" {
		return nil
	}
	if err := writeMarketplace(market, h.PluginServer, mcpCommand); err != nil {
		return err
	}
	if err := cli("plugin", "marketplace", "add", market); err != nil {
		return err
	}
	return cli("plugin", "add", PluginName+"@"+PluginMarketplace)
}

// writeMarketplace writes a local plugin marketplace into dir: the plugin
// PluginName, bundling one MCP server, server, that runs command.
func writeMarketplace(dir, server string, command []string) error {
	root := filepath.Join(dir, "plugins", PluginName)
	files := map[string]any{
		filepath.Join(dir, ".agents", "plugins", "marketplace.json"): map[string]any{
			"name":      PluginMarketplace,
			"interface": map[string]any{"displayName": "openmax test plugins"},
			"plugins": []any{map[string]any{
				"name":     PluginName,
				"source":   map[string]any{"source": "local", "path": "./plugins/" + PluginName},
				"policy":   map[string]any{"installation": "AVAILABLE", "authentication": "ON_INSTALL"},
				"category": "Productivity",
			}},
		},
		filepath.Join(root, ".codex-plugin", "plugin.json"): map[string]any{
			"name":        PluginName,
			"version":     "1.0.0",
			"description": "A plugin of openmax's tests bundling one MCP server.",
			"mcpServers":  "./.mcp.json",
		},
		filepath.Join(root, ".mcp.json"): map[string]any{
			"mcpServers": map[string]any{server: map[string]any{"command": command[0], "args": command[1:]}},
		},
	}
	for path, v := range files {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// tomlValue renders a string or a list of strings as TOML: a JSON string
// is a TOML basic string (the same escapes), a JSON array of them a TOML
// array.
func tomlValue(v any) string {
	if l, ok := v.([]string); ok && l == nil {
		v = []string{}
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // strings and lists of them always marshal
	}
	return string(b)
}
