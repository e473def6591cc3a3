package codex

import "encoding/json"

// message is what the tests' fake server reads of a line the client
// wrote: its id as sent, its method and its params.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}
