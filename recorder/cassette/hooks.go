package cassette

// HookCall is one call the engine made of the session's hooks (see
// core.Hooks), in the order made: an intercept with the verdict it gave,
// or an observe notification, with the failures the hooks reported and
// what went over each hook's stdio during the call. A replay answers each
// call as recorded, so a refusing or failing hook replays without its
// program.
type HookCall struct {
	// Event is the hook event (user_prompt_submit, turn_end, turn_start,
	// tool_start, tool_end, turn_done).
	Event string `yaml:"event"`
	// Payload is the event's payload as JSON.
	Payload string `yaml:"payload"`
	// Refused, Hook and Reason are an intercept's verdict.
	Refused bool   `yaml:"refused,omitempty"`
	Hook    string `yaml:"hook,omitempty"`
	Reason  string `yaml:"reason,omitempty"`
	// Failures are the hooks that did not run or answer usably (each one
	// went out as hook_failed).
	Failures []HookFailure `yaml:"failures,omitempty"`
	// Exchanges are the protocol lines of the call, per hook, in order.
	Exchanges []HookExchange `yaml:"exchanges,omitempty"`
}

// HookFailure is a hook that failed during a call.
type HookFailure struct {
	Hook   string `yaml:"hook"`
	Event  string `yaml:"event"`
	Detail string `yaml:"detail"`
}

// HookExchange is what went over one hook's stdio: the request or
// notification sent, the response read (if any), or how the exchange
// failed. Environment values never appear here.
type HookExchange struct {
	Hook     string `yaml:"hook"`
	Sent     string `yaml:"sent,omitempty"`
	Received string `yaml:"received,omitempty"`
	Failure  string `yaml:"failure,omitempty"`
}

// cloneHooks deep-copies a session's hook calls.
func cloneHooks(calls []HookCall) []HookCall {
	if calls == nil {
		return nil
	}
	out := make([]HookCall, len(calls))
	for i, c := range calls {
		c.Failures = append([]HookFailure(nil), c.Failures...)
		c.Exchanges = append([]HookExchange(nil), c.Exchanges...)
		out[i] = c
	}
	return out
}
