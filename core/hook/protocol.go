package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/openmax/openmax/internal/jsonrpc"
)

// The AHP messages of this revision (docs/hooks.md).
const (
	// Version is carried in every message's params.
	Version = "openmax.hooks/1"
	// MethodIntercept is the request of an intercept hook; it is answered
	// with a result {decision, reason}.
	MethodIntercept = "hook/intercept"
	// MethodObserve is the notification (no id) of an observe hook.
	MethodObserve = "hook/observe"
)

// Decisions of an intercept result.
const (
	DecisionAllow  = "allow"
	DecisionRefuse = "refuse"
)

// Params are the params of both methods.
type Params struct {
	Version   string          `json:"version"`
	Hook      string          `json:"hook"`
	Event     string          `json:"event"`
	SessionID string          `json:"session_id"`
	Payload   json.RawMessage `json:"payload"`
}

// encodeMessage is the line (without its newline) of an intercept request
// (id > 0) or an observe notification (id 0), in internal/jsonrpc's V2
// dialect. encoding/json escapes every newline inside strings and writes
// valid UTF-8, so the line is one line.
func encodeMessage(id int64, p Params) ([]byte, error) {
	method := MethodObserve
	var m jsonrpc.Message
	var err error
	if id > 0 {
		method = MethodIntercept
		m, err = jsonrpc.NewRequest(jsonrpc.Int64ID(id), method, p)
	} else {
		m, err = jsonrpc.NewNotification(method, p)
	}
	var line []byte
	if err == nil {
		line, err = jsonrpc.V2.Encode(m)
	}
	if err != nil {
		return nil, fmt.Errorf("hook: encode %s: %w", method, err)
	}
	return line, nil
}

// Result is the result of an intercept.
type Result struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
}

// errMalformed marks a line that is not a JSON-RPC object of this protocol.
var errMalformed = errors.New("malformed output")

// parseResponse reads one line the hook wrote. It returns the response's
// id, or an error wrapping errMalformed for a line that is not a JSON-RPC
// 2.0 response (a banner, a log line, a request of its own).
func parseResponse(line []byte) (int64, *jsonrpc.Response, error) {
	malformed := func(why string) (int64, *jsonrpc.Response, error) {
		return 0, nil, fmt.Errorf("%w: %s: %s", errMalformed, why, excerpt(line))
	}
	if !utf8.Valid(line) {
		return malformed("not UTF-8")
	}
	m, err := jsonrpc.V2.Decode(bytes.TrimSpace(line))
	var pe *jsonrpc.ParseError
	switch {
	case errors.Is(err, jsonrpc.ErrNotObject) || errors.As(err, &pe):
		return malformed("not a JSON-RPC object")
	case errors.Is(err, jsonrpc.ErrVersion):
		return malformed(`no "jsonrpc":"2.0"`)
	case err != nil: // neither a method nor an id
		return malformed("a response without an id openmax sent")
	}
	r, ok := m.(*jsonrpc.Response)
	if !ok {
		return malformed("a request or notification from the hook (openmax.hooks/1 has none)")
	}
	id, ok := r.ID.Int64()
	if !ok || id <= 0 {
		return malformed("a response without an id openmax sent")
	}
	if (r.Error == nil) == (len(r.Result) == 0 || string(r.Result) == "null") {
		return malformed("a response needs exactly one of result and error")
	}
	return id, r, nil
}

// decide reads an intercept response into a Result.
func decide(r *jsonrpc.Response) (Result, error) {
	if r.Error != nil {
		return Result{}, fmt.Errorf("the hook answered with error %d: %s", r.Error.Code, clip(r.Error.Message, 512))
	}
	var res Result
	if err := json.Unmarshal(r.Result, &res); err != nil {
		return Result{}, fmt.Errorf("%w: the result is not {decision, reason}: %v", errMalformed, err)
	}
	switch res.Decision {
	case DecisionAllow:
		return Result{Decision: DecisionAllow}, nil
	case DecisionRefuse:
		if res.Reason == "" {
			return Result{}, fmt.Errorf("%w: a refusal without a reason", errMalformed)
		}
		return res, nil
	default:
		return Result{}, fmt.Errorf("%w: decision %q: want allow or refuse", errMalformed, clip(res.Decision, 64))
	}
}

// excerpt is the start of a line for a failure detail.
func excerpt(line []byte) string {
	return fmt.Sprintf("%q", clip(string(line), 120))
}

// clip shortens s to at most n bytes, on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
