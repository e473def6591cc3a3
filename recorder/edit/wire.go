package edit

import (
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/openmax/openmax/provider/codec"
	_ "github.com/openmax/openmax/provider/vendors" // every built-in wire
	"github.com/openmax/openmax/recorder/cassette"
)

// wireOf is the wire of a recorded interaction, as the registry
// (provider/codec) answers it: the wire its request's path, query and
// headers belong to, or else the one wire that claims its recorded body.
// An interaction no wire claims is an error wrapping
// codec.ErrUnknownWire.
func wireOf(it *cassette.Interaction) (codec.Wire, error) {
	ct, _ := header(it.Response.Headers, "Content-Type")
	return codec.ForRecording(recordedRequest(it), ct, []byte(it.Body()))
}

// recordedRequest is an interaction's request as the registry reads it.
func recordedRequest(it *cassette.Interaction) *codec.Request {
	return codec.RecordedRequest(it.Request.Method, it.Request.URL, it.Request.Headers)
}

// read is what an interaction's body says, read by its wire (nil with the
// error when no wire claims it).
func read(it *cassette.Interaction) (codec.Wire, *codec.Reading, error) {
	w, err := wireOf(it)
	if err != nil {
		return nil, nil, err
	}
	ct, _ := header(it.Response.Headers, "Content-Type")
	return w, w.Parse(ct, []byte(it.Body())), nil
}

// urlPath is the path of a recorded URL ("/" when empty), with its query.
func urlPath(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	if u.RawQuery != "" {
		p += "?" + u.RawQuery
	}
	return p
}

// header is the first value of a header, its name matched in any case.
func header(h map[string][]string, name string) (string, bool) {
	for _, k := range sortedKeys(h) {
		if strings.EqualFold(k, name) && len(h[k]) > 0 {
			return h[k][0], true
		}
	}
	return "", false
}

func sortedKeys(h map[string][]string) []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// chunkNotes maps a stream's events onto the chunks its body arrived in:
// for each chunk, what the events that end in it say, and how many of its
// bytes belong to an event that does not end in it.
func chunkNotes(events []codec.Event, chunks []cassette.Chunk) (notes [][]codec.Note, rest []int) {
	notes = make([][]codec.Note, len(chunks))
	rest = make([]int, len(chunks))
	j, start := 0, 0 // the chunk an event ends in, and its offset
	lastEnd := 0
	for _, ev := range events {
		for j < len(chunks) && ev.End > start+len(chunks[j].Data) {
			rest[j] = len(chunks[j].Data) - max(lastEnd-start, 0)
			start += len(chunks[j].Data)
			j++
		}
		if j < len(chunks) {
			notes[j] = append(notes[j], ev.Notes...)
		}
		lastEnd = ev.End
	}
	for ; j < len(chunks); j++ {
		rest[j] = len(chunks[j].Data) - max(lastEnd-start, 0)
		start += len(chunks[j].Data)
	}
	return notes, rest
}

// describeNotes renders what a chunk's events say, neighbouring content
// of one kind (text, thinking, arguments) merged.
func describeNotes(ns []codec.Note) string {
	var merged []codec.Note
	for _, g := range ns {
		if n := len(merged); n > 0 && g.Text != "" && merged[n-1].Kind == g.Kind && merged[n-1].Text != "" {
			merged[n-1].Text += g.Text
			continue
		}
		merged = append(merged, g)
	}
	parts := make([]string, len(merged))
	for i, g := range merged {
		switch g.Kind {
		case codec.NoteText, codec.NoteThinking, codec.NoteArgs, codec.NoteSummary, codec.NoteRefusal:
			parts[i] = g.Kind + " " + quote(g.Text)
		default:
			parts[i] = g.Kind
		}
	}
	return strings.Join(parts, ", ")
}

// describeUsage renders a reply's usage.
func describeUsage(u *codec.Usage) string {
	in := fmt.Sprintf("%d in", u.Input)
	if u.Cached != nil {
		in += fmt.Sprintf(" (%d cached)", *u.Cached)
	}
	out := fmt.Sprintf("%d out", u.Output)
	if u.Reasoning != nil {
		out += fmt.Sprintf(" (%d reasoning)", *u.Reasoning)
	}
	return fmt.Sprintf("%s, %s, %d total", in, out, u.Total)
}

// describeReasoning is the first line on a reasoning item: its id and its
// encrypted content (the size, where it came from, how it starts).
func describeReasoning(ri *codec.Reasoning) string {
	s := fmt.Sprintf("reasoning %d", ri.Index)
	if ri.ID != "" {
		s += " (" + ri.ID + ")"
	}
	if !ri.HasEncrypted {
		return s + ": no encrypted content"
	}
	return fmt.Sprintf("%s: encrypted content %d B from %s, %s", s, len(ri.Encrypted), ri.From, quote(clip(ri.Encrypted, 16)))
}

// quote renders s on one line: Go-quoted, so every byte is visible.
func quote(s string) string { return codec.Quote(s) }

// clip cuts s to max runes, marking a cut with "…".
func clip(s string, max int) string { return codec.Clip(s, max) }

// oneLine renders s on one line (codec.OneLine).
func oneLine(s string, max int) string { return codec.OneLine(s, max) }

func plural(n int, noun string) string { return codec.Plural(n, noun) }
