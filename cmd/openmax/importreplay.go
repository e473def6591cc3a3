package main

// Loading any recording a command is given, and replaying the sessions
// made up for imported recordings honestly.

import (
	"fmt"
	"io"

	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/importer"
)

// loadCassette reads the recording at path for the command who: an
// openmax cassette as it is, any format `openmax cassette import` reads
// converted in memory, which one stderr line says (and one more for each
// thing the conversion changed of what was recorded).
func loadCassette(path, who string, stderr io.Writer) (*cassette.File, error) {
	f, converted, notes, err := importer.LoadNotes(path)
	if err != nil {
		return nil, err
	}
	if converted != "" {
		fmt.Fprintf(stderr, "%s: %s\n", who, importer.Note(path, converted, f))
	}
	for _, n := range notes {
		fmt.Fprintf(stderr, "%s: %s: %s\n", who, path, n)
	}
	return f, nil
}
