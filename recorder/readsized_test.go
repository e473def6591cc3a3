package recorder

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestReadSizedIsReadAll: whatever the Content-Length says (exact, short,
// long) and however the body reads (a byte at a time, its last bytes with
// EOF, an error midway), takeBody's sized read returns what io.ReadAll
// returns.
func TestReadSizedIsReadAll(t *testing.T) {
	broken := errors.New("connection reset")
	bodies := map[string]func() io.Reader{
		"plain":       func() io.Reader { return strings.NewReader("hello, world") },
		"byte a time": func() io.Reader { return iotest.OneByteReader(strings.NewReader("hello, world")) },
		"data w/ EOF": func() io.Reader { return iotest.DataErrReader(strings.NewReader("hello, world")) },
		"cut off":     func() io.Reader { return io.MultiReader(strings.NewReader("hello"), iotest.ErrReader(broken)) },
		"empty":       func() io.Reader { return strings.NewReader("") },
	}
	for name, body := range bodies {
		for _, n := range []int64{1, 5, 11, 12, 13, 100} {
			want, wantErr := io.ReadAll(body())
			got, err := readSized(body(), n)
			if !bytes.Equal(got, want) || !errors.Is(err, wantErr) && err != wantErr {
				t.Errorf("%s, Content-Length %d: read %q, %v; ReadAll gives %q, %v", name, n, got, err, want, wantErr)
			}
		}
	}
}
