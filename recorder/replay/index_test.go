package replay

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"
	"pgregory.net/rapid"

	"github.com/openmax/openmax/recorder/cassette"
)

// linearTake is the matcher's take as it was before the index: a scan of
// the whole cassette for the first unserved interaction that matches (by
// method and path alone for InOrder), naming the first identical one that
// was served when none is left. It is the reference the indexed take must
// agree with.
func linearTake(m *matcher, q *request, rawURL string) (int, error) {
	served := -1
	for i, r := range m.recs {
		if m.inOrder && r != nil && !m.used[i] && r.method == q.method && r.path == q.path {
			m.used[i] = true
			return i, nil
		}
		if r == nil || !r.sameAs(q) {
			continue
		}
		if !m.used[i] {
			m.used[i] = true
			return i, nil
		}
		if served < 0 {
			served = i
		}
	}
	miss := &MissError{Method: q.method, URL: rawURL, Nearest: -1}
	if served >= 0 {
		miss.Nearest, miss.Served = served, true
		return -1, miss
	}
	m.nearest(q, miss)
	return -1, miss
}

// randomRequest draws a request from a small space, so that identical,
// nearly identical (a volatile field, key order, an ignored member) and
// different requests all come up often.
func randomRequest(t *rapid.T, label string) (method, url, body string) {
	method = rapid.SampledFrom([]string{"POST", "POST", "GET", "post"}).Draw(t, label+"method")
	host := rapid.SampledFrom([]string{"http://127.0.0.1:41234", "http://localhost:9"}).Draw(t, label+"host")
	path := rapid.SampledFrom([]string{"/v1/chat/completions", "/v1/messages", "/v1/models", ""}).Draw(t, label+"path")
	query := rapid.SampledFrom([]string{"", "?a=1&b=2", "?b=2&a=1", "?beta=true"}).Draw(t, label+"query")
	url = host + path + query
	turns := rapid.IntRange(0, 3).Draw(t, label+"turns")
	var msgs []string
	for k := range turns {
		text := rapid.SampledFrom([]string{"hi", "again", "/tmp/x1/a.go", "2026-01-01T00:00:00Z"}).Draw(t, fmt.Sprintf("%stext%d", label, k))
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":%q}`, text))
	}
	switch rapid.IntRange(0, 4).Draw(t, label+"shape") {
	case 0:
		body = ""
	case 1:
		body = "not json " + strings.Join(msgs, ",")
	case 2: // keys in another order, a default-ignored member
		body = fmt.Sprintf(`{"messages":[%s],"model":"m","prompt_cache_key":%q}`, strings.Join(msgs, ","),
			rapid.SampledFrom([]string{"k1", "k2"}).Draw(t, label+"cache"))
	default:
		body = fmt.Sprintf(`{"model":"m","messages":[%s]}`, strings.Join(msgs, ","))
	}
	return method, url, body
}

// TestRapidIndexedMatchPicksWhatTheScanPicked: over random cassettes and
// random request sequences, replay (through RoundTrip) serves exactly the
// interaction the linear scan picks, and misses with the same nearest
// interaction, fields, served flag and diff.
func TestRapidIndexedMatchPicksWhatTheScanPicked(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// Most requests come from a small pool, so that recordings repeat
		// and live requests meet served ones; the rest are fresh.
		type req struct{ method, url, body string }
		var pool []req
		for i := range rapid.IntRange(1, 4).Draw(t, "pool") {
			m, u, b := randomRequest(t, fmt.Sprintf("pool%d.", i))
			pool = append(pool, req{m, u, b})
		}
		draw := func(label string) (string, string, string) {
			if k := rapid.IntRange(0, len(pool)+1).Draw(t, label+"pick"); k < len(pool) {
				return pool[k].method, pool[k].url, pool[k].body
			}
			return randomRequest(t, label)
		}
		f := cassette.New()
		n := rapid.IntRange(0, 12).Draw(t, "interactions")
		for i := range n {
			if rapid.IntRange(0, 15).Draw(t, fmt.Sprintf("nil%d", i)) == 0 {
				f.Interactions = append(f.Interactions, nil)
				continue
			}
			method, url, body := draw(fmt.Sprintf("rec%d.", i))
			f.Interactions = append(f.Interactions, &cassette.Interaction{
				Request:  vcr.Request{Method: method, URL: url, Body: body},
				Response: vcr.Response{Code: 200, Body: fmt.Sprint("reply ", i)},
			})
		}
		opts := Options{
			InOrder:   rapid.Bool().Draw(t, "inOrder"),
			MatchHost: rapid.Bool().Draw(t, "matchHost"),
		}
		var got []Event
		opts.OnRequest = func(e Event) { got = append(got, e) }
		rp := New(f, opts)
		ref := newMatcher(f, Options{InOrder: opts.InOrder, MatchHost: opts.MatchHost})
		ref.index() // every recorded request normalised, as the scan needs

		requests := rapid.IntRange(1, 16).Draw(t, "requests")
		for k := range requests {
			method, url, body := draw(fmt.Sprintf("live%d.", k))
			req, err := http.NewRequest(strings.ToUpper(method), url, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			resp, rerr := rp.RoundTrip(req)
			if resp != nil {
				resp.Body.Close()
			}
			q := ref.normalise(req.Method, url, []byte(body))
			want, werr := linearTake(ref, q, url)
			e := got[len(got)-1]
			if e.Interaction != want {
				t.Fatalf("request %d (%s %s %s): served interaction %d, the scan picks %d", k, method, url, body, e.Interaction, want)
			}
			if (rerr == nil) != (werr == nil) {
				t.Fatalf("request %d: error %v, the scan's %v", k, rerr, werr)
			}
			if werr != nil && !reflect.DeepEqual(e.Miss, werr.(*MissError)) {
				t.Fatalf("request %d: miss\n%#v\nthe scan's\n%#v", k, e.Miss, werr)
			}
		}
		if !reflect.DeepEqual(rp.Unused(), ref.unused()) {
			t.Fatalf("unused %v, the scan leaves %v", rp.Unused(), ref.unused())
		}
	})
}
