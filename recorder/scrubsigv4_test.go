package recorder

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openmax/openmax/recorder/cassette"
)

// TestScrubSigV4: of an AWS SigV4 Authorization header, the credential
// (and its access key id) and the signature are secrets wherever they
// appear; the algorithm and SignedHeaders' header names are not, so a
// response that names them (an event-stream frame's :content-type header)
// is stored byte for byte.
func TestScrubSigV4(t *testing.T) {
	const (
		keyID = "AKIDSCRUBTEST0001"
		sig   = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
		cred  = keyID + "/20260101/us-east-1/bedrock/aws4_request"
	)
	reply := "\x00\x00\x00\x2a\r:content-type\x07\x00\x10application/json x-amz-date host accept " +
		"AWS4-HMAC-SHA256 SignedHeaders Credential Signature; echoed " + keyID + " " + sig
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
		io.WriteString(w, reply)
	}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "c.yaml")
	rec, err := New(Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/model/m/converse-stream", strings.NewReader(`{"messages":[]}`))
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+cred+", SignedHeaders=accept;content-type;host;x-amz-date, Signature="+sig)
	resp, err := (&http.Client{Transport: rec}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := cassette.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.NewReplacer(keyID, Scrubbed, sig, Scrubbed).Replace(reply)
	if got := f.Interactions[0].Response.Body; got != want {
		t.Errorf("stored body\n%q\nwant\n%q", got, want)
	}
}
