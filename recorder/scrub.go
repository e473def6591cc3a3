package recorder

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/openmax/openmax/internal/recache"
	"github.com/openmax/openmax/provider/codec"
)

// Scrubbed replaces every secret the recorder keeps out of a cassette.
const Scrubbed = "[scrubbed]"

// SecretHeaderNames are the headers always scrubbed by name (compared
// case-insensitively), on requests and responses alike: the ones vendors
// send keys in, the cookie headers, and Sec-WebSocket-Protocol (which
// browser clients use to carry a key). Beyond these, SecretHeader scrubs
// every header whose name contains a word of SecretWords.
var SecretHeaderNames = []string{
	"Authorization",
	"Proxy-Authorization",
	"X-Api-Key",
	"Api-Key",
	"X-Goog-Api-Key",
	"Ocp-Apim-Subscription-Key",
	"Cookie",
	"Set-Cookie",
	"Sec-Websocket-Protocol",
}

// SecretWords are the words that make a header (SecretHeader) or URL
// query parameter (SecretParam) secret wherever they appear in its name,
// case-insensitively: X-Goog-Api-Key, X-Auth-Token, X-Amz-Security-Token,
// X-Hub-Signature, Private-Token, apiKey, client_secret, ...
var SecretWords = []string{"key", "token", "secret", "auth", "credential", "password", "passwd", "session", "cookie", "signature"}

var secretHeaderNames = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range SecretHeaderNames {
		m[strings.ToLower(n)] = true
	}
	return m
}()

// SecretHeader reports whether every value of the header name is scrubbed
// from a cassette (and never shown by `cassette show`): a name of
// SecretHeaderNames or of a registered wire's credential headers
// (codec.Info.SecretHeaders), or one containing a word of SecretWords,
// except the rate-limit headers (x-ratelimit-remaining-tokens,
// anthropic-ratelimit-tokens-limit, ...), which count tokens and carry no
// secret.
func SecretHeader(name string) bool {
	l := strings.ToLower(name)
	if secretHeaderNames[l] || codec.IsSecretHeader(l) {
		return true
	}
	if strings.Contains(l, "ratelimit") || strings.Contains(l, "rate-limit") {
		return false
	}
	return containsSecretWord(l)
}

// SecretParam reports whether a URL query parameter's value is scrubbed:
// its name (unescaped, case-insensitively) contains a word of SecretWords,
// is "sig" (a signed URL's signature) or is one of a registered wire's
// credential parameters (codec.Info.SecretQuery).
func SecretParam(name string) bool {
	l := strings.ToLower(name)
	return l == "sig" || containsSecretWord(l) || codec.IsSecretQuery(l)
}

func containsSecretWord(l string) bool {
	for _, w := range SecretWords {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// ScrubURL returns raw with its user information and the values of its
// secret query parameters (SecretParam) replaced by Scrubbed, the rest as
// given; text that is not an absolute URL is returned as it is. It is for
// URLs given on a command line (--base-url), which a cassette stores.
func ScrubURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return raw
	}
	if u.User == nil && u.RawQuery == "" {
		return raw
	}
	return (&scrubber{}).url(u)
}

// minLiteral is the shortest secret value that is also scrubbed wherever
// else it appears verbatim (bodies, other headers, error messages); shorter
// values would replace innocent text.
const minLiteral = 8

// ScrubRequest returns req as the recorder writes it into a cassette, with
// every secret replaced by Scrubbed: the method, the URL (secret query
// parameters, SecretParam, and the user information replaced), the headers
// (secret headers, SecretHeader, replaced) and the body (decoded first when
// it has a Content-Encoding, which the recorded headers then drop), with
// every match of patterns replaced in the URL, the header values and the
// body. The values of the secret headers, query parameters and user
// information (8 characters or longer) are also replaced wherever else
// they appear verbatim.
//
// It is deterministic, so a replayer that scrubs a live request with it
// and the same patterns gets exactly the Method, URL, Headers and Body a
// recording of that request holds, and can match on them.
//
// It reads req.Body and puts back an equivalent one (setting GetBody too).
func ScrubRequest(req *http.Request, patterns []*regexp.Regexp) (vcr.Request, error) {
	body, err := takeBody(req)
	if err != nil {
		return vcr.Request{}, err
	}
	s := newScrubber(req.URL, req.Header, patterns)
	return s.request(req.Method, req.URL, req.Header, body), nil
}

// ScrubFunc is ScrubRequest in the shape replay.Options.Scrub takes: it
// returns the URL, headers and body the recorder would write for a request
// with these parts. A URL that does not parse only has the patterns
// applied. A body the scrub leaves as it was comes back as the slice
// given, not a copy of it.
func ScrubFunc(patterns []*regexp.Regexp) func(method, rawURL string, header http.Header, body []byte) (string, http.Header, []byte) {
	return func(method, rawURL string, header http.Header, body []byte) (string, http.Header, []byte) {
		u, err := url.Parse(rawURL)
		if err != nil {
			u = nil
		}
		s := newScrubber(u, header, patterns)
		r := s.request(method, u, header, body)
		if u == nil {
			r.URL = s.str(rawURL)
		}
		if r.Body == string(body) {
			return r.URL, r.Headers, body // nothing scrubbed: no second copy
		}
		return r.URL, r.Headers, []byte(r.Body)
	}
}

// takeBody reads and closes req.Body and replaces it with a fresh reader
// over the same bytes.
func takeBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	var data []byte
	var err error
	if n := req.ContentLength; n > 0 && n <= sizedLimit {
		// Its length known: read into one buffer of that size, not
		// ReadAll's doubling (a conversation's request is most of what
		// a recording allocates, each carrying the whole history).
		data, err = readSized(req.Body, n)
	} else {
		data, err = io.ReadAll(req.Body)
	}
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(data))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	return data, nil
}

// sizedLimit is the largest Content-Length takeBody allocates for up
// front: a client that says more than it sends costs at most this.
const sizedLimit = 1 << 20

// readSized reads body, whose Content-Length is n, as io.ReadAll would
// (every byte, EOF being no error and any other error returned), into a
// buffer of n bytes first.
func readSized(body io.Reader, n int64) ([]byte, error) {
	data := make([]byte, 0, n+1) // +1: EOF can come with a read of nothing
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)] // more than it said: grow
		}
		m, err := body.Read(data[len(data):cap(data)])
		data = data[:len(data)+m]
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return data, err
		}
	}
}

// scrubber scrubs everything of one interaction: its patterns are the
// literal secrets found in the request, longest first, then the user's.
type scrubber struct {
	patterns []*regexp.Regexp
}

func newScrubber(u *url.URL, h http.Header, user []*regexp.Regexp) *scrubber {
	var lits []string
	add := func(v string) {
		if len(v) >= minLiteral {
			lits = append(lits, v)
		}
	}
	for k, vs := range h {
		if !SecretHeader(k) {
			continue
		}
		for _, v := range vs {
			add(v)
			if sigV4Secrets(v, add) {
				continue
			}
			for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == ';' || r == ',' || r == '=' }) {
				add(f)
			}
		}
	}
	if u != nil {
		for _, part := range strings.Split(u.RawQuery, "&") {
			k, v, ok := strings.Cut(part, "=")
			if !ok || !SecretParam(unescape(k)) {
				continue
			}
			add(v)
			add(unescape(v))
		}
		if u.User != nil {
			add(u.User.Username())
			if p, ok := u.User.Password(); ok {
				add(p)
			}
		}
	}
	// Longest first, so a secret that contains another goes whole.
	sortByLenDesc(lits)
	s := &scrubber{}
	seen := map[string]bool{}
	for _, l := range lits {
		if !seen[l] {
			seen[l] = true
			s.patterns = append(s.patterns, recache.Compile(regexp.QuoteMeta(l)))
		}
	}
	s.patterns = append(s.patterns, user...)
	return s
}

// sigV4Secrets adds the secrets of an AWS SigV4 Authorization value (the
// credential, its access key id, the signature) and reports whether v is
// one. Its other fields (the algorithm, SignedHeaders' header names such
// as content-type) are no secrets and must not be scrubbed elsewhere: an
// event-stream frame names its :content-type, and rewriting it would
// break the frame.
func sigV4Secrets(v string, add func(string)) bool {
	rest, ok := strings.CutPrefix(v, "AWS4-HMAC-SHA256 ")
	if !ok {
		return false
	}
	for _, f := range strings.Split(rest, ",") {
		k, val, _ := strings.Cut(strings.TrimSpace(f), "=")
		switch k {
		case "Credential":
			add(val)
			id, _, _ := strings.Cut(val, "/")
			add(id)
		case "Signature":
			add(val)
		}
	}
	return true
}

func sortByLenDesc(xs []string) {
	for i := 1; i < len(xs); i++ {
		for j := i; j > 0 && (len(xs[j]) > len(xs[j-1]) || len(xs[j]) == len(xs[j-1]) && xs[j] < xs[j-1]); j-- {
			xs[j], xs[j-1] = xs[j-1], xs[j]
		}
	}
}

func unescape(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// str replaces every match of every pattern.
func (s *scrubber) str(x string) string {
	for _, p := range s.patterns {
		// Most patterns are a secret's literal text, and most strings do
		// not hold it: look for the text before running the regexp, which
		// builds a new string even when nothing matches.
		if lit, whole := p.LiteralPrefix(); whole {
			if lit == "" || !strings.Contains(x, lit) {
				continue
			}
			x = strings.ReplaceAll(x, lit, Scrubbed)
			continue
		}
		x = p.ReplaceAllLiteralString(x, Scrubbed)
	}
	return x
}

// header returns a scrubbed copy of h.
func (s *scrubber) header(h http.Header) http.Header {
	if h == nil {
		return nil
	}
	out := make(http.Header, len(h))
	for k, vs := range h {
		nv := make([]string, len(vs))
		for i, v := range vs {
			if SecretHeader(k) {
				nv[i] = Scrubbed
			} else {
				nv[i] = s.str(v)
			}
		}
		out[k] = nv
	}
	return out
}

// url renders u with its secret query parameters and password replaced,
// then every pattern. The query keeps its order and encoding.
func (s *scrubber) url(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	if c.User != nil {
		// The user name too: a key is often given as one
		// (https://KEY@host).
		if _, ok := c.User.Password(); ok {
			c.User = url.UserPassword(Scrubbed, Scrubbed)
		} else {
			c.User = url.User(Scrubbed)
		}
	}
	if c.RawQuery != "" {
		parts := strings.Split(c.RawQuery, "&")
		for i, part := range parts {
			k, v, ok := strings.Cut(part, "=")
			if ok && v != "" && SecretParam(unescape(k)) {
				parts[i] = k + "=" + Scrubbed
			}
		}
		c.RawQuery = strings.Join(parts, "&")
	}
	return s.str(c.String())
}

// request is the scrubbed cassette form of a request.
func (s *scrubber) request(method string, u *url.URL, h http.Header, body []byte) vcr.Request {
	if method == "" {
		method = http.MethodGet
	}
	r := vcr.Request{
		Method:  method,
		URL:     s.url(u),
		Headers: s.header(h),
	}
	if codings := ContentCodings(h); len(codings) > 0 && len(body) > 0 {
		// An encoded request body is stored decoded (or as a placeholder),
		// so the scrubber sees its text; a live request scrubbed for
		// matching goes the same way.
		body = decodeRequestBody(codings, body)
		r.Headers.Del("Content-Encoding")
		r.Headers.Del("Content-Length")
	}
	r.Body = s.str(string(body))
	if ct, _, err := mime.ParseMediaType(h.Get("Content-Type")); err == nil && ct == "application/x-www-form-urlencoded" {
		if form, err := url.ParseQuery(r.Body); err == nil {
			r.Form = form
		}
	}
	return r
}

// chunks scrubs a body that arrived in pieces: the patterns run over the
// whole body, so a secret split across two reads is still found, and the
// pieces are cut again at the same places in the scrubbed body. A cut that
// fell inside a match moves to where its replacement starts; pieces left
// empty are dropped (keep reports which of the input pieces survive).
func (s *scrubber) chunks(pieces []string) (body string, out []string, keep []int) {
	body = strings.Join(pieces, "")
	ends := make([]int, len(pieces))
	n := 0
	for i, p := range pieces {
		n += len(p)
		ends[i] = n
	}
	for _, p := range s.patterns {
		locs := p.FindAllStringIndex(body, -1)
		if len(locs) == 0 {
			continue
		}
		var b strings.Builder
		last := 0
		for _, l := range locs {
			b.WriteString(body[last:l[0]])
			b.WriteString(Scrubbed)
			last = l[1]
		}
		b.WriteString(body[last:])
		body = b.String()
		for i, x := range ends {
			ends[i] = mapCut(x, locs)
		}
	}
	prev := 0
	for i, e := range ends {
		if e > prev {
			out = append(out, body[prev:e])
			keep = append(keep, i)
			prev = e
		}
	}
	return body, out, keep
}

// mapCut maps a cut position through the replacement of locs.
func mapCut(x int, locs [][]int) int {
	shift := 0
	for _, l := range locs {
		switch {
		case x >= l[1]:
			shift += len(Scrubbed) - (l[1] - l[0])
		case x > l[0]:
			return l[0] + shift
		default:
			return x + shift
		}
	}
	return x + shift
}

// adjustLength shifts a Content-Length header by delta (the body grew or
// shrank by scrubbing), so the length still tells the recorded body's
// length, or by how much it was short of it.
func adjustLength(h http.Header, delta int) {
	if delta == 0 || h == nil {
		return
	}
	v := h.Get("Content-Length")
	if v == "" {
		return
	}
	n, err := strconv.Atoi(v)
	if err != nil || n+delta < 0 {
		return
	}
	h.Set("Content-Length", strconv.Itoa(n+delta))
}
