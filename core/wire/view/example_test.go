package view_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/openmax/openmax/core/wire/view"
)

// A replay transcript (stdout lines, then the exit code) rendered with the
// client's stdin, so the turn shows its prompt.
func ExampleRender() {
	transcript := `{"type":"hello","proto":"openmax-stdio/6","protocol_version":6,"session_id":"s1","version":"0.1.0","project":"/","continued":false}
{"session_id":"s1","type":"budget","used_tokens":1395,"context_tokens":128000}
{"session_id":"s1","type":"retry","attempt":2,"max_attempts":4,"reason":"HTTP 429 Too Many Requests (server asked to wait 3s)"}
{"session_id":"s1","type":"token","text":"Hello"}
{"session_id":"s1","type":"token","text":" there."}
{"session_id":"s1","type":"message_done","text":"Hello there."}
{"session_id":"s1","type":"done","stop_reason":"stop"}
exit: 0
`
	stdin := `{"cmd":"user","text":"Say hello."}` + "\n"
	sum, err := view.Render(os.Stdout, strings.NewReader(transcript), view.Options{
		Virtual: true, // a replay: waits pass on a simulated clock
		Stdin:   strings.NewReader(stdin),
	})
	if err != nil {
		fmt.Println(err)
	}
	fmt.Println(sum.Turns, sum.Retries, sum.Wait)
	// Output:
	// openmax 0.1.0 · openmax-stdio/6 · session s1
	// project /
	//
	// ── turn 1 ──────────────────────────────────────────────────────────────────────
	// you
	//   Say hello.
	//   · context 1,395 of 128,000 tokens (1%)
	//   ↻ retry: attempt 2 of 4 goes out after waiting 3s (virtual), as the server asked
	//     because: HTTP 429 Too Many Requests (server asked to wait 3s)
	// assistant
	//   Hello there.
	// ■ turn 1 ended: stop — the model's finish reason
	// exit status 0
	//
	// ── summary ─────────────────────────────────────────────────────────────────────
	// turns      1 turn · ended 1 stop
	// retries    1 retry · 3s of virtual wait
	// tokens     not reported
	// errors     0 error lines · 0 protocol_errors
	// exit       0
	// 1 1 3s
}

// IsTerminal decides whether to colour: a terminal, and NO_COLOR unset.
func ExampleIsTerminal() {
	opts := view.Options{Color: view.IsTerminal(os.Stdout)}
	_ = opts
}
