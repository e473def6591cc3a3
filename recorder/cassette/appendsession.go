package cassette

import (
	"bytes"
	"reflect"
	"slices"
)

// sessionCache keeps the encoded parts of the session an appender last
// wrote, so a save re-encodes only what changed (a new command, a command
// re-anchored, a new tool result), not the whole session: the cost of
// writing the session stays a copy of its text.
type sessionCache struct {
	head     *Session // the session without Commands and ToolResults
	headText []byte
	commands []cachedItem[Command]
	results  []cachedItem[ToolResult]
}

type cachedItem[T comparable] struct {
	v    T
	text []byte
}

// liveSession is s in the working layout: the padded key line, then its
// fields indented by six, so the value can later become a block scalar
// nested in an interaction.
func (c *sessionCache) liveSession(s *Session) ([]byte, error) {
	head := *s
	head.Commands, head.ToolResults = nil, nil
	if c.head == nil || !reflect.DeepEqual(*c.head, head) {
		text, err := encodeYAML(&head)
		if err != nil {
			return nil, err
		}
		// Commands has no omitempty: the head says "commands: []",
		// which the list below replaces.
		text = bytes.Replace(text, []byte("\ncommands: []\n"), []byte("\n"), 1)
		c.head, c.headText = &head, text
	}
	var err error
	if c.commands, err = items(c.commands, s.Commands, "commands"); err != nil {
		return nil, err
	}
	if c.results, err = items(c.results, s.ToolResults, "tool_results"); err != nil {
		return nil, err
	}
	out := make([]byte, 0, keyWidth+len(c.headText)+64*len(c.commands)+64)
	out = append(out, liveKey...)
	out = indentLines(out, c.headText, "      ")
	out = appendList(out, "commands", c.commands, true)
	out = appendList(out, "tool_results", c.results, false)
	return out, nil
}

// items brings the cached encodings of a list up to date with vs.
func items[T comparable](cache []cachedItem[T], vs []T, key string) ([]cachedItem[T], error) {
	cache = slices.Clip(cache[:min(len(cache), len(vs))])
	for i, v := range vs {
		if i < len(cache) && cache[i].v == v {
			continue
		}
		text, err := encodeYAML(map[string][]T{key: {v}})
		if err != nil {
			return nil, err
		}
		_, text, _ = bytes.Cut(text, []byte("\n")) // the key line
		if i < len(cache) {
			cache[i] = cachedItem[T]{v, text}
		} else {
			cache = append(cache, cachedItem[T]{v, text})
		}
	}
	return cache, nil
}

func appendList[T comparable](out []byte, key string, list []cachedItem[T], always bool) []byte {
	switch {
	case len(list) == 0 && always:
		return append(out, "      "+key+": []\n"...)
	case len(list) == 0:
		return out
	}
	out = append(out, "      "+key+":\n"...)
	for _, it := range list {
		out = indentLines(out, it.text, "      ")
	}
	return out
}

// indentLines appends text with every non-empty line indented by ind.
func indentLines(out, text []byte, ind string) []byte {
	for len(text) > 0 {
		line, rest, _ := bytes.Cut(text, []byte("\n"))
		if len(line) > 0 {
			out = append(out, ind...)
		}
		out = append(out, line...)
		out = append(out, '\n')
		text = rest
	}
	return out
}
