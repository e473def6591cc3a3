package appserver

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestConn drives an in-process replay as a client drives the process:
// line by line, then closing stdin; and after a miss, its stdout ends and
// its stdin refuses writes.
func TestConn(t *testing.T) {
	tr := load(t, "basic.jsonl")
	sends, recvs := sides(t, tr)

	t.Run("replays", func(t *testing.T) {
		c := Start(context.Background(), tr, Options{})
		out := bufio.NewReader(c.Stdout)
		sent, next := 0, 0
		for _, l := range tr.Lines {
			if l.Dir == "send" {
				if _, err := io.WriteString(c.Stdin, sends[sent]+"\n"); err != nil {
					t.Fatal(err)
				}
				sent++
				continue
			}
			got, err := out.ReadString('\n')
			if err != nil || got != recvs[next]+"\n" {
				t.Fatalf("read %q, %v; want %q", got, err, recvs[next])
			}
			next++
		}
		c.Stdin.Close()
		if rest, err := io.ReadAll(out); err != nil || len(rest) != 0 {
			t.Errorf("after the transcript: %q, %v", rest, err)
		}
		if err := c.Wait(); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a miss ends it", func(t *testing.T) {
		c := Start(context.Background(), tr, Options{})
		if _, err := io.WriteString(c.Stdin, `{"id":7,"method":"initialize","params":{}}`+"\n"); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(c.Stdout)
		if err != nil || !strings.HasPrefix(string(got), `{"id":7,"error":{"code":-32001,"message":"openmax fake app-server: client line 1`) ||
			strings.Count(string(got), "\n") != 1 {
			t.Fatalf("read %q, %v", got, err)
		}
		if err := c.Wait(); !errors.Is(err, ErrMiss) {
			t.Fatalf("Wait: %v", err)
		}
		if _, err := io.WriteString(c.Stdin, "{}\n"); !errors.Is(err, ErrEnded) {
			t.Errorf("a write after the end: %v", err)
		}
	})

	t.Run("cancelled while the client does not read", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		c := Start(ctx, tr, Options{})
		if _, err := io.WriteString(c.Stdin, strings.Join(sends, "\n")+"\n"); err != nil {
			t.Fatal(err)
		}
		cancel()
		if err := c.Wait(); !errors.Is(err, context.Canceled) {
			t.Fatalf("Wait: %v", err)
		}
	})
}
