package cassette

import (
	"bytes"
	"fmt"
	"reflect"
	"regexp"
	"sync"
)

// Item is one interaction of a cassette with its text: the item of the
// interaction list that writes it (see EncodeInteraction). A recording
// that keeps interactions of an older cassette (record mode missing,
// record --from-change, cassette prune) writes their Text as it is, so
// they stay byte for byte what they were.
type Item struct {
	Text        []byte
	Interaction *Interaction
}

// Items pairs each interaction of f, read from data, with its text: the
// bytes data holds for it when they read back, alone, as that very
// interaction, and EncodeInteraction's text otherwise (a cassette left
// mid-recording, whose list holds the hidden sessions of its saves, or
// text the list cannot be cut into items of). The text of each item is
// thus the file's own whenever the file is a plain cassette, whoever wrote
// it (openmax, stock go-vcr, a person), and always reads back as the
// interaction.
func Items(data []byte, f *File) ([]Item, error) {
	out := make([]Item, len(f.Interactions))
	var raw [][]byte
	if !workingLayout().Match(data) {
		raw = splitItems(data)
	}
	if len(raw) != len(f.Interactions) {
		raw = nil
	}
	for i, it := range f.Interactions {
		out[i].Interaction = it
		if raw != nil && readsBackAs(raw[i], it) {
			out[i].Text = raw[i]
			continue
		}
		text, err := EncodeInteraction(it)
		if err != nil {
			return nil, err
		}
		out[i].Text = text
	}
	return out, nil
}

// workingLayout matches the marks of a cassette still being appended to
// (see append.go): a "..." end line turned into a comment, or the key of
// a hidden session.
var workingLayout = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^(#\.\.|\.\.\.|(    )?x[0-9a-f]{8}: \|)$`) })

// splitItems cuts the interaction list of a block-style cassette into the
// text of each item, or returns nil when it cannot tell where they are.
// The list follows an "interactions:" line at the left margin; its items
// start with "- " at the column of the first one, and it ends at the next
// line, not blank, left of that column or at it without "- " (the next
// top-level key).
func splitItems(data []byte) [][]byte {
	start := bytes.Index(data, []byte("\ninteractions:\n"))
	if start < 0 {
		if !bytes.HasPrefix(data, []byte("interactions:\n")) {
			return nil
		}
	} else {
		start++
	}
	pos := start + len("interactions:\n")
	col := -1
	var items [][]byte
	itemStart := -1
	for pos < len(data) {
		end := bytes.IndexByte(data[pos:], '\n')
		if end < 0 {
			return nil // not a file openmax or go-vcr writes
		}
		line := data[pos : pos+end]
		indent := len(line) - len(bytes.TrimLeft(line, " "))
		blank := len(bytes.TrimSpace(line)) == 0
		if !blank {
			item := bytes.HasPrefix(line[indent:], []byte("- ")) || string(line[indent:]) == "-"
			if col < 0 {
				if !item {
					return nil
				}
				col = indent
			}
			switch {
			case indent == col && item:
				if itemStart >= 0 {
					items = append(items, data[itemStart:pos])
				}
				itemStart = pos
			case indent <= col:
				if itemStart >= 0 {
					items = append(items, data[itemStart:pos])
				}
				return items
			}
		}
		pos += end + 1
	}
	if itemStart >= 0 {
		items = append(items, data[itemStart:])
	}
	return items
}

// readsBackAs reports whether text, alone as a cassette's list, is it.
func readsBackAs(text []byte, it *Interaction) bool {
	got, err := DecodeInteraction(text)
	return err == nil && reflect.DeepEqual(got, it)
}

// DecodeInteraction reads text, one item of a cassette's interaction list
// (what EncodeInteraction writes), back as the interaction.
func DecodeInteraction(text []byte) (*Interaction, error) {
	doc := append([]byte(headerText+listKey), text...)
	f, err := Parse(doc)
	if err != nil {
		return nil, err
	}
	if len(f.Interactions) != 1 {
		return nil, fmt.Errorf("cassette: %d interactions where one item was expected", len(f.Interactions))
	}
	return f.Interactions[0], nil
}
