package cassette

import "slices"

// Reload is what one reload froze while the session was recorded, in the
// order the reloads were answered: the refrozen receipt the client saw,
// the harness note it queued for the model, and the system prompt and
// tools the next requests carried. A replay answers each reload with the
// next one recorded, so a reload that changed tools, skills or the system
// prompt replays that change without the project's files.
type Reload struct {
	// Tools, Skills and Changes are the refrozen receipt.
	Tools   []string `yaml:"tools"`
	Skills  []string `yaml:"skills"`
	Changes []string `yaml:"changes"`
	// Note is the harness note queued for the next prompt ("" for none).
	Note string `yaml:"note,omitempty"`
	// System is the system prompt frozen by the reload.
	System string `yaml:"system,omitempty"`
	// Offered are the tools offered to the model after the reload, as
	// Session.Tools are for the session's start (their results are in
	// Session.ToolResults with everyone else's, in dispatch order).
	Offered []Tool `yaml:"offered,omitempty"`
}

// cloneReloads deep-copies a session's reloads.
func cloneReloads(rs []Reload) []Reload {
	if rs == nil {
		return nil
	}
	out := make([]Reload, len(rs))
	for i, r := range rs {
		r.Tools, r.Skills, r.Changes = slices.Clone(r.Tools), slices.Clone(r.Skills), slices.Clone(r.Changes)
		r.Offered = cloneTools(r.Offered)
		out[i] = r
	}
	return out
}

// cloneTools deep-copies tools, their source checks included.
func cloneTools(ts []Tool) []Tool {
	if ts == nil {
		return nil
	}
	out := slices.Clone(ts)
	for i := range out {
		if src := out[i].Source; src != nil {
			c := *src
			c.Env, c.Checks = slices.Clone(src.Env), slices.Clone(src.Checks)
			out[i].Source = &c
		}
	}
	return out
}
