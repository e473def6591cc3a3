package sweep

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/openmax/openmax/recorder/edit"
)

// TestEnumerateResponses: on an OpenAI Responses stream (typed events,
// each an event: line and a data: line) the sweep places a reset at every
// event boundary and a stream error at every chunk, and the stream error
// it replays is the wire's response.failed event.
func TestEnumerateResponses(t *testing.T) {
	ev := func(typ, data string) string { return "event: " + typ + "\ndata: " + data + "\n\n" }
	created := ev("response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","status":"in_progress","output":[]}}`)
	delta := ev("response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":1,"output_index":0,"delta":"Hi"}`)
	done := ev("response.completed", `{"type":"response.completed","sequence_number":2,"response":{"id":"resp_1","status":"completed"}}`)
	it := sse(created+delta, done)
	it.Request.URL = "http://127.0.0.1/v1/responses"
	f := testFile(it)

	var resets, streamErrors []string
	for _, v := range Enumerate(f, Kinds) {
		switch v.Kind {
		case "reset":
			resets = append(resets, v.Name())
		case "stream-error":
			streamErrors = append(streamErrors, v.Name())
		}
	}
	n1, n2 := len(created), len(created)+len(delta)
	want := []string{"reset@0:byte=0", "reset@0:byte=" + strconv.Itoa(n1), "reset@0:byte=" + strconv.Itoa(n2), "reset@0:byte=" + strconv.Itoa(n2+len(done))}
	if !slices.Equal(resets, want) {
		t.Errorf("resets %q, want %q", resets, want)
	}
	if !slices.Equal(streamErrors, []string{"stream-error@0:chunk=0", "stream-error@0:chunk=1"}) {
		t.Errorf("stream errors %q", streamErrors)
	}
	out, err := edit.Inject(f, edit.Op{Kind: edit.KindStreamError, Interaction: 0, Chunk: 1})
	if err != nil {
		t.Fatal(err)
	}
	body := out.Interactions[0].Response.Body
	if !strings.HasPrefix(body, created+delta) || !strings.Contains(body[n2:], "event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":2,\"response\":{\"id\":\"resp_1\"") ||
		!strings.Contains(body[n2:], `"error":{"code":"server_error"`) {
		t.Errorf("the stream error variant serves %q", body)
	}
}
