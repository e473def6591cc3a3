package scan

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"net/url"
	"strings"
)

// The corpus: cassettes built at test time with fake secrets of every
// format planted in every place a recording holds them. No secret is
// written in this source: each is drawn from a seeded generator.

// secretGen draws fake secrets of each format.
type secretGen struct{ r *rand.Rand }

func newSecretGen(seed uint64) *secretGen { return &secretGen{rand.New(rand.NewPCG(seed, seed))} }

func (g *secretGen) from(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[g.r.IntN(len(alphabet))]
	}
	return string(b)
}

const (
	base62    = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	upperNum  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	hexDigits = "0123456789abcdef"
)

// key draws n base62 characters with a digit, an upper and a lower case
// letter (as real keys of that length have).
func (g *secretGen) key(n int) string {
	for {
		s := g.from(base62, n)
		if mixed(s) && strings.ToLower(s) != s && strings.ToUpper(s) != s && (n < entropyMinLen || highEntropy(s)) {
			return s
		}
	}
}

// planted is one fake secret of a named format.
type planted struct {
	format string // the rule that names it
	value  string // the secret as it appears
}

// namedFormats are the formats a text rule finds anywhere.
func (g *secretGen) namedFormats() []planted {
	jwtHead := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	jwtBody := base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"` + g.key(12) + `","iat":1700000000}`))
	return []planted{
		{RuleOpenAI, "sk-proj-" + g.key(48)},
		{RuleOpenAI, "sk-" + g.key(48)},
		{RuleAnthropic, "sk-ant-api03-" + g.key(80)},
		{RuleGoogle, "AIza" + g.key(35)},
		{RuleAWSKeyID, "AKIA" + g.from(upperNum, 16)},
		{RuleAWSKeyID, "ASIA" + g.from(upperNum, 16)},
		{RuleGitHub, "ghp_" + g.key(36)},
		{RuleJWT, jwtHead + "." + jwtBody + "." + g.key(43)},
		{RulePrivateKey, "-----BEGIN RSA PRIVATE KEY-----\n" + g.from(base62, 64)},
	}
}

// cassetteBuilder writes a cassette's YAML and counts its lines, so each
// plant knows the line it is on.
type cassetteBuilder struct {
	b      strings.Builder
	line   int // lines written
	ix     int // interactions written
	expect []expected
}

// expected is a finding a plant must give.
type expected struct {
	rule  string
	value string
	line  int
	ix    int
	where string // a part of Where
}

// w writes one line and returns its number.
func (c *cassetteBuilder) w(format string, a ...any) int {
	fmt.Fprintf(&c.b, format+"\n", a...)
	c.line++
	return c.line
}

func (c *cassetteBuilder) want(rule, value string, line int, where string) {
	c.expect = append(c.expect, expected{rule, value, line, c.ix, where})
}

// sq is s as a single-quoted YAML scalar.
func sq(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// jsonStr is s as a JSON string.
func jsonStr(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// plainResponse writes a short JSON response with no secret.
func (c *cassetteBuilder) plainResponse() {
	c.w("    response:")
	c.w(`      body: '{"id":"chatcmpl-AbC123xYz789QwErTy456","object":"chat.completion","choices":[{"message":{"role":"assistant","content":"Hello"}}]}'`)
	c.w("      headers:")
	c.w("        Content-Type:")
	c.w("          - application/json")
	c.w("        X-Request-Id:")
	c.w("          - req_8Fh3kLq9ZmW2pXv7Tn4Rb6Yc")
	c.w("      status: 200 OK")
	c.w("      code: 200")
}

// request writes the start of an interaction's request: header lines
// (name, value) then body, url, method.
func (c *cassetteBuilder) request(headers [][2]string, body, rawURL string) map[string]int {
	lines := map[string]int{}
	c.w("  - request:")
	if body != "" {
		lines["body"] = c.w("      body: %s", sq(body))
	}
	c.w("      headers:")
	c.w("        Content-Type:")
	c.w("          - application/json")
	for _, h := range headers {
		c.w("        %s:", h[0])
		lines[h[0]] = c.w("          - %s", sq(h[1]))
	}
	lines["url"] = c.w("      url: %s", sq(rawURL))
	c.w("      method: POST")
	return lines
}

func (c *cassetteBuilder) end() { c.ix++ }

// responseEnd writes a response's one header, its status, and ends the
// interaction.
func (c *cassetteBuilder) responseEnd(name, value string) {
	c.w("      headers:")
	c.w("        %s:", name)
	c.w("          - %s", value)
	c.w("      status: 200 OK")
	c.w("      code: 200")
	c.end()
}

// gzipBytes is data gzip-compressed.
func gzipBytes(data []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(data)
	zw.Close()
	return buf.Bytes()
}

// binaryBlock writes data as a !!binary block scalar under key (at the
// given indent) and returns the key's line.
func (c *cassetteBuilder) binaryBlock(indent, key string, data []byte) int {
	line := c.w("%s%s: !!binary |", indent, key)
	enc := base64.StdEncoding.EncodeToString(data)
	for len(enc) > 0 {
		n := min(70, len(enc))
		c.w("%s  %s", indent, enc[:n])
		enc = enc[n:]
	}
	return line
}

// eventFrame is one AWS eventstream frame.
func eventFrame(eventType string, payload []byte) []byte {
	var h bytes.Buffer
	for _, kv := range [][2]string{{":event-type", eventType}, {":content-type", "application/json"}, {":message-type", "event"}} {
		h.WriteByte(byte(len(kv[0])))
		h.WriteString(kv[0])
		h.WriteByte(7)
		binary.Write(&h, binary.BigEndian, uint16(len(kv[1])))
		h.WriteString(kv[1])
	}
	total := 12 + h.Len() + len(payload) + 4
	var f bytes.Buffer
	binary.Write(&f, binary.BigEndian, uint32(total))
	binary.Write(&f, binary.BigEndian, uint32(h.Len()))
	binary.Write(&f, binary.BigEndian, crc32.ChecksumIEEE(f.Bytes()[:8]))
	f.Write(h.Bytes())
	f.Write(payload)
	binary.Write(&f, binary.BigEndian, crc32.ChecksumIEEE(f.Bytes()))
	return f.Bytes()
}

// buildCorpus writes a cassette with every named format in a request
// header, a query value, a JSON request body, an SSE response, a gzip
// response (vcrpy's layout), an eventstream response (plain and as
// Bedrock's base64 bytes) and the session; then the secrets known only by
// where they are (Authorization schemes, cookies, SigV4, session tokens,
// the recorder's secret headers and query parameters, credential fields,
// URL passwords) and high-entropy tokens in headers, query values, JSON
// and SSE bodies and a gzip body. It returns the YAML and the findings it
// must give.
func buildCorpus(seed uint64) ([]byte, []expected) {
	g := newSecretGen(seed)
	c := &cassetteBuilder{}
	c.w("version: 1")
	c.w("interactions:")
	for _, p := range g.namedFormats() {
		// A request header, a query value and the JSON body.
		body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":` + jsonStr("here: "+p.value) + `}]}`
		lines := c.request([][2]string{{"X-Debug", flat(p.value)}}, body, "https://api.example.test/v1/chat/completions?q="+url.QueryEscape(p.value))
		c.want(p.format, flat(p.value), lines["X-Debug"], "request header X-Debug")
		c.want(p.format, p.value, lines["url"], "request url query q")
		c.want(p.format, p.value, lines["body"], "request body $.messages[0].content")
		// An SSE response carrying it in an event's JSON.
		c.w("    response:")
		c.w("      body: |")
		c.w("        event: message_start")
		c.w(`        data: {"type":"message_start","message":{"id":"msg_01H1pwRRkQxKbUGKi785gT4M","role":"assistant"}}`)
		c.w("")
		c.w("        event: content_block_delta")
		l := c.w(`        data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":%s}}`, jsonStr(p.value))
		c.want(p.format, p.value, l, "response body event 1 (content_block_delta) $.delta.text")
		c.w("")
		c.responseEnd("Content-Type", "text/event-stream")

		// A gzip response body as vcrpy records one.
		c.request(nil, `{"model":"gpt-4o-mini","stream":false}`, "https://api.example.test/v1/chat/completions")
		c.w("    response:")
		c.w("      body:")
		gz := gzipBytes([]byte(`{"id":"chatcmpl-AbC123xYz789QwErTy456","choices":[{"message":{"role":"assistant","content":` + jsonStr(p.value) + `}}]}`))
		l = c.binaryBlock("        ", "string", gz)
		c.want(p.format, p.value, l, "response body (gzip) $.choices[0].message.content")
		c.responseEnd("Content-Encoding", "gzip")

		// An eventstream response: a plain payload, then Bedrock's
		// base64 bytes.
		c.request(nil, `{"messages":[{"role":"user","content":[{"text":"Hello"}]}]}`, "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse-stream")
		c.w("    response:")
		inner := `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":` + jsonStr(p.value) + `}}`
		frames := append(eventFrame("contentBlockDelta", []byte(`{"contentBlockIndex":0,"delta":{"text":`+jsonStr(p.value)+`},"p":"abcdefghijklmnopqrstuvwxyzABCDEF"}`)),
			eventFrame("chunk", []byte(`{"bytes":"`+base64.StdEncoding.EncodeToString([]byte(inner))+`","p":"abcdefghijklmnop"}`))...)
		l = c.binaryBlock("      ", "body", frames)
		c.want(p.format, p.value, l, "response body frame 0 (contentBlockDelta) $.delta.text")
		c.want(p.format, p.value, l, "response body frame 1 (chunk) $.bytes (base64).delta.text")
		c.responseEnd("Content-Type", "application/vnd.amazon.eventstream")
	}

	// Secrets known by where they are.
	bearer, basic := g.key(40), base64.StdEncoding.EncodeToString([]byte("user:"+g.key(20)))
	sig := g.from(hexDigits, 64)
	session := g.key(120) + "//" + g.key(60) + "=="
	apiKey, cookieVal, setCookie := g.key(32), g.key(32), g.key(40)
	lines := c.request([][2]string{
		{"Authorization", "Bearer " + bearer},
		{"X-Api-Key", apiKey},
		{"Cookie", "theme=dark; session=" + cookieVal},
		{"X-Amz-Security-Token", session},
		{"X-Session-Count", "3"}, // a secret word in the name, too short to be a credential
	}, `{"api_key":`+jsonStr(apiKey+"x")+`,"name":"alice"}`, "https://user:"+g.key(16)+"@api.example.test/v1/models?key="+g.key(30)+"&page=2")
	c.want(RuleBearer, bearer, lines["Authorization"], "request header Authorization")
	c.want(RuleSecretHeader, apiKey, lines["X-Api-Key"], "request header X-Api-Key")
	c.want(RuleCookie, cookieVal, lines["Cookie"], "request header Cookie")
	c.want(RuleAWSSession, session, lines["X-Amz-Security-Token"], "request header X-Amz-Security-Token")
	c.want(RuleSecretField, apiKey+"x", lines["body"], "request body $.api_key")
	c.want(RuleURLUser, "", lines["url"], "request url password")
	c.want(RuleSecretQuery, "", lines["url"], "request url query key")
	c.w("    response:")
	c.w(`      body: '{"ok":true}'`)
	c.w("      headers:")
	c.w("        Set-Cookie:")
	l := c.w("          - %s", sq("sid="+setCookie+"; Path=/; HttpOnly; Secure"))
	c.want(RuleCookie, setCookie, l, "response header Set-Cookie")
	c.w("          - '__cf_bm=Kp1YG1oRKkQLyyjVvJMwoM7ql79VaamURrWrTFo.aTE0-1751569118-1.0.1.1-KGbIEiERemwjKrv8ycZmhv0cRJ; path=/'")
	c.w("      status: 200 OK")
	c.w("      code: 200")
	c.end()

	custom := "Token " + g.key(24)
	lines = c.request([][2]string{
		{"X-Other", "plain"},
		{"Authorization", custom},
	}, "", "https://api.example.test/v1/x")
	c.want(RuleAuthHeader, custom, lines["Authorization"], "request header Authorization")
	c.plainResponse()
	c.end()

	lines = c.request([][2]string{
		{"Authorization", "AWS4-HMAC-SHA256 Credential=[scrubbed]/20260101/us-east-1/bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature=" + sig},
		{"Proxy-Authorization", "Basic " + basic},
	}, "", "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/invoke?X-Amz-Signature="+g.from(hexDigits, 64)+"&X-Amz-Credential=[scrubbed]")
	c.want(RuleAWSSigV4, sig, lines["Authorization"], "request header Authorization")
	c.want(RuleBasic, basic, lines["Proxy-Authorization"], "request header Proxy-Authorization")
	c.want(RuleAWSSigV4, "", lines["url"], "request url query X-Amz-Signature")
	c.plainResponse()
	c.end()

	// High-entropy tokens with no format: a header, a query value, JSON
	// and SSE bodies, a gzip body.
	hdr, q, js, ev, gzv := g.key(40), g.key(32), g.key(48), g.key(36), g.key(44)
	lines = c.request([][2]string{{"X-Custom-Thing", hdr}}, `{"model":"m","metadata":{"note":`+jsonStr(js)+`}}`, "https://api.example.test/v1/x?state="+q)
	c.want(RuleEntropy, hdr, lines["X-Custom-Thing"], "request header X-Custom-Thing")
	c.want(RuleEntropy, q, lines["url"], "request url query state")
	c.want(RuleEntropy, js, lines["body"], "request body $.metadata.note")
	c.w("    response:")
	c.w("      body: |")
	c.w(`        data: {"id":"chatcmpl-DuLdWOILVCVVrpY7aRAWaTdcPyWSy","choices":[{"delta":{"content":"Hi"}}]}`)
	c.w("")
	l = c.w(`        data: {"id":"chatcmpl-DuLdWOILVCVVrpY7aRAWaTdcPyWSy","choices":[{"delta":{"content":%s}}]}`, jsonStr(ev))
	c.want(RuleEntropy, ev, l, "response body event 1 (data) $.choices[0].delta.content")
	c.w("")
	c.w("        data: [DONE]")
	c.w("")
	c.responseEnd("Content-Type", "text/event-stream")

	c.request(nil, `{"model":"m"}`, "https://api.example.test/v1/x")
	c.w("    response:")
	l = c.binaryBlock("      ", "body", gzipBytes([]byte(`{"signature":"`+g.key(200)+`","encrypted_content":"`+g.key(180)+`","value":`+jsonStr(gzv)+`}`)))
	c.want(RuleEntropy, gzv, l, "response body (gzip) $.value")
	c.responseEnd("Content-Encoding", "gzip")

	// The session: a command line the client sent.
	tok := g.namedFormats()[0].value
	c.w("openmax:")
	c.w("  session_id: s1")
	c.w("  commands:")
	l = c.w("    - line: %s", sq(`{"cmd":"user","text":"use `+tok+`"}`))
	c.expect = append(c.expect, expected{RuleOpenAI, tok, l, -1, "openmax.commands[0].line"})
	c.w("      turn: 0")
	return []byte(c.b.String()), c.expect
}

// flat is a secret as a header value holds it (no line breaks).
func flat(s string) string { return strings.ReplaceAll(s, "\n", "") }
