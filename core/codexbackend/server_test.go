package codexbackend_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"

	"github.com/openmax/openmax/provider/codex"
)

// clientLine is a line an in-process app-server read from its client.
type clientLine struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
}

// pipeServer connects a client with options o to an in-process
// app-server over pipes: answer gets each line the client sends with an
// id (its requests, and its answers to the server's requests) and writes
// the server's lines with write, one line each. stdin, when not nil,
// wraps the server's stdin as the client sees it. Closing the client's
// end of stdin ends the server.
func pipeServer(ctx context.Context, o codex.Options, stdin func(io.WriteCloser) io.WriteCloser, answer func(m clientLine, write func(string))) (*codex.Client, error) {
	sr, cw := io.Pipe()
	cr, sw := io.Pipe()
	go func() {
		defer sw.Close()
		write := func(line string) { _, _ = io.WriteString(sw, line+"\n") }
		in := bufio.NewReader(sr)
		for {
			line, err := in.ReadBytes('\n')
			if err != nil {
				return
			}
			var m clientLine
			if json.Unmarshal(line, &m) != nil || len(m.ID) == 0 {
				continue
			}
			answer(m, write)
		}
	}()
	var w io.WriteCloser = cw
	if stdin != nil {
		w = stdin(cw)
	}
	return codex.Connect(ctx, cr, w, o)
}
