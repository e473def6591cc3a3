// Package wirejson encodes JSON the way the model vendors send it: compact,
// without HTML escaping. The vendor codecs (provider/openai,
// provider/anthropic) share it so their encoders write the same bytes.
package wirejson

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// Marshal encodes v as compact JSON without HTML escaping. It panics when
// v cannot be encoded: only the codecs' own types are passed to it.
func Marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // only our own types are encoded
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// Object is a tool call's arguments as the JSON object a vendor wants
// sent back as the call's input (Anthropic's tool_use.input, Bedrock's
// toolUse.input, Gemini's functionCall.args): the model's own JSON when it is an object, else {}.
func Object(args json.RawMessage) json.RawMessage {
	var obj map[string]json.RawMessage
	if len(bytes.TrimSpace(args)) == 0 || json.Unmarshal(args, &obj) != nil || obj == nil {
		return json.RawMessage(`{}`)
	}
	return args
}

// String is s as a JSON string, encoded like Marshal.
func String(s string) json.RawMessage { return Marshal(s) }

// Split cuts s into pieces of at most n bytes, never inside a UTF-8
// sequence (a piece holds at least one rune, so it may pass n when one rune
// does). n <= 0, or s no longer than n, gives s whole.
func Split(s string, n int) []string {
	if n <= 0 || len(s) <= n {
		return []string{s}
	}
	var out []string
	for len(s) > n {
		i := n
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		if i == 0 {
			_, i = utf8.DecodeRuneInString(s)
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}
