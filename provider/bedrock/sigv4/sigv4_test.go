package sigv4

import (
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The credentials, date and scope of AWS's published SigV4 test suite
// (aws-sig-v4-test-suite), whose expected signatures the cases below
// carry.
var (
	suiteCreds = Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}
	suiteDate  = time.Date(2015, 8, 30, 12, 36, 0, 0, time.UTC)
)

const (
	suiteHost  = "example.amazonaws.com"
	unreserved = "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	suiteToken = "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA=="
)

// TestSuite signs the cases of AWS's test suite and compares with the
// published signatures.
func TestSuite(t *testing.T) {
	tests := []struct {
		name, method, path, query string
		header                    http.Header
		body                      string
		token                     string
		signed                    string // the SignedHeaders, when not host;x-amz-date
		want                      string
	}{
		{name: "get-vanilla", method: "GET", path: "/", want: "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"},
		{name: "get-vanilla-query-order-key-case", method: "GET", path: "/", query: "Param2=value2&Param1=value1", want: "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"},
		{name: "get-vanilla-query-order-key", method: "GET", path: "/", query: "Param1=value2&Param1=Value1", want: "eedbc4e291e521cf13422ffca22be7d2eb8146eecf653089df300a15b2382bd1"},
		{name: "get-vanilla-empty-query-key", method: "GET", path: "/", query: "Param1=value1", want: "a67d582fa61cc504c4bae71f336f98b97f1ea3c7a6bfe1b6e45aec72011b9aeb"},
		{name: "get-vanilla-query-unreserved", method: "GET", path: "/", query: unreserved + "=" + unreserved, want: "9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197"},
		{name: "get-vanilla-utf8-query", method: "GET", path: "/", query: "%E1%88%B4=bar", want: "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04"},
		{name: "get-unreserved", method: "GET", path: "/" + unreserved, want: "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f"},
		{name: "get-utf8", method: "GET", path: "/\u1234", want: "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85"},
		{name: "get-space", method: "GET", path: "/example space/", want: "652487583200325589f1fba4c7e578f72c47cb61beeca81406b39ddec1366741"},
		{name: "get-header-key-duplicate", method: "GET", path: "/", header: http.Header{"My-Header1": {"value2", "value2", "value1"}},
			signed: "host;my-header1;x-amz-date", want: "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea"},
		{name: "get-header-value-order", method: "GET", path: "/", header: http.Header{"My-Header1": {"value4", "value1", "value3", "value2"}},
			signed: "host;my-header1;x-amz-date", want: "08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01"},
		{name: "get-header-value-trim", method: "GET", path: "/", header: http.Header{"My-Header1": {" value1"}, "My-Header2": {` "a   b   c"`}},
			signed: "host;my-header1;my-header2;x-amz-date", want: "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736"},
		{name: "post-vanilla", method: "POST", path: "/", want: "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"},
		{name: "post-vanilla-query", method: "POST", path: "/", query: "Param1=value1", want: "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11"},
		{name: "post-header-key-case", method: "POST", path: "/", header: http.Header{"MY-HEADER1": {"value1"}},
			signed: "host;my-header1;x-amz-date", want: "c5410059b04c1ee005303aed430f6e6645f61f4dc9e1461ec8f8916fdf18852c"},
		{name: "post-header-value-case", method: "POST", path: "/", header: http.Header{"My-Header1": {"VALUE1"}},
			signed: "host;my-header1;x-amz-date", want: "cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d"},
		{name: "post-x-www-form-urlencoded", method: "POST", path: "/", header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}},
			body: "Param1=value1", signed: "content-type;host;x-amz-date", want: "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"},
		{name: "post-sts-header-before", method: "POST", path: "/", token: suiteToken,
			signed: "host;x-amz-date;x-amz-security-token", want: "85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, vs := range tt.header {
				h[k] = vs // as given: the suite's own case of the name
			}
			creds := suiteCreds
			creds.SessionToken = tt.token
			Sign(Request{Method: tt.method, Host: suiteHost, Path: tt.path, Query: tt.query, Header: h, Payload: []byte(tt.body)}, creds, "us-east-1", "service", suiteDate)
			signed := tt.signed
			if signed == "" {
				signed = "host;x-amz-date"
			}
			want := "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=" + signed + ", Signature=" + tt.want
			if got := h.Get("Authorization"); got != want {
				t.Errorf("Authorization\n got %s\nwant %s", got, want)
			}
			if h.Get("X-Amz-Date") != "20150830T123600Z" {
				t.Errorf("X-Amz-Date %q", h.Get("X-Amz-Date"))
			}
			if h.Get("X-Amz-Security-Token") != tt.token {
				t.Errorf("X-Amz-Security-Token %q, want %q", h.Get("X-Amz-Security-Token"), tt.token)
			}
		})
	}
}

// TestListUsers: the IAM ListUsers walk-through of AWS's documentation of
// the signing process: its canonical request, string to sign and
// signature, and its derived signing keys.
func TestListUsers(t *testing.T) {
	h := http.Header{"Content-Type": {"application/x-www-form-urlencoded; charset=utf-8"}}
	canonical, toSign := Sign(Request{Method: "GET", Host: "iam.amazonaws.com", Path: "/", Query: "Action=ListUsers&Version=2010-05-08", Header: h}, suiteCreds, "us-east-1", "iam", suiteDate)
	wantCanonical := "GET\n/\nAction=ListUsers&Version=2010-05-08\n" +
		"content-type:application/x-www-form-urlencoded; charset=utf-8\nhost:iam.amazonaws.com\nx-amz-date:20150830T123600Z\n\n" +
		"content-type;host;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	if canonical != wantCanonical {
		t.Errorf("canonical request\n%s\nwant\n%s", canonical, wantCanonical)
	}
	wantToSign := "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/iam/aws4_request\nf536975d06c0309214f805bb90ccff089219ecd68b2577efef23edd43b7e1a59"
	if toSign != wantToSign {
		t.Errorf("string to sign\n%s\nwant\n%s", toSign, wantToSign)
	}
	if got := h.Get("Authorization"); !strings.HasSuffix(got, "Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7") {
		t.Errorf("Authorization %s", got)
	}
	for _, k := range []struct {
		day  time.Time
		want string
	}{
		{time.Date(2012, 2, 15, 0, 0, 0, 0, time.UTC), "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d"},
		{suiteDate, "c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9"},
	} {
		if got := hex.EncodeToString(SigningKey(suiteCreds.SecretAccessKey, k.day, "us-east-1", "iam")); got != k.want {
			t.Errorf("signing key for %s: %s, want %s", k.day, got, k.want)
		}
	}
}

// TestBedrockPath: a model id goes on the wire escaped as AWS's SDKs
// escape a label, and is signed escaped once more.
func TestBedrockPath(t *testing.T) {
	for _, tt := range []struct{ id, label string }{
		{"us.amazon.nova-micro-v1:0", "us.amazon.nova-micro-v1%3A0"},
		{"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-haiku-4-5-20251001-v1:0",
			"arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic.claude-haiku-4-5-20251001-v1%3A0"},
		{"plain-model_1.0~x", "plain-model_1.0~x"},
	} {
		if got := EscapeLabel(tt.id); got != tt.label {
			t.Errorf("EscapeLabel(%q) = %q, want %q", tt.id, got, tt.label)
		}
	}
	h := http.Header{"Content-Type": {"application/json"}, "User-Agent": {"x"}, "Content-Length": {"2"}}
	canonical, _ := Sign(Request{Method: "POST", Host: "bedrock-runtime.us-east-1.amazonaws.com", Path: "/model/us.amazon.nova-micro-v1%3A0/converse-stream", Header: h, Payload: []byte("{}")},
		Credentials{AccessKeyID: "AKID", SecretAccessKey: "SECRET", SessionToken: "TOKEN"}, "us-east-1", "bedrock", suiteDate)
	want := "POST\n/model/us.amazon.nova-micro-v1%253A0/converse-stream\n\n" +
		"content-type:application/json\nhost:bedrock-runtime.us-east-1.amazonaws.com\nx-amz-date:20150830T123600Z\nx-amz-security-token:TOKEN\n\n" +
		"content-type;host;x-amz-date;x-amz-security-token\n44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
	if canonical != want {
		t.Errorf("canonical request\n%s\nwant\n%s", canonical, want)
	}
}

// TestCanonicalQuery: names sort before their own extensions, values
// break ties, everything is encoded the SigV4 way.
func TestCanonicalQuery(t *testing.T) {
	for in, want := range map[string]string{
		"+=&++=":                    "%20=&%20%20=",
		"b=2&a=z&a=y&uploadId=x/y=": "a=y&a=z&b=2&uploadId=x%2Fy%3D",
		"lifecycle":                 "lifecycle=",
		"k=%E1%88%B4~*":             "k=%E1%88%B4~%2A",
		"":                          "",
	} {
		if got := canonicalQuery(in); got != want {
			t.Errorf("canonicalQuery(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCredentialsPrinting: printing credentials shows neither the secret
// nor the token.
func TestCredentialsPrinting(t *testing.T) {
	c := Credentials{AccessKeyID: "AKID", SecretAccessKey: "s3cr3t-VALUE", SessionToken: "t0ken-VALUE"}
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%v", c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), fmt.Sprint(&c)} {
		if strings.Contains(s, "s3cr3t") || strings.Contains(s, "t0ken") || !strings.Contains(s, "AKID") {
			t.Errorf("printed %s", s)
		}
	}
}
