package importer

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/openmax/openmax/recorder/cassette"
)

// Load reads the recording at path for any command that takes a cassette
// (replay, cassette show and inject, fake-provider --cassette). An openmax
// cassette (one carrying an openmax member, at the top or on an
// interaction) loads as it is, and converted is "". Anything else is
// detected (Detect), imported (Import) and given the session Session
// makes up when it can, exactly as `openmax cassette import` would write
// it, and converted names its format; Note says so in one line. The
// errors name path.
func Load(path string) (f *cassette.File, converted string, err error) {
	f, converted, _, err = LoadNotes(path)
	return f, converted, err
}

// LoadNotes is Load, also returning what the conversion changed of what
// was recorded (see ImportNotes); none for an openmax cassette.
func LoadNotes(path string) (f *cassette.File, converted string, notes []string, err error) {
	data, err := cassette.ReadFile(path)
	if err != nil {
		return nil, "", nil, err
	}
	if native(data) {
		f, err := cassette.Parse(data)
		if err != nil {
			return nil, "", nil, fmt.Errorf("cassette %s: %w", path, err)
		}
		return f, "", nil, nil
	}
	format, err := Detect(data)
	if err != nil {
		return nil, "", nil, fmt.Errorf("%s: neither an openmax cassette nor a recording openmax can import: %w", path, err)
	}
	f, notes, err = ImportNotes(format, data)
	if err != nil {
		return nil, "", nil, fmt.Errorf("%s: %w", path, err)
	}
	if s, err := Session(f); err == nil {
		f.Session = s
	}
	return f, format, notes, nil
}

// Note is the one line saying that the recording at path was converted
// in memory from format (as Load returned them), and whether a session
// was made up for it, or why not.
func Note(path, format string, f *cassette.File) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: a %s recording, converted in memory as `openmax cassette import` would (%d interaction(s)", path, format, len(f.Interactions))
	if f.Session != nil {
		b.WriteString(", a session made up for it)")
	} else if _, err := Session(f); err != nil {
		fmt.Fprintf(&b, "; no session made up: %v)", err)
	} else {
		b.WriteString(")")
	}
	return b.String()
}

// native reports whether data is an openmax cassette: a YAML mapping with
// an openmax member at the top, or on one of its interactions.
func native(data []byte) bool {
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil || root.Kind != yaml.DocumentNode || len(root.Content) == 0 {
		return false
	}
	m := root.Content[0]
	if m.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		switch m.Content[i].Value {
		case "openmax":
			return true
		case "interactions":
			if seq := m.Content[i+1]; seq.Kind == yaml.SequenceNode {
				for _, in := range seq.Content {
					if hasMember(in, "openmax") {
						return true
					}
				}
			}
		}
	}
	return false
}

func hasMember(m *yaml.Node, name string) bool {
	if m.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == name {
			return true
		}
	}
	return false
}
