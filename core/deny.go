package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
)

// Denier refuses tool calls before any approval is asked, in every
// approval mode (auto, ask, readonly): the deny rules. Deny returns why
// the call named name with arguments args (a JSON object) must not run, or
// "" to let the approval mode decide.
type Denier interface {
	Deny(name string, args json.RawMessage) string
}

// DenyRule refuses the calls of one tool (or of every tool, "*") whose
// arguments match a regular expression; with no expression, every call.
type DenyRule struct {
	// Tool is the tool's name, or "*" for every tool.
	Tool string `json:"tool"`
	// ArgsMatch is an RE2 regular expression searched for in the call's
	// arguments as canonical JSON (CanonicalArgs); empty matches any call.
	ArgsMatch string `json:"args_match,omitempty"`
	// Reason is shown with the refusal.
	Reason string `json:"reason,omitempty"`

	re     *regexp.Regexp
	source string // the file and rule number, for the refusal
}

// DenyRules is a list of rules; the first that matches refuses the call.
type DenyRules []DenyRule

// ParseDenyRules reads the "deny" list of a policy file's content; source
// names the file in errors and refusals. Unknown keys are errors, so a
// typo never silently drops a rule.
func ParseDenyRules(data []byte, source string) (DenyRules, error) {
	var f struct {
		Deny []DenyRule `json:"deny"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	for i := range f.Deny {
		r := &f.Deny[i]
		if r.Tool == "" {
			return nil, fmt.Errorf("%s: deny rule %d has no \"tool\" (a tool name, or \"*\" for every tool)", source, i+1)
		}
		if r.ArgsMatch != "" {
			re, err := regexp.Compile(r.ArgsMatch)
			if err != nil {
				return nil, fmt.Errorf("%s: deny rule %d: args_match: %w", source, i+1, err)
			}
			r.re = re
		}
		r.source = source + " rule " + strconv.Itoa(i+1)
	}
	return f.Deny, nil
}

// Deny returns the refusal of the first rule matching the call, or "".
func (rs DenyRules) Deny(name string, args json.RawMessage) string {
	var canon []byte
	for _, r := range rs {
		if r.Tool != "*" && r.Tool != name {
			continue
		}
		if r.re != nil {
			if canon == nil {
				canon = CanonicalArgs(args)
			}
			if !r.re.Match(canon) {
				continue
			}
		}
		why := fmt.Sprintf("denied by %s (tool %s", r.source, r.Tool)
		if r.ArgsMatch != "" {
			why += fmt.Sprintf(", args matching %q", r.ArgsMatch)
		}
		why += ")"
		if r.Reason != "" {
			why += ": " + r.Reason
		}
		return why
	}
	return ""
}

// CanonicalArgs is args as deny rules see it: compact JSON with object
// keys sorted and strings written with no escapes beyond the ones JSON
// requires, so that "\u0072m" and "rm" read the same. Arguments that are
// not valid JSON are returned as they are.
func CanonicalArgs(args json.RawMessage) []byte {
	var v any
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return args
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return args
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}
