// Package sigv4 signs HTTP requests with AWS Signature Version 4, the
// header form (an Authorization header), with the standard library only.
// It is the signing Bedrock's runtime API takes; its tests check it
// against AWS's published test suite and, with -tags sdkpeers, against
// aws-sdk-go-v2's own signer.
//
// The canonical request is built the way AWS's SDKs build it for every
// service but S3: the path as it goes on the wire, URI-encoded once more
// (so a model id sent as us.amazon.nova-micro-v1%3A0 is signed as
// us.amazon.nova-micro-v1%253A0), the query sorted and encoded, the
// signed headers lower-cased, trimmed and sorted, and the hex SHA-256 of
// the payload.
package sigv4

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
)

// Credentials are an AWS access key, with the session token of temporary
// credentials.
type Credentials struct {
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
}

// String shows the access key id only: the secret and the token are
// never printed.
func (c Credentials) String() string {
	tok := "(none)"
	if c.SessionToken != "" {
		tok = "(set)"
	}
	secret := "(none)"
	if c.SecretAccessKey != "" {
		secret = "(set)"
	}
	return fmt.Sprintf("sigv4.Credentials{AccessKeyID: %q, SecretAccessKey: %s, SessionToken: %s}", c.AccessKeyID, secret, tok)
}

// GoString is String, so %#v hides the secrets too.
func (c Credentials) GoString() string { return c.String() }

// Valid reports whether c can sign: it has a key id and a secret.
func (c Credentials) Valid() bool { return c.AccessKeyID != "" && c.SecretAccessKey != "" }

// Request is what a signature covers.
type Request struct {
	Method string
	// Host is the Host header as sent (with a port when the URL has one).
	Host string
	// Path is the path exactly as it goes on the wire (a URL's
	// EscapedPath); empty is "/".
	Path string
	// Query is the query string as sent, without the '?'.
	Query string
	// Header holds the headers to sign besides host (Content-Type, and
	// any other the caller wants covered). Sign adds X-Amz-Date,
	// X-Amz-Security-Token (with a session token) and Authorization to
	// it.
	Header  http.Header
	Payload []byte
}

// Algorithm is the signing algorithm's name.
const Algorithm = "AWS4-HMAC-SHA256"

// Date formats.
const (
	timeFormat  = "20060102T150405Z"
	shortFormat = "20060102"
)

// unsigned headers are never signed: they change on the way or are the
// signature itself.
var unsigned = map[string]bool{
	"authorization": true, "user-agent": true, "x-amzn-trace-id": true, "expect": true,
	"transfer-encoding": true, "connection": true, "accept-encoding": true, "content-length": true,
}

// Sign signs r for region and service at now with creds: it sets
// X-Amz-Date (and X-Amz-Security-Token when creds has a token) on
// r.Header, then the Authorization header over every header of r.Header
// but the unsigned ones (User-Agent, Content-Length, Accept-Encoding and
// the like, which transports rewrite) and host. It returns the canonical
// request and the string to sign, for tests.
func Sign(r Request, creds Credentials, region, service string, now time.Time) (canonical, toSign string) {
	now = now.UTC()
	amzDate := now.Format(timeFormat)
	r.Header.Set("X-Amz-Date", amzDate)
	if creds.SessionToken != "" {
		r.Header.Set("X-Amz-Security-Token", creds.SessionToken)
	}
	names, block := canonicalHeaders(r.Host, r.Header)
	signed := strings.Join(names, ";")
	sum := sha256.Sum256(r.Payload)
	path := r.Path
	if path == "" {
		path = "/"
	}
	canonical = strings.Join([]string{
		r.Method,
		escape(path, false),
		canonicalQuery(r.Query),
		block,
		signed,
		hex.EncodeToString(sum[:]),
	}, "\n")
	scope := now.Format(shortFormat) + "/" + region + "/" + service + "/aws4_request"
	creq := sha256.Sum256([]byte(canonical))
	toSign = Algorithm + "\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(creq[:])
	key := SigningKey(creds.SecretAccessKey, now, region, service)
	sig := hex.EncodeToString(mac(key, toSign))
	r.Header.Set("Authorization", Algorithm+" Credential="+creds.AccessKeyID+"/"+scope+", SignedHeaders="+signed+", Signature="+sig)
	return canonical, toSign
}

// SigningKey derives the key that signs requests for a day, region and
// service.
func SigningKey(secret string, day time.Time, region, service string) []byte {
	k := mac([]byte("AWS4"+secret), day.UTC().Format(shortFormat))
	k = mac(k, region)
	k = mac(k, service)
	return mac(k, "aws4_request")
}

func mac(key []byte, data string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(data))
	return h.Sum(nil)
}

// canonicalHeaders is the sorted lower-case names of the signed headers
// and their canonical block: name:value lines, each value trimmed with
// its runs of spaces made one, a header's values joined by commas.
func canonicalHeaders(host string, h http.Header) ([]string, string) {
	vals := map[string][]string{"host": {host}}
	for k, vs := range h {
		lk := strings.ToLower(k)
		if unsigned[lk] || lk == "host" {
			continue
		}
		vals[lk] = append(vals[lk], vs...)
	}
	names := make([]string, 0, len(vals))
	for k := range vals {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, k := range names {
		b.WriteString(k)
		b.WriteByte(':')
		for i, v := range vals[k] {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strings.Join(strings.Fields(v), " "))
		}
		b.WriteByte('\n')
	}
	return names, b.String()
}

// canonicalQuery is the query with every name and value URI-encoded,
// sorted by name and then value.
func canonicalQuery(raw string) string {
	if raw == "" {
		return ""
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		// Keep what parsed; a query the server cannot read fails there.
		q, _ = url.ParseQuery(strings.ReplaceAll(raw, ";", "%3B"))
	}
	var pairs [][2]string
	for k, vs := range q {
		for _, v := range vs {
			pairs = append(pairs, [2]string{escape(k, true), escape(v, true)})
		}
	}
	// By encoded name, then value: a joined "name=value" would sort a
	// name before its own extension ("%20%20=" before "%20=").
	sort.Slice(pairs, func(i, j int) bool {
		if pairs[i][0] != pairs[j][0] {
			return pairs[i][0] < pairs[j][0]
		}
		return pairs[i][1] < pairs[j][1]
	})
	out := make([]string, len(pairs))
	for i, p := range pairs {
		out[i] = p[0] + "=" + p[1]
	}
	return strings.Join(out, "&")
}

// escape URI-encodes s the SigV4 way: every byte but the unreserved
// A-Z a-z 0-9 - _ . ~ as %XX in upper-case hex, and '/' too unless it is a
// path.
func escape(s string, slash bool) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_', c == '.', c == '~':
			b.WriteByte(c)
		case c == '/' && !slash:
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
		}
	}
	return b.String()
}

// EscapeLabel URI-encodes one path segment the way AWS's SDKs encode a
// label of a REST URL (a Bedrock model id): every byte but the unreserved
// ones, '/' and ':' included.
func EscapeLabel(s string) string { return escape(s, true) }
