// Command hookprog is a hook for core/hook's tests: it speaks the AHP
// stdio binding, well or badly, as its first argument says.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

type msg struct {
	ID     *int64 `json:"id"`
	Method string `json:"method"`
	Params struct {
		Version   string `json:"version"`
		Hook      string `json:"hook"`
		Event     string `json:"event"`
		SessionID string `json:"session_id"`
		Payload   struct {
			Prompt string `json:"prompt"`
		} `json:"payload"`
	} `json:"params"`
}

var (
	in  = bufio.NewReader(os.Stdin)
	out = os.Stdout
)

// next reads the next message; at EOF the hook exits 0.
func next() msg {
	line, err := in.ReadBytes('\n')
	if err != nil {
		os.Exit(0)
	}
	var m msg
	if err := json.Unmarshal(line, &m); err != nil {
		fmt.Fprintf(os.Stderr, "hookprog: bad message %q\n", line)
		os.Exit(9)
	}
	return m
}

func reply(id int64, result any) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
	out.Write(append(b, '\n'))
}

func decision(d, reason string) map[string]string {
	return map[string]string{"decision": d, "reason": reason}
}

// block never returns, without the runtime calling it a deadlock.
func block() {
	var p [2]int
	if err := syscall.Pipe(p[:]); err != nil {
		os.Exit(8)
	}
	buf := make([]byte, 1)
	for {
		syscall.Read(p[0], buf)
	}
}

// pending is how many bytes of stdin are waiting to be read.
func pending() int {
	var n int32
	syscall.Syscall(syscall.SYS_IOCTL, 0, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n)))
	return in.Buffered() + int(n)
}

// serve answers every intercept request with answer(m) until EOF.
func serve(answer func(msg) any) {
	for {
		m := next()
		if m.ID != nil {
			reply(*m.ID, answer(m))
		}
	}
}

func main() {
	args := os.Args[1:]
	if len(args) == 0 {
		os.Exit(7)
	}
	switch args[0] {
	case "answer": // answer DECISION [REASON]; REASON "=prompt" echoes the prompt
		reason := ""
		if len(args) > 2 {
			reason = args[2]
		}
		serve(func(m msg) any {
			r := reason
			if r == "=prompt" {
				r = m.Params.Payload.Prompt
			}
			return decision(args[1], r)
		})
	case "echo-params": // refuse with the params it got, as JSON
		serve(func(m msg) any {
			b, _ := json.Marshal(m.Params)
			return decision("refuse", string(b))
		})
	case "banner": // a banner on stdout, then allow
		fmt.Fprintln(out, "hookprog 1.0 ready")
		serve(func(msg) any { return decision("allow", "") })
	case "spew": // three log lines on stdout per message, never an answer
		for {
			next()
			for i := 0; i < 3; i++ {
				fmt.Fprintf(out, "log line %d\n", i)
			}
		}
	case "crash": // read one message, complain, exit 2
		next()
		fmt.Fprintln(os.Stderr, "boom: the hook crashed")
		os.Exit(2)
	case "crash-once": // crash-once MARKER: crash the first time only
		if _, err := os.Stat(args[1]); err != nil {
			os.WriteFile(args[1], nil, 0o600)
			next()
			fmt.Fprintln(os.Stderr, "boom: first run")
			os.Exit(2)
		}
		serve(func(msg) any { return decision("refuse", "second life") })
	case "silent": // read everything, answer nothing, exit 0
		for {
			next()
		}
	case "exit3": // exit3 [MARKER]: answer allow, then exit 3 (with MARKER: the first time only)
		if len(args) > 1 {
			if _, err := os.Stat(args[1]); err == nil {
				serve(func(msg) any { return decision("allow", "") })
			}
			os.WriteFile(args[1], nil, 0o600)
		}
		m := next()
		reply(*m.ID, decision("allow", ""))
		os.Exit(3)
	case "twice": // two responses to one request
		m := next()
		reply(*m.ID, decision("allow", ""))
		reply(*m.ID, decision("allow", ""))
	case "wrongid": // answer with an id it was not sent, then (without "once") with the right one
		for {
			m := next()
			reply(*m.ID+100, decision("allow", ""))
			if len(args) == 1 {
				reply(*m.ID, decision("refuse", "the right id"))
			}
		}
	case "block": // read one message, never answer
		next()
		block()
	case "grandchild": // grandchild FIFO: start a child that holds FIFO open, then never answer
		cmd := exec.Command(os.Args[0], "hold", args[1])
		r, err := cmd.StdoutPipe()
		if err != nil || cmd.Start() != nil {
			os.Exit(6)
		}
		bufio.NewReader(r).ReadString('\n') // "ready"
		block()
	case "hold": // hold FIFO: open it for writing and live on
		f, err := os.OpenFile(args[1], os.O_WRONLY, 0)
		if err != nil {
			os.Exit(5)
		}
		defer f.Close()
		fmt.Println("ready")
		block()
	case "dumpenv": // dumpenv FILE: write the environment to FILE, then allow
		os.WriteFile(args[1], []byte(strings.Join(os.Environ(), "\n")), 0o600)
		serve(func(msg) any { return decision("allow", "") })
	case "leak": // leak NAME: put NAME's value on stderr, in an error and exit 1
		m := next()
		v := os.Getenv(args[1])
		fmt.Fprintf(os.Stderr, "the value is %s\n", v)
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": *m.ID, "error": map[string]any{"code": 1, "message": "bad " + v}})
		out.Write(append(b, '\n'))
		os.Exit(1)
	case "leak-reason": // leak-reason NAME: refuse with NAME's value in the reason
		serve(func(msg) any { return decision("refuse", "value="+os.Getenv(args[1])) })
	case "endless": // an endless line on stdout
		buf := []byte(strings.Repeat("x", 64<<10))
		for {
			if _, err := out.Write(buf); err != nil {
				os.Exit(0)
			}
		}
	case "serial": // refuse with the prompt, saying "overlap" when another request was already waiting
		serve(func(m msg) any {
			time.Sleep(20 * time.Millisecond) // the hook waits, so a second request has time to arrive
			r := m.Params.Payload.Prompt
			if pending() > 0 {
				r += " overlap"
			}
			return decision("refuse", r)
		})
	case "log": // log FILE: append every message to FILE, answer nothing
		f, err := os.OpenFile(args[1], os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			os.Exit(4)
		}
		for {
			line, err := in.ReadBytes('\n')
			if err != nil {
				os.Exit(0)
			}
			f.Write(line)
		}
	default:
		os.Exit(7)
	}
}
