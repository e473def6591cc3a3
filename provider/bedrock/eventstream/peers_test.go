//go:build sdkpeers

// AWS's SDK is large, so this test builds only with -tags sdkpeers, like
// the other SDK peer tests.

package eventstream

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	awses "github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"pgregory.net/rapid"
)

// toSDK is m as AWS's SDK holds a message.
func toSDK(m Message) awses.Message {
	var out awses.Message
	for _, h := range m.Headers {
		var v awses.Value
		switch x := h.Value.(type) {
		case bool:
			v = awses.BoolValue(x)
		case int8:
			v = awses.Int8Value(x)
		case int16:
			v = awses.Int16Value(x)
		case int32:
			v = awses.Int32Value(x)
		case int64:
			v = awses.Int64Value(x)
		case []byte:
			v = awses.BytesValue(x)
		case string:
			v = awses.StringValue(x)
		case time.Time:
			v = awses.TimestampValue(x)
		case UUID:
			v = awses.UUIDValue(x)
		}
		out.Headers = append(out.Headers, awses.Header{Name: h.Name, Value: v})
	}
	out.Payload = m.Payload
	return out
}

// fromSDK is an SDK message as this package holds it.
func fromSDK(m awses.Message) Message {
	var out Message
	for _, h := range m.Headers {
		var v any
		switch x := h.Value.(type) {
		case awses.BoolValue:
			v = bool(x)
		case awses.Int8Value:
			v = int8(x)
		case awses.Int16Value:
			v = int16(x)
		case awses.Int32Value:
			v = int32(x)
		case awses.Int64Value:
			v = int64(x)
		case awses.BytesValue:
			v = []byte(x)
		case awses.StringValue:
			v = string(x)
		case awses.TimestampValue:
			v = time.Time(x).UTC()
		case awses.UUIDValue:
			v = UUID(x)
		}
		out.Headers = append(out.Headers, Header{Name: h.Name, Value: v})
	}
	out.Payload = m.Payload
	return out
}

// TestPeersSDK: AWS's SDK decodes what Encode writes, and Encode writes
// the very bytes the SDK's encoder does; this package's decoder reads them
// back, for messages with every type of header.
func TestPeersSDK(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := normal(drawMessage(t, "message"))
		// The SDK keeps one header of a name (AWS never repeats one), and
		// writes a timestamp through UnixNano, which holds only the years
		// 1678 to 2262: keep to those.
		seen := map[string]bool{}
		var hs []Header
		for _, h := range m.Headers {
			if seen[h.Name] {
				continue
			}
			seen[h.Name] = true
			if ts, ok := h.Value.(time.Time); ok {
				h.Value = time.UnixMilli(ts.UnixMilli() % ((1 << 62) / 1000000)).UTC()
			}
			hs = append(hs, h)
		}
		m.Headers = hs
		ours := MustEncode(m)
		var theirs bytes.Buffer
		if err := awses.NewEncoder().Encode(&theirs, toSDK(m)); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ours, theirs.Bytes()) {
			t.Fatalf("Encode wrote\n%x\nthe SDK\n%x", ours, theirs.Bytes())
		}
		dm, err := awses.NewDecoder().Decode(bytes.NewReader(ours), nil)
		if err != nil {
			t.Fatalf("the SDK's decoder: %v", err)
		}
		if got := normal(fromSDK(dm)); !reflect.DeepEqual(got, m) {
			t.Fatalf("the SDK decoded %#v\nwant %#v", got, m)
		}
		back, err := NewDecoder(bytes.NewReader(theirs.Bytes())).Next()
		if err != nil || !reflect.DeepEqual(back, m) {
			t.Fatalf("decoding the SDK's bytes: %#v, %v", back, err)
		}
	})
}
