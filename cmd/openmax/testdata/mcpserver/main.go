// Command mcpserver is a tiny MCP server on stdio for the codex tests of
// cmd/openmax: configured in a test's CODEX_HOME/config.toml, it is the
// server codex starts and calls a tool of. It speaks newline-delimited
// JSON-RPC 2.0 (the MCP stdio transport), answers initialize (echoing the
// client's protocol version), ping, tools/list and tools/call, ignores
// notifications, and answers any other request with "method not found".
// It offers one tool:
//
//	ping {"text": T}   answers the text "pong from mcpserver: T"
//
// It never touches the network and exits when its stdin ends.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
)

// message is any JSON-RPC message; ID is absent on notifications.
type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// pingTool is the one tool's listing.
var pingTool = map[string]any{
	"name":        "ping",
	"description": "Answers pong with the text it is given.",
	"inputSchema": map[string]any{
		"type":       "object",
		"properties": map[string]any{"text": map[string]any{"type": "string"}},
		"required":   []string{"text"},
	},
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64*1024), 16<<20)
	out := bufio.NewWriter(os.Stdout)
	for in.Scan() {
		var m message
		if err := json.Unmarshal(in.Bytes(), &m); err != nil {
			fmt.Fprintf(os.Stderr, "mcpserver: bad line: %v\n", err)
			continue
		}
		if len(m.ID) == 0 {
			continue // a notification: nothing to answer
		}
		result, rpcErr := handle(m)
		reply := map[string]any{"jsonrpc": "2.0", "id": m.ID}
		if rpcErr != nil {
			reply["error"] = rpcErr
		} else {
			reply["result"] = result
		}
		b, err := json.Marshal(reply)
		if err != nil {
			fmt.Fprintf(os.Stderr, "mcpserver: %v\n", err)
			os.Exit(1)
		}
		out.Write(append(b, '\n'))
		if err := out.Flush(); err != nil {
			os.Exit(1)
		}
	}
}

// handle answers one request.
func handle(m message) (any, map[string]any) {
	switch m.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(m.Params, &p)
		return map[string]any{
			"protocolVersion": p.ProtocolVersion,
			"capabilities":    map[string]any{"tools": map[string]any{"listChanged": false}},
			"serverInfo":      map[string]any{"name": "mcpserver", "version": "1.0.0"},
		}, nil
	case "ping":
		return map[string]any{}, nil
	case "tools/list":
		return map[string]any{"tools": []any{pingTool}}, nil
	case "tools/call":
		var p struct {
			Name      string `json:"name"`
			Arguments struct {
				Text string `json:"text"`
			} `json:"arguments"`
		}
		if err := json.Unmarshal(m.Params, &p); err != nil || p.Name != "ping" {
			return map[string]any{
				"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("no tool %q", p.Name)}},
				"isError": true,
			}, nil
		}
		return map[string]any{
			"content": []any{map[string]any{"type": "text", "text": "pong from mcpserver: " + p.Arguments.Text}},
			"isError": false,
		}, nil
	}
	return nil, map[string]any{"code": -32601, "message": "method not found: " + m.Method}
}
