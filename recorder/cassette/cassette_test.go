package cassette

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/internal/rapidchecks"
)

// base is a valid one-interaction cassette; each hostile case edits it.
const base = `version: 1
interactions:
  - request: {method: POST, url: http://h/v1/chat/completions, body: '{}'}
    response: {code: 200, status: 200 OK, body: "ab", duration: 2s}
    openmax:
      start: 1s
      chunks:
        - {at: 1s, data: "a"}
        - {at: 2s, data: "b"}
`

func TestParseRefusesHostileCassettes(t *testing.T) {
	bomb := "version: 1\nbig: &big " + strings.Repeat("x", 1000) + "\ninteractions:\n"
	for i := 0; i < 100; i++ {
		bomb += "  - request: {method: POST, url: 'http://h/', body: *big}\n    response: {code: 200, body: *big}\n    openmax: {start: 0s}\n"
	}
	tests := []struct {
		name string
		yaml string
		want string // in the error; "" for a cassette that loads
	}{
		{"valid", base, ""},
		{"an alias bomb", bomb, "line 4: a YAML alias (*big)"},
		{"a merge key", strings.Replace(base, "  - request: {", "  - <<: &m {}\n    request: {", 1) + "x: {<<: *m}\n", "a YAML alias (*m)"},
		{"a chunk at 2562047h", strings.Replace(base, "{at: 2s,", "{at: 2562047h,", 1), "interaction 0: openmax.chunks[1].at is 2562047h0m0s: a recorded offset must be under 24h0m0s"},
		{"a negative chunk offset", strings.Replace(base, "{at: 1s,", "{at: -1s,", 1), "interaction 0: openmax.chunks[0].at is -1s: a recorded offset cannot be negative"},
		{"chunks out of order", strings.Replace(base, "{at: 2s,", "{at: 500ms,", 1), "interaction 0: openmax.chunks[1].at is 500ms, before the chunk ahead of it (1s)"},
		{"a negative start", strings.Replace(base, "start: 1s", "start: -5m", 1), "interaction 0: openmax.start is -5m0s"},
		{"a start of 100 days", strings.Replace(base, "start: 1s", "start: 2400h", 1), "interaction 0: openmax.start is 2400h0m0s: a recorded offset must be under 24h0m0s"},
		{"a negative duration", strings.Replace(base, "duration: 2s", "duration: -2s", 1), "interaction 0: response.duration is -2s"},
		{"chunks that are not the body", strings.Replace(base, `data: "b"`, `data: "c"`, 1), "interaction 0: its chunks do not add up to its body"},
		{"chunks longer than the body", strings.Replace(base, `data: "b"`, `data: "bb"`, 1), "interaction 0: its chunks do not add up to its body"},
		{"a huge error offset", base + "      error: {kind: reset, message: m, at: 1000000h}\n", "interaction 0: openmax.error.at is 1000000h0m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := Parse([]byte(tt.yaml))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused a valid cassette: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want one saying %q", err, tt.want)
			}
			if el := time.Since(start); el > 5*time.Second {
				t.Errorf("took %v", el)
			}
		})
	}
}

func TestParseAliasErrorIsErrAlias(t *testing.T) {
	_, err := Parse([]byte("version: 1\nx: &a 1\ny: *a\n"))
	if !errors.Is(err, ErrAlias) {
		t.Fatalf("err %v, want ErrAlias", err)
	}
}

func TestLoadRefusesAnOversizedFile(t *testing.T) {
	for _, tt := range []struct {
		name string
		head string // the file's first bytes; the rest is sparse zeros
		size int64
		want string
	}{
		// Over the limit of the recorder's layout: refused before reading.
		{"over 1 GiB", "version: 1\n", MaxFileSize + 1, "1024 MiB"},
		// Not the recorder's layout (zeros), too big to decode whole.
		{"other YAML over 128 MiB", "", MaxYAMLSize + 1, "128 MiB"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "huge.yaml")
			fh, err := os.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			fh.WriteString(tt.head)
			// Sparse: the size is there, the bytes never are.
			if err := fh.Truncate(tt.size); err != nil {
				t.Fatal(err)
			}
			fh.Close()
			_, err = Load(p)
			if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want ErrTooLarge naming the limit %s", err, tt.want)
			}
		})
	}
}

// A cassette in the recorder's layout over 128 MiB (one large streamed
// body) loads: its size is bounded by MaxFileSize, not by what yaml.v3
// could decode whole.
func TestHeavyLoadReadsALargeRecording(t *testing.T) {
	rapidchecks.HeavyUnderRace(t)
	// Written as the recorder writes it (Marshal of a small body, the
	// body's block grown by hand: encoding 130 MB with yaml.v3 takes
	// seconds).
	event := "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n"
	n := (MaxYAMLSize + (1 << 20)) / len(event)
	f := New()
	it := &Interaction{}
	it.Request.Method, it.Request.URL, it.Response.Code, it.Response.Body = "POST", "http://h/v1/chat/completions", 200, event
	f.Interactions = []*Interaction{it}
	small, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	block := "        data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n"
	if !strings.Contains(string(small), block) {
		t.Fatalf("unexpected layout:\n%s", small)
	}
	p := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(p, []byte(strings.Replace(string(small), block, strings.Repeat(block, n), 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(p); fi.Size() <= MaxYAMLSize {
		t.Fatalf("the cassette is only %d bytes", fi.Size())
	}
	body := strings.Repeat(event, n)
	got, err := Load(p)
	if err != nil || len(got.Interactions) != 1 || got.Interactions[0].Response.Body != body {
		t.Fatalf("Load: %v", err)
	}
}
