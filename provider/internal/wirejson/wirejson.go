// Package wirejson encodes JSON the way the model vendors send it: compact,
// without HTML escaping. The vendor codecs (provider/openai,
// provider/anthropic) share it so their encoders write the same bytes.
package wirejson

import (
	"bytes"
	"encoding/json"
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

// String is s as a JSON string, encoded like Marshal.
func String(s string) json.RawMessage { return Marshal(s) }
