package lines

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestReaderCapsEachLine(t *testing.T) {
	r := NewReader(strings.NewReader("short\n"+strings.Repeat("x", 20)+"\r\nlast"), 10)
	var got []string
	for {
		line, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		var tl *TooLongError
		if errors.As(err, &tl) {
			got = append(got, tl.Error())
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(line))
	}
	want := []string{"short", "line is 20 bytes, longer than the 10-byte limit; skipped", "last"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("lines = %q, want %q", got, want)
	}
}
