package cassette

import (
	"bytes"
	"reflect"
)

// sessionCache keeps the encoded parts of the session an appender last
// wrote, so a save re-encodes only what changed (a new command, a command
// re-anchored, a new tool result), not the whole session: the cost of
// writing the session stays a copy of its text.
type sessionCache struct {
	head     *Session // the session without Commands and ToolResults
	headText []byte
	commands list[Command]
	results  list[ToolResult]
	out      []byte // what liveSession returned last, reused by the next
}

// list is one of the session's lists, its items encoded and, one after
// the other, indented as the working layout writes them (text; ends[i] is
// where item i ends in it), so a save copies the indented text instead of
// indenting every item again: what a save costs grows with the items that
// changed, plus a copy.
type list[T comparable] struct {
	items []cachedItem[T]
	text  []byte
	ends  []int
}

// update brings l up to date with vs.
func (l *list[T]) update(vs []T, key string) error {
	items, first, err := encodeItems(l.items, vs, key)
	if err != nil {
		// encodeItems updates the cache in place as it goes: start
		// afresh next time rather than trust a half-updated one.
		*l = list[T]{}
		return err
	}
	l.items = items
	keep := min(first, len(l.ends))
	l.ends = l.ends[:keep]
	if keep == 0 {
		l.text = l.text[:0]
	} else {
		l.text = l.text[:l.ends[keep-1]]
	}
	for _, it := range items[keep:] {
		l.text = indentLines(l.text, it.text, "      ")
		l.ends = append(l.ends, len(l.text))
	}
	return nil
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
	if err := c.commands.update(s.Commands, "commands"); err != nil {
		return nil, err
	}
	if err := c.results.update(s.ToolResults, "tool_results"); err != nil {
		return nil, err
	}
	out := reuse(c.out, keyWidth+2*len(c.headText)+len(c.commands.text)+len(c.results.text)+64)
	out = append(out, liveKey...)
	out = indentLines(out, c.headText, "      ")
	out = appendList(out, "commands", &c.commands, true)
	out = appendList(out, "tool_results", &c.results, false)
	c.out = keep(out)
	return out, nil
}

// maxKept is the largest buffer a save keeps for the next one.
const maxKept = 4 << 20

// reuse is buf emptied, with room for n bytes: a save reuses the memory
// of the one before instead of touching fresh pages (a page first touched
// costs more than copying it), a recording's saves growing by a little
// each time.
func reuse(buf []byte, n int) []byte {
	if cap(buf) >= n {
		return buf[:0]
	}
	return make([]byte, 0, max(n, 2*cap(buf)))
}

// keep is buf to hold for the next save, or nil when it is too large to
// keep between saves (one huge streamed body).
func keep(buf []byte) []byte {
	if cap(buf) > maxKept {
		return nil
	}
	return buf
}

// encodeItems brings the cached encodings of a list up to date with vs,
// and says the first item that changed (len(vs) when none did).
func encodeItems[T comparable](cache []cachedItem[T], vs []T, key string) ([]cachedItem[T], int, error) {
	first := min(len(cache), len(vs))
	// Appended to in place (amortized): the caller replaces its cache
	// with the result. (A clipped cache reallocated the whole list at
	// every new item: quadratic in a long session's commands.)
	cache = cache[:first]
	for i, v := range vs {
		if i < len(cache) && cache[i].v == v {
			continue
		}
		first = min(first, i)
		text, err := encodeItem(v, key)
		if err != nil {
			return nil, 0, err
		}
		if i < len(cache) {
			cache[i] = cachedItem[T]{v, text}
		} else {
			cache = append(cache, cachedItem[T]{v, text})
		}
	}
	return cache, first, nil
}

// encodeItem is v's text as an item of the list under key: its lines
// after the key line yaml.v3 writes for {key: [v]}.
func encodeItem[T comparable](v T, key string) ([]byte, error) {
	if text, ok := appendSessionItem(nil, v); ok {
		return text, nil
	}
	return encodeItemYAML(v, key)
}

// encodeItemYAML is encodeItem through yaml.v3, for what
// appendSessionItem leaves to it.
func encodeItemYAML[T comparable](v T, key string) ([]byte, error) {
	text, err := encodeYAML(map[string][]T{key: {v}})
	if err != nil {
		return nil, err
	}
	_, text, _ = bytes.Cut(text, []byte("\n")) // the key line
	return text, nil
}

func appendList[T comparable](out []byte, key string, l *list[T], always bool) []byte {
	switch {
	case len(l.items) == 0 && always:
		return append(out, "      "+key+": []\n"...)
	case len(l.items) == 0:
		return out
	}
	out = append(out, "      "+key+":\n"...)
	return append(out, l.text...)
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
