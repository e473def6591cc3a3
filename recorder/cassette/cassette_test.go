package cassette

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	p := filepath.Join(t.TempDir(), "huge.yaml")
	fh, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: the size is there, the bytes never are.
	if err := fh.Truncate(MaxFileSize + 1); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	_, err = Load(p)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "128 MiB") {
		t.Fatalf("err %v, want ErrTooLarge naming the limit", err)
	}
}
