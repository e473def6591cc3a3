package hook

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/openmax/openmax/internal/procgroup"
)

// BaseEnv are the variables a hook gets from openmax's environment, when
// set there, before its own env entries: PATH, HOME, LANG, every LC_*
// variable, and TMPDIR. Nothing else of openmax's environment reaches a
// hook: no provider key, no token.
func BaseEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		switch {
		case name == "PATH", name == "HOME", name == "LANG", name == "TMPDIR", strings.HasPrefix(name, "LC_"):
			out = append(out, kv)
		}
	}
	return out
}

// hookEnv is base followed by the hook's env entries, each applied
// literally: an entry replaces a base variable of the same name. No
// expansion, interpolation or evaluation happens anywhere.
func hookEnv(base []string, env map[string]string) []string {
	out := make([]string, 0, len(base)+len(env))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if _, over := env[name]; !over {
			out = append(out, kv)
		}
	}
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		out = append(out, k+"="+env[k])
	}
	return out
}

// lookPath finds a bare command name in the PATH of the hook's environment
// (not openmax's); a name with a slash is used as it is.
func lookPath(command string, env []string) (string, error) {
	if strings.ContainsRune(command, '/') {
		return command, nil
	}
	if p, _ := procgroup.SearchPath(command, env); p != "" {
		return p, nil
	}
	return "", fmt.Errorf("command %q is not in the hook's PATH", command)
}

// redactor replaces the values of a hook's env entries in text that came
// from the hook (its stderr, its error messages, its refusal reason, its
// response line), so that no env value reaches a failure, an event, a log
// or a recording. Names may appear; values never do.
type redactor struct {
	pairs []string // old, new, ... longest value first
}

func newRedactor(env map[string]string) redactor {
	type kv struct{ k, v string }
	var all []kv
	for k, v := range env {
		if v != "" {
			all = append(all, kv{k, v})
		}
	}
	slices.SortFunc(all, func(a, b kv) int {
		if d := len(b.v) - len(a.v); d != 0 {
			return d
		}
		return strings.Compare(a.k, b.k)
	})
	var r redactor
	for _, e := range all {
		mark := "[env " + e.k + "]"
		r.pairs = append(r.pairs, e.v, mark)
		// The value as it appears inside a JSON string.
		if q := jsonInner(e.v); q != e.v {
			r.pairs = append(r.pairs, q, mark)
		}
	}
	return r
}

// jsonInner is s as encoding/json writes it inside a string, unquoted.
func jsonInner(s string) string {
	q, err := json.Marshal(s)
	if err != nil {
		return s
	}
	return string(q[1 : len(q)-1])
}

func (r redactor) text(s string) string {
	if len(r.pairs) == 0 {
		return s
	}
	return strings.NewReplacer(r.pairs...).Replace(s)
}

func (r redactor) bytes(b []byte) []byte {
	if len(r.pairs) == 0 || b == nil {
		return b
	}
	return []byte(r.text(string(b)))
}
