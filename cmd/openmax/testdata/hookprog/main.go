// Command hookprog is a hook program for the golden session cases of
// cmd/openmax: it speaks the hook protocol (one JSON-RPC object a line on
// stdin and stdout) the way its arguments say, for both lifecycles.
//
//	hookprog allow                     allow every intercept
//	hookprog refuse REASON             refuse every intercept
//	hookprog refuse-n N FILE REASON    refuse the first N intercepts (counted
//	                                   in FILE, across processes), then allow
//	hookprog crash                     read one message, complain on stderr, exit 2
//	hookprog banner                    a banner on stdout instead of an answer, exit 0
//	hookprog hang                      read one message, never answer
//	hookprog env-check NAME=VALUE...   refuse every intercept, saying whether
//	                                   each NAME holds exactly VALUE
//	hookprog silent                    read one message, exit 0 without answering
//	hookprog linger PIDFILE MODE ...   first start a background child holding
//	                                   this stdout (and stderr) that never
//	                                   exits, its pid written to PIDFILE; then
//	                                   MODE ... as above
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

type message struct {
	ID     *int64 `json:"id"`
	Method string `json:"method"`
}

func main() {
	if len(os.Args) < 2 {
		os.Exit(7)
	}
	in := bufio.NewReader(os.Stdin)
	next := func() message {
		line, err := in.ReadBytes('\n')
		if err != nil {
			os.Exit(0)
		}
		var m message
		if err := json.Unmarshal(line, &m); err != nil {
			fmt.Fprintf(os.Stderr, "hookprog: bad message %q\n", line)
			os.Exit(9)
		}
		return m
	}
	answer := func(decide func() (string, string)) {
		for {
			m := next()
			if m.ID == nil {
				continue // a notification: nothing to answer
			}
			d, r := decide()
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": *m.ID, "result": map[string]string{"decision": d, "reason": r}})
			os.Stdout.Write(append(b, '\n'))
		}
	}
	args := os.Args[1:]
	if args[0] == "linger" && len(args) > 2 {
		child := exec.Command(os.Args[0], "sleep")
		child.Stdout, child.Stderr = os.Stdout, os.Stderr
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "hookprog:", err)
			os.Exit(8)
		}
		if err := os.WriteFile(args[1], []byte(strconv.Itoa(child.Process.Pid)), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, "hookprog:", err)
			os.Exit(8)
		}
		args = args[2:]
	}
	switch args[0] {
	case "sleep":
		for {
			time.Sleep(time.Hour) // until its group is killed
		}
	case "silent":
		next()
		os.Exit(0)
	case "allow":
		answer(func() (string, string) { return "allow", "" })
	case "refuse":
		answer(func() (string, string) { return "refuse", args[1] })
	case "refuse-n":
		n, _ := strconv.Atoi(args[1])
		answer(func() (string, string) {
			data, _ := os.ReadFile(args[2])
			k, _ := strconv.Atoi(string(data))
			k++
			os.WriteFile(args[2], []byte(strconv.Itoa(k)), 0o600)
			if k <= n {
				return "refuse", fmt.Sprintf("%s (%d)", args[3], k)
			}
			return "allow", ""
		})
	case "crash":
		next()
		fmt.Fprintln(os.Stderr, "hookprog: crashed on purpose")
		os.Exit(2)
	case "banner":
		fmt.Println("hookprog 1.0 starting up")
		next()
		os.Exit(0)
	case "env-check":
		answer(func() (string, string) {
			var lit, changed []string
			for _, a := range args[1:] {
				name, want, _ := strings.Cut(a, "=")
				if got, ok := os.LookupEnv(name); ok && got == want {
					lit = append(lit, name)
				} else {
					changed = append(changed, name)
				}
			}
			return "refuse", fmt.Sprintf("literal: %s; changed: %s", strings.Join(lit, " "), strings.Join(changed, " "))
		})
	case "hang":
		next()
		for {
			time.Sleep(time.Hour) // until the harness kills it
		}
	}
	os.Exit(7)
}
