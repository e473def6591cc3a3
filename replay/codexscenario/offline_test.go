package codexscenario_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openmax/openmax/replay/codexscenario"
)

// TestHomeSetUp: what a scenario's Home writes into CODEX_HOME and which
// codex CLI commands it runs (the live runs, TestCodexAppServer/mcp_tool
// and /plugin_tool, show codex using it).
func TestHomeSetUp(t *testing.T) {
	const base = "http://127.0.0.1:1234"
	mcp := []string{`/opt/stub "mcp"/server`, "-v"}
	tests := []struct {
		name     string
		home     codexscenario.Home
		command  []string
		wantConf []string // in config.toml, besides CodexHomeConfig's settings
		wantCLI  [][]string
		wantErr  bool
	}{
		{name: "nothing added", wantCLI: nil},
		{name: "an MCP server", home: codexscenario.Home{MCPServer: "probe"}, command: mcp,
			wantConf: []string{"plugins = false", "[mcp_servers.probe]\ncommand = \"/opt/stub \\\"mcp\\\"/server\"\nargs = [\"-v\"]\n"}},
		{name: "a plugin", home: codexscenario.Home{PluginServer: "plugin_probe"}, command: mcp[:1],
			wantConf: []string{"plugins = true"},
			wantCLI: [][]string{{"plugin", "marketplace", "add", "MARKET"},
				{"plugin", "add", codexscenario.PluginName + "@" + codexscenario.PluginMarketplace}}},
		{name: "no stub server to run", home: codexscenario.Home{MCPServer: "probe"}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			codexHome, market := filepath.Join(t.TempDir(), "codex-home"), t.TempDir()
			var ran [][]string
			cli := func(args ...string) error {
				args = slices.Clone(args)
				for i, a := range args {
					if a == market {
						args[i] = "MARKET"
					}
				}
				ran = append(ran, args)
				return nil
			}
			err := tc.home.SetUp(codexHome, base, 2, tc.command, market, cli)
			if tc.wantErr {
				if err == nil {
					t.Fatal("SetUp succeeded without the stub server's command")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(codexHome, "config.toml"))
			if err != nil {
				t.Fatal(err)
			}
			conf := string(b)
			if tc.home == (codexscenario.Home{}) && conf != codexscenario.CodexHomeConfig(base, 2) {
				t.Errorf("config.toml:\n%s\nwant CodexHomeConfig's", conf)
			}
			if !strings.Contains(conf, `base_url = "`+base+`/v1"`) {
				t.Errorf("config.toml has not the model provider:\n%s", conf)
			}
			for _, w := range tc.wantConf {
				if !strings.Contains(conf, w) {
					t.Errorf("config.toml lacks %q:\n%s", w, conf)
				}
			}
			if !slices.EqualFunc(ran, tc.wantCLI, slices.Equal) {
				t.Errorf("codex CLI runs %q, want %q", ran, tc.wantCLI)
			}
			if tc.home.PluginServer == "" {
				return
			}
			var market1 struct {
				Name    string `json:"name"`
				Plugins []struct {
					Name   string `json:"name"`
					Source struct {
						Path string `json:"path"`
					} `json:"source"`
				} `json:"plugins"`
			}
			readJSON(t, filepath.Join(market, ".agents", "plugins", "marketplace.json"), &market1)
			if market1.Name != codexscenario.PluginMarketplace || len(market1.Plugins) != 1 || market1.Plugins[0].Name != codexscenario.PluginName {
				t.Fatalf("marketplace.json: %+v", market1)
			}
			root := filepath.Join(market, market1.Plugins[0].Source.Path)
			var manifest struct {
				Name       string `json:"name"`
				MCPServers string `json:"mcpServers"`
			}
			readJSON(t, filepath.Join(root, ".codex-plugin", "plugin.json"), &manifest)
			var servers struct {
				MCPServers map[string]struct {
					Command string   `json:"command"`
					Args    []string `json:"args"`
				} `json:"mcpServers"`
			}
			readJSON(t, filepath.Join(root, manifest.MCPServers), &servers)
			if s, ok := servers.MCPServers[tc.home.PluginServer]; manifest.Name != codexscenario.PluginName || !ok || s.Command != tc.command[0] || len(s.Args) != 0 {
				t.Errorf("plugin %+v bundles %+v, want %s running %s", manifest, servers, tc.home.PluginServer, tc.command[0])
			}
		})
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
