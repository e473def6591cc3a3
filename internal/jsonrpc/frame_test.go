package jsonrpc_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/internal/jsonrpc"
)

// readAll reads every line, an over-long one as its error's text.
func readAll(t *testing.T, r *jsonrpc.Reader) []string {
	t.Helper()
	var got []string
	for {
		line, err := r.ReadLine()
		if errors.Is(err, io.EOF) {
			return got
		}
		var tl *jsonrpc.TooLongError
		if errors.As(err, &tl) {
			got = append(got, "! "+tl.Error())
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(line))
	}
}

func TestReaderBoundsLines(t *testing.T) {
	long := strings.Repeat("x", 100<<10) // past the reader's 64 KiB buffer
	tests := []struct {
		name, in string
		max      int
		early    bool
		want     []string
	}{
		{"lines, CRLF and a last line without a newline", "{\"a\":1}\r\n\n{\"b\":2}\nlast", 16, false,
			[]string{`{"a":1}`, "", `{"b":2}`, "last"}},
		{"exactly the cap, with CRLF", "12345\r\n123456\n", 5, false,
			[]string{"12345", "! line is 6 bytes, longer than the 5-byte limit; skipped"}},
		{"an over-long line is skipped whole", "ok\n" + long + "\nnext\n", 1024, false,
			[]string{"ok", "! line is 102400 bytes, longer than the 1024-byte limit; skipped", "next"}},
		{"an over-long last line", "ok\n" + long, 1024, false,
			[]string{"ok", "! line is 102400 bytes, longer than the 1024-byte limit; skipped"}},
		{"early: reported at the cap, the rest dropped", "ok\n" + long + "\nnext\n", 1024, true,
			[]string{"ok", "! line is longer than the 1024-byte limit (65536 bytes read); skipped", "next"}},
		{"early: a short over-long line is reported at its end", "1234567\nnext", 5, true,
			[]string{"! line is 7 bytes, longer than the 5-byte limit; skipped", "next"}},
		{"early: an over-long last line", "ok\n" + long, 1024, true,
			[]string{"ok", "! line is longer than the 1024-byte limit (65536 bytes read); skipped"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := jsonrpc.NewReader(strings.NewReader(tt.in), tt.max)
			if tt.early {
				r = jsonrpc.NewEarlyReader(strings.NewReader(tt.in), tt.max)
			}
			got := readAll(t, r)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("lines\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

// An early reader reports a line that passed the cap while the peer is
// still writing it, with no newline in sight.
func TestEarlyReaderDoesNotWaitForTheNewline(t *testing.T) {
	pr, pw := io.Pipe()
	defer pr.Close()
	reported := make(chan struct{})
	go func() {
		_, _ = pw.Write([]byte(strings.Repeat("x", 200<<10)))
		// The line goes on only once it was reported, then ends.
		<-reported
		_, _ = pw.Write([]byte("yyy\n{\"id\":1,\"result\":{}}\n"))
		_ = pw.Close()
	}()
	r := jsonrpc.NewEarlyReader(pr, 1<<10)
	type result struct {
		line []byte
		err  error
	}
	read := func() result {
		done := make(chan result, 1)
		go func() {
			line, err := r.ReadLine()
			done <- result{line, err}
		}()
		select {
		case res := <-done:
			return res
		case <-time.After(10 * time.Second):
			t.Fatal("ReadLine still waits")
			return result{}
		}
	}
	var tl *jsonrpc.TooLongError
	if res := read(); !errors.As(res.err, &tl) || !tl.Cut {
		t.Fatalf("first ReadLine = %q, %v; want a cut *TooLongError", res.line, res.err)
	}
	close(reported)
	if res := read(); res.err != nil || string(res.line) != `{"id":1,"result":{}}` {
		t.Fatalf("the line after = %q, %v", res.line, res.err)
	}
	if res := read(); !errors.Is(res.err, io.EOF) {
		t.Fatalf("at the end: %q, %v", res.line, res.err)
	}
}
