package sse

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

func all(t *testing.T, in string) ([]Event, error) {
	t.Helper()
	r := NewReader(strings.NewReader(in))
	var out []Event
	for {
		ev, err := r.Next()
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

func TestSSERules(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Event
	}{
		{"basic", "data: a\n\n", []Event{{Type: "message", Data: "a"}}},
		{"multi-line data", "data: a\ndata:b\ndata\n\n", []Event{{Type: "message", Data: "a\nb\n"}}},
		{"event and id", "event: ping\nid: 7\ndata: {}\n\ndata: x\n\n", []Event{{Type: "ping", Data: "{}", ID: "7"}, {Type: "message", Data: "x", ID: "7"}}},
		{"comments and crlf", ": keepalive\r\ndata: a\r\n\r\n", []Event{{Type: "message", Data: "a"}}},
		{"lone cr", "data: a\rdata: b\r\rdata: c\n\n", []Event{{Type: "message", Data: "a\nb"}, {Type: "message", Data: "c"}}},
		{"no data is no event", "event: x\n\ndata: y\n\n", []Event{{Type: "message", Data: "y"}}},
		{"only one space stripped", "data:  two\n\n", []Event{{Type: "message", Data: " two"}}},
		{"unknown fields ignored", "retry: 5\nfoo: bar\ndata: z\n\n", []Event{{Type: "message", Data: "z"}}},
		{"unterminated last event dropped", "data: a\n\ndata: b\n", []Event{{Type: "message", Data: "a"}}},
		{"unterminated last line dropped", "data: a\n\ndata: b", []Event{{Type: "message", Data: "a"}}},
	}
	for _, tt := range tests {
		got, err := all(t, tt.in)
		if !errors.Is(err, io.EOF) {
			t.Errorf("%s: end %v", tt.name, err)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\n got %#v\nwant %#v", tt.name, got, tt.want)
		}
	}
}

type failing struct{ r io.Reader }

func (f failing) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if errors.Is(err, io.EOF) {
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

func TestReadErrorsSurface(t *testing.T) {
	r := NewReader(failing{strings.NewReader("data: a\n\ndata: b")})
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("got %v, want the read error", err)
	}
}
