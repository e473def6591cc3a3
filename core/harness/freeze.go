package harness

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/core/tool/builtin"
	"github.com/openmax/openmax/core/tool/external"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/internal/safefile"
)

// What a session freezes from the project's configuration (docs/policy.md):
// its tools (built-in and external), its skills and its system prompt. They
// are read when the session starts and again on reload, which answers with
// refrozen: the tools and skills frozen now and, in changes, what changed
// and which file did it. When something changed, a harness note saying so
// is written into the model's transcript before the next prompt.
const (
	// SkillsDir holds a project's skills, relative to the project: each
	// <name>.md is a named instruction file the model sees in its system
	// prompt.
	SkillsDir = ".openmax/skills"
	// SystemFile, relative to the project, is added to the system prompt.
	SystemFile = ".openmax/system.md"
	// maxSkillSize bounds one skill file and the system file.
	maxSkillSize = 64 << 10
)

var skillNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`) })

// frozenItem is one frozen tool or skill: the file it came from
// ("built-in" for a tool of openmax's own) and a digest of what the model
// sees of it, so a reload can say what changed.
type frozenItem struct{ source, sum string }

// snapshot is what a freeze read.
type snapshot struct {
	tools      map[string]frozenItem
	toolOrder  []string
	skills     map[string]frozenItem
	skillText  map[string]string
	system     string // SystemFile's text
	systemSum  string
	notLoaded  []string // files left out, each "file: why"
	registry   *tool.Registry
	promptBase string // the assembled engine's own system prompt
	// reread marks a snapshot of a reload: its tools and deny rules were
	// read again (deny, nil for none), so its engine is always a new one.
	reread bool
	deny   core.Denier
}

// freezer re-freezes one session's configuration.
type freezer struct {
	h    *Harness
	base *core.Engine // the engine the session started with
	cur  snapshot
	// reread reads the tools again on reload even when the caller
	// replaced the engine's tools (a recording, which wraps what it gets).
	reread bool
}

// freezeStart freezes, as New builds the harness, the project's skills and
// system file into the engine's system prompt, and records the prompt in
// the Config (Config.System), so a recording keeps what its requests
// carried. A replay (Deps.NoBuiltin) reads nothing from the project: its
// recorded Config.System is the prompt.
func (h *Harness) freezeStart() {
	if h.deps.NoBuiltin {
		return
	}
	f := &freezer{h: h, base: h.engine}
	snap := f.read(h.engine.Tools)
	snap.promptBase = h.cfg.System
	h.engine.System = snap.prompt()
	h.cfg.System = h.engine.System
	h.frozen = &snap
	logNotLoaded(h.deps.Log, snap.notLoaded)
}

// logNotLoaded writes a diagnostic line for each file a freeze left out
// ("file: why").
func logNotLoaded(log io.Writer, notLoaded []string) {
	for _, n := range notLoaded {
		fmt.Fprintf(log, "openmax: %s; not loaded\n", n)
	}
}

// Reload is one answer to reload: the engine the next turns use (nil
// keeps the current one), the refrozen receipt, and the harness note
// queued for the next prompt ("" for none).
type Reload struct {
	Engine  *core.Engine
	Receipt wire.Refrozen
	Note    string
}

// Reloader answers reload in place of, or around, the harness's own
// answer (ServeOptions.Reload). live reads the project's files again and
// says what changed; it is nil in a replay, which reads nothing from the
// project. A recording calls live and keeps what it froze (re-reading the
// tools too: live gives them unwrapped, for the recorder to wrap again); a
// replay answers from what was kept.
type Reloader func(live func() Reload) Reload

// refreezer returns a session's answer to reload (stdio.Options.Refreeze),
// starting from what New froze and going through wrap when set; nil in a
// replay without wrap, where reload reports the tools as they are.
func (h *Harness) refreezer(wrap Reloader) func() (*core.Engine, wire.Refrozen, string) {
	var live func() Reload
	if h.frozen != nil {
		f := &freezer{h: h, base: h.engine, cur: *h.frozen, reread: wrap != nil}
		live = func() Reload {
			eng, receipt, note := f.refreeze()
			return Reload{Engine: eng, Receipt: receipt, Note: note}
		}
	}
	switch {
	case wrap != nil:
		return func() (*core.Engine, wire.Refrozen, string) {
			r := wrap(live)
			return r.Engine, r.Receipt, r.Note
		}
	case live != nil:
		return func() (*core.Engine, wire.Refrozen, string) {
			r := live()
			return r.Engine, r.Receipt, r.Note
		}
	}
	return nil
}

// read takes a snapshot: tools from reg (nil: read them again), skills and
// the system file from disk.
func (f *freezer) read(reg *tool.Registry) snapshot {
	s := snapshot{tools: map[string]frozenItem{}, skills: map[string]frozenItem{}, skillText: map[string]string{}, promptBase: f.cur.promptBase}
	if reg == nil && !f.reread && f.base.Tools != f.h.tools {
		// The caller replaced the tools New assembled (a recording wraps
		// them to keep their results): they are the caller's, and stay.
		reg = f.base.Tools
	}
	if reg == nil {
		reg, s.notLoaded = f.tools()
		s.reread = true
		rules, errs := f.h.DenyRules()
		for _, err := range errs {
			s.notLoaded = append(s.notLoaded, err.Error()+" (every tool call is refused until it is fixed)")
		}
		if len(rules) > 0 {
			s.deny = rules
		}
	}
	s.registry = reg
	for _, sp := range reg.Specs() {
		t, _ := reg.Lookup(sp.Name)
		src := "built-in"
		if ss, ok := t.(interface{ Sources() []string }); ok && len(ss.Sources()) > 0 {
			src = ss.Sources()[0]
		}
		h := sha256.New()
		fmt.Fprintf(h, "%s\x00%s\x00%s", sp.Name, sp.Description, sp.Schema)
		if ss, ok := t.(interface{ Sources() []string }); ok {
			for _, p := range ss.Sources() {
				// Never blocks: a FIFO or directory in a source's place
				// is an error, which is hashed too (the tool's call
				// reports it).
				sum, err := external.SumFile(f.h.project, p)
				if err != nil {
					sum = err.Error()
				}
				fmt.Fprintf(h, "\x00%s", sum)
			}
		}
		s.tools[sp.Name] = frozenItem{source: src, sum: hex.EncodeToString(h.Sum(nil))}
		s.toolOrder = append(s.toolOrder, sp.Name)
	}
	entries, err := safefile.ReadDir(filepath.Join(f.h.project, filepath.FromSlash(SkillsDir)))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.notLoaded = append(s.notLoaded, fmt.Sprintf("%s: %v", SkillsDir, err))
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".md") {
			continue
		}
		rel := SkillsDir + "/" + e.Name()
		name := strings.TrimSuffix(e.Name(), ".md")
		if !skillNameRE().MatchString(name) {
			s.notLoaded = append(s.notLoaded, fmt.Sprintf("%s: a skill's name is letters, digits, - and _ (at most 64)", rel))
			continue
		}
		text, err := readSmall(filepath.Join(f.h.project, filepath.FromSlash(rel)))
		if err != nil {
			s.notLoaded = append(s.notLoaded, fmt.Sprintf("%s: %v", rel, err))
			continue
		}
		s.skills[name] = frozenItem{source: rel, sum: digest(text)}
		s.skillText[name] = text
	}
	text, err := readSmall(filepath.Join(f.h.project, filepath.FromSlash(SystemFile)))
	switch {
	case err == nil:
		s.system, s.systemSum = text, digest(text)
	case !errors.Is(err, fs.ErrNotExist):
		s.notLoaded = append(s.notLoaded, fmt.Sprintf("%s: %v", SystemFile, err))
	}
	return s
}

// tools reads the tools again: the built-in ones, the harness's extra
// tools, and the project's external tools (a manifest that does not load,
// or whose name is taken, is left out and reported).
func (f *freezer) tools() (*tool.Registry, []string) {
	var notLoaded []string
	builtins, err := builtin.New(f.h.project, builtin.Options{})
	if err != nil {
		return f.previous(), []string{fmt.Sprintf("built-in tools: %v (the previous tools stay)", err)}
	}
	all := append(builtins, f.h.deps.Tools...)
	taken := map[string]bool{}
	for _, t := range all {
		taken[t.Spec().Name] = true
	}
	ext, errs := f.h.ExternalTools()
	for _, err := range errs {
		notLoaded = append(notLoaded, err.Error())
	}
	for _, t := range ext {
		name := t.Spec().Name
		if taken[name] {
			src := name
			if ss, ok := t.(interface{ Sources() []string }); ok && len(ss.Sources()) > 0 {
				src = ss.Sources()[0]
			}
			notLoaded = append(notLoaded, fmt.Sprintf("%s: the tool name %s is taken by another tool", src, name))
			continue
		}
		taken[name] = true
		all = append(all, t)
	}
	reg, err := tool.NewRegistry(all...)
	if err != nil {
		return f.previous(), append(notLoaded, fmt.Sprintf("tools: %v (the previous tools stay)", err))
	}
	return reg, notLoaded
}

// previous is the tools of the last freeze, kept when reading them again
// failed.
func (f *freezer) previous() *tool.Registry {
	if f.cur.registry != nil {
		return f.cur.registry
	}
	return f.base.Tools
}

// engine is the engine a snapshot freezes: the session's first one with
// the snapshot's tools (and, when they were read again, the deny rules
// read again too) and the system prompt carrying the system file and the
// skills; the first engine itself when nothing differs.
func (f *freezer) engine(s snapshot) *core.Engine {
	prompt := s.prompt()
	if s.registry == f.base.Tools && !s.reread && prompt == f.base.System {
		return f.base
	}
	e := *f.base
	e.Tools, e.System = s.registry, prompt
	if s.reread {
		e.Deny = s.deny
	}
	return &e
}

// prompt is the system prompt of a snapshot.
func (s snapshot) prompt() string {
	var parts []string
	if s.promptBase != "" {
		parts = append(parts, s.promptBase)
	}
	if strings.TrimSpace(s.system) != "" {
		parts = append(parts, strings.TrimSpace(s.system))
	}
	names := s.skillNames()
	if len(names) > 0 {
		var b strings.Builder
		b.WriteString("# Skills\n\nThe project defines these skills: instructions to follow when a task calls for one.")
		for _, n := range names {
			fmt.Fprintf(&b, "\n\n## Skill: %s\n\n%s", n, strings.TrimSpace(s.skillText[n]))
		}
		parts = append(parts, b.String())
	}
	return strings.Join(parts, "\n\n")
}

func (s snapshot) skillNames() []string {
	names := make([]string, 0, len(s.skills))
	for n := range s.skills {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// refreeze answers reload: it reads everything again and says what
// changed since the last freeze, and who (which file).
func (f *freezer) refreeze() (*core.Engine, wire.Refrozen, string) {
	next := f.read(nil)
	changes := diff("tool", f.cur.tools, next.tools, f.cur.toolOrder, next.toolOrder)
	changes = append(changes, diff("skill", f.cur.skills, next.skills, f.cur.skillNames(), next.skillNames())...)
	if f.cur.systemSum != next.systemSum {
		switch {
		case next.systemSum == "":
			changes = append(changes, "system prompt: removed ("+SystemFile+")")
		case f.cur.systemSum == "":
			changes = append(changes, "system prompt: added ("+SystemFile+")")
		default:
			changes = append(changes, "system prompt: changed ("+SystemFile+")")
		}
	}
	changed := len(changes) > 0 // files left out are reported every time; the note is for what the model sees
	logNotLoaded(f.h.deps.Log, next.notLoaded)
	for _, n := range next.notLoaded {
		changes = append(changes, "not loaded: "+n)
	}
	f.cur = next
	eng := f.engine(next)
	receipt := wire.Refrozen{Tools: append([]string{}, next.toolOrder...), Skills: next.skillNames(), Changes: append([]string{}, changes...)}
	note := ""
	if changed {
		note = fmt.Sprintf("[openmax harness note] Your tools, skills and system prompt were re-frozen on reload. Changes: %s. Tools now: %s. Skills now: %s.",
			strings.Join(changes, "; "), listOrNone(receipt.Tools), listOrNone(receipt.Skills))
	}
	return eng, receipt, note
}

// diff lists what changed between two frozen sets of one kind, in the
// order of before (removed, changed) and then of after (added).
func diff(kind string, before, after map[string]frozenItem, beforeOrder, afterOrder []string) []string {
	var out []string
	for _, n := range beforeOrder {
		b := before[n]
		a, ok := after[n]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s %s: removed (%s)", kind, n, b.source))
		case a.sum != b.sum || a.source != b.source:
			out = append(out, fmt.Sprintf("%s %s: changed (%s)", kind, n, a.source))
		}
	}
	for _, n := range afterOrder {
		if _, ok := before[n]; !ok {
			out = append(out, fmt.Sprintf("%s %s: added (%s)", kind, n, after[n].source))
		}
	}
	return out
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// readSmall reads a regular file of at most maxSkillSize bytes, never
// blocking: a FIFO, directory or device in its place is refused, saying
// what it is.
func readSmall(path string) (string, error) {
	data, err := safefile.ReadFile(path, maxSkillSize)
	var nr *safefile.NotRegularError
	switch {
	case errors.As(err, &nr):
		return "", fmt.Errorf("not a regular file (it is %s); not read", nr.Kind)
	case errors.Is(err, safefile.ErrTooLarge):
		return "", fmt.Errorf("larger than %d KiB", maxSkillSize>>10)
	case err != nil:
		return "", err
	}
	return string(data), nil
}
