package harness

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/config"
	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/core/tool/builtin"
	"github.com/openmax/openmax/core/tool/external"
	"github.com/openmax/openmax/internal/safefile"
)

// PolicyFile is a project's policy file, relative to the project: its
// deny rules (docs/external-tools.md). The user's own policy.json in the
// config directory applies to every project.
const PolicyFile = ".openmax/policy.json"

// maxPolicySize bounds a policy file.
const maxPolicySize = 1 << 20

// ExternalTools loads the project's external tools (.openmax/tools/*.json)
// as the harness does at New, bound to the approvals remembered in the
// config directory: what a reload calls to see the current manifests. A
// manifest that cannot be loaded is left out and reported.
func (h *Harness) ExternalTools() ([]tool.Tool, []error) {
	return loadExternal(h.project, h.deps)
}

func loadExternal(project string, deps Deps) ([]tool.Tool, []error) {
	// The marker of a process openmax's tools started: an openmax run
	// by an external tool cannot change the approval mode either.
	opts := external.Options{Getenv: deps.getenv, Clock: deps.Clock, ExtraEnv: []string{builtin.AgentSpawnedEnv + "=1"}}
	if dir, err := config.Dir(deps.getenv); err == nil {
		if s, err := config.OpenSources(dir); err == nil {
			opts.Approvals = config.SourceStore{S: s, Project: project}
		} else {
			fmt.Fprintf(deps.Log, "openmax: %v; no external tool's file counts as approved\n", err)
		}
	}
	return external.Load(project, opts)
}

// addExternal appends the project's external tools to tools, leaving out
// (and logging) a manifest that does not load or whose name is taken.
func addExternal(tools []tool.Tool, project string, deps Deps) []tool.Tool {
	ext, errs := loadExternal(project, deps)
	for _, err := range errs {
		fmt.Fprintf(deps.Log, "openmax: %v; not loaded\n", err)
	}
	taken := map[string]bool{}
	for _, t := range tools {
		taken[t.Spec().Name] = true
	}
	for _, t := range ext {
		if name := t.Spec().Name; taken[name] {
			fmt.Fprintf(deps.Log, "openmax: external tool %s: the name is taken by another tool; not loaded\n", name)
			continue
		}
		tools = append(tools, t)
	}
	return tools
}

// DenyRules reads the deny rules that apply to the project: the user's
// (policy.json in the config directory), then the project's
// (.openmax/policy.json). A policy file that cannot be read or parsed
// fails closed: it becomes a rule refusing every call, saying why, and is
// reported in the returned errors too.
func (h *Harness) DenyRules() (core.DenyRules, []error) {
	return denyRules(h.project, h.deps.getenv)
}

func denyRules(project string, getenv func(string) string) (core.DenyRules, []error) {
	var files []string
	if dir, err := config.Dir(getenv); err == nil {
		files = append(files, filepath.Join(dir, "policy.json"))
	}
	files = append(files, filepath.Join(project, filepath.FromSlash(PolicyFile)))
	var rules core.DenyRules
	var errs []error
	for _, f := range files {
		data, err := readPolicy(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		var rs core.DenyRules
		if err == nil {
			rs, err = core.ParseDenyRules(data, f)
		}
		if err != nil {
			errs = append(errs, err)
			rs = core.DenyRules{failClosed(f, err)}
		}
		rules = append(rules, rs...)
	}
	return rules, errs
}

// readPolicy reads a policy file, never blocking: a FIFO, directory or
// device in its place is an error naming it (and fails closed).
func readPolicy(path string) ([]byte, error) {
	return safefile.ReadFile(path, maxPolicySize)
}

// failClosed is the rule standing for a policy file that could not be
// read: it refuses every call.
func failClosed(path string, err error) core.DenyRule {
	rs, perr := core.ParseDenyRules([]byte(`{"deny":[{"tool":"*"}]}`), path+" (unreadable: "+err.Error()+")")
	if perr != nil || len(rs) != 1 {
		panic(fmt.Sprintf("the fail-closed rule does not parse: %v", perr))
	}
	rs[0].Reason = "fix the file; until then every tool call is refused"
	return rs[0]
}
