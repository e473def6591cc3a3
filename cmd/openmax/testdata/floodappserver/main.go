// Command floodappserver is a hostile codex app-server for the flood tests
// of cmd/openmax: it answers initialize, thread/start and turn/start like
// codex, then floods the turn the way its arguments say. openmax appends
// `app-server -c ...` to the command line; those arguments are ignored.
//
//	floodappserver deltas SIZE      item/agentMessage/delta lines of SIZE
//	                                bytes of text each, without end; a
//	                                turn/interrupt is answered and ends the
//	                                turn (interrupted), as codex does
//	floodappserver garbage N        N lines that are not JSON and N
//	                                notifications of an unknown method, then
//	                                one delta and turn/completed
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: floodappserver deltas SIZE | garbage N")
		os.Exit(2)
	}
	mode := os.Args[1]
	n, err := strconv.Atoi(os.Args[2])
	if err != nil || n < 1 {
		fmt.Fprintln(os.Stderr, "floodappserver: bad count", os.Args[2])
		os.Exit(2)
	}
	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	var mu sync.Mutex
	write := func(s string) bool {
		mu.Lock()
		defer mu.Unlock()
		if _, err := out.WriteString(s + "\n"); err != nil {
			return false
		}
		return true
	}
	flush := func() {
		mu.Lock()
		defer mu.Unlock()
		_ = out.Flush()
	}
	interrupted := make(chan string, 1)
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 64<<20)
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil {
			continue
		}
		switch m.Method {
		case "initialize":
			write(fmt.Sprintf(`{"id":%s,"result":{"userAgent":"flood","codexHome":"/","platformFamily":"unix","platformOs":"linux"}}`, m.ID))
		case "thread/start", "thread/resume":
			write(fmt.Sprintf(`{"id":%s,"result":{"thread":{"id":"th1"}}}`, m.ID))
		case "turn/start":
			write(fmt.Sprintf(`{"id":%s,"result":{"turn":{"id":"u1","status":"inProgress","items":[]}}}`, m.ID))
			write(`{"method":"turn/started","params":{"threadId":"th1","turn":{"id":"u1","status":"inProgress","items":[]}}}`)
			switch mode {
			case "deltas":
				go floodDeltas(n, write, flush, interrupted)
			case "garbage":
				for i := 0; i < n; i++ {
					write(fmt.Sprintf("garbage line %d: not JSON at all", i))
					write(fmt.Sprintf(`{"method":"flood/unknown%d","params":{"threadId":"th1"}}`, i))
				}
				write(`{"method":"item/agentMessage/delta","params":{"threadId":"th1","turnId":"u1","itemId":"m1","delta":"done"}}`)
				write(`{"method":"turn/completed","params":{"threadId":"th1","turn":{"id":"u1","status":"completed","items":[]}}}`)
			}
		case "turn/interrupt":
			select {
			case interrupted <- string(m.ID):
			default:
			}
		}
		flush()
	}
}

// floodDeltas writes deltas of size bytes until an interrupt comes, then
// answers it and ends the turn.
func floodDeltas(size int, write func(string) bool, flush func(), interrupted <-chan string) {
	line := `{"method":"item/agentMessage/delta","params":{"threadId":"th1","turnId":"u1","itemId":"m1","delta":"` + strings.Repeat("x", size-1) + ` "}}`
	for {
		select {
		case id := <-interrupted:
			write(fmt.Sprintf(`{"id":%s,"result":{}}`, id))
			write(`{"method":"turn/completed","params":{"threadId":"th1","turn":{"id":"u1","status":"interrupted","items":[]}}}`)
			flush()
			return
		default:
		}
		if !write(line) {
			return
		}
	}
}
