package importer

import (
	"bytes"
	"fmt"
	"strings"

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
//
// The file is parsed once: an openmax cassette in the recorder's layout
// is decoded as it is read (cassette.ReadAny), in memory well under one
// and a half times its size and with no limit on its size but
// cassette.MaxFileSize; anything else is read whole (up to
// cassette.MaxYAMLSize), and the YAML document read to tell whether it is
// an openmax cassette is the one the importer converts.
func LoadNotes(path string) (f *cassette.File, converted string, notes []string, err error) {
	f, other, err := cassette.ReadAny(path, func(head []byte) bool { return bytes.HasPrefix(head, []byte(httprrMagic)) })
	if err != nil || f != nil {
		if f != nil && f.TornSave {
			notes = append(notes, TornNote)
		}
		return f, "", notes, err
	}
	format, doc, err := detect(other.Data, other)
	if err != nil {
		return nil, "", nil, fmt.Errorf("%s: neither an openmax cassette nor a recording openmax can import: %w", path, err)
	}
	f, notes, err = convert(format, other.Data, doc)
	if err != nil {
		return nil, "", nil, fmt.Errorf("%s: %w", path, err)
	}
	if s, err := Session(f); err == nil {
		f.Session = s
	}
	return f, format, notes, nil
}

// TornNote is the note LoadNotes gives for a recording whose last save
// was incomplete.
const TornNote = "its last save is incomplete (a recording still being written, or one an OS crash or a kill cut short): read as of its last complete save"

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
