package importer

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/openmax/openmax/recorder/cassette"
)

const mappingKind = yaml.MappingNode

// yamlDoc is what the three YAML dialects share; the members that differ
// are kept as nodes and read per dialect.
type yamlDoc struct {
	Version      int `yaml:"version"`
	Interactions []struct {
		Request struct {
			Body       yaml.Node `yaml:"body"`
			ParsedBody yaml.Node `yaml:"parsed_body"` // a JSON body stored as YAML (see parsedBody)
			Headers    yaml.Node `yaml:"headers"`
			Method     string    `yaml:"method"`
			URI        string    `yaml:"uri"` // vcrpy
			URL        string    `yaml:"url"` // go-vcr
		} `yaml:"request"`
		Response struct {
			Body       yaml.Node `yaml:"body"`
			ParsedBody yaml.Node `yaml:"parsed_body"`
			Headers    yaml.Node `yaml:"headers"`
			Status     yaml.Node `yaml:"status"`   // vcrpy {code, message}; go-vcr "200 OK"
			Code       int       `yaml:"code"`     // go-vcr
			Duration   yaml.Node `yaml:"duration"` // go-vcr
		} `yaml:"response"`
	} `yaml:"interactions"`
	hasInteractions bool
	// strayBodies names, per interaction, the members of its request and
	// response that look like a body but are not one the importer reads
	// ("request.json_body").
	strayBodies [][]string
}

// decodeYAML decodes the cassette data holds. pre is what yaml.v3 made
// of data when it has read it already (a nil Doc and DocErr, or a nil
// pre: read data).
func decodeYAML(data []byte, pre *cassette.Foreign) (*yamlDoc, error) {
	var root *yaml.Node
	if pre != nil {
		if pre.DocErr != nil {
			return nil, pre.DocErr
		}
		root = pre.Doc
	}
	if root == nil {
		root = new(yaml.Node)
		if err := yaml.Unmarshal(data, root); err != nil {
			return nil, err
		}
	}
	if err := checkExpansion(root, len(data)); err != nil {
		return nil, err
	}
	if root.Kind != yaml.DocumentNode || len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("not a YAML mapping")
	}
	var doc yamlDoc
	if err := root.Content[0].Decode(&doc); err != nil {
		return nil, err
	}
	m := root.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "interactions" {
			doc.hasInteractions = true
			doc.strayBodies = strayBodies(m.Content[i+1])
		}
	}
	return &doc, nil
}

// aliasAllowance is how much larger than the file itself a recording may
// become once its YAML aliases are expanded: PyYAML (and so vcrpy) writes
// an anchor and aliases for a value shared between interactions (a header
// list), which costs little; an alias bomb (one large scalar aliased
// thousands of times) would cost gigabytes once the importer copies each
// use into a cassette.
func aliasAllowance(size int) int64 { return int64(size) + 1<<20 }

// errExpansion is returned (wrapped) for a document whose aliases expand it
// past aliasAllowance.
var errExpansion = errors.New("its YAML aliases expand it too far")

// checkExpansion refuses a document whose expanded size (every scalar's
// bytes, counting a value once per alias of it) is over size plus
// aliasAllowance(size). Each anchored node's expanded size is computed
// once, so the walk is linear in the document.
func checkExpansion(root *yaml.Node, size int) error {
	limit := int64(size) + aliasAllowance(size)
	memo := map[*yaml.Node]int64{}
	var expanded func(n *yaml.Node, depth int) int64
	expanded = func(n *yaml.Node, depth int) int64 {
		if n == nil || depth > 10000 {
			return 0
		}
		if v, ok := memo[n]; ok {
			return v
		}
		memo[n] = limit + 1 // a node that contains itself expands without end
		var total int64
		switch n.Kind {
		case yaml.AliasNode:
			total = expanded(n.Alias, depth+1)
		case yaml.ScalarNode:
			total = int64(len(n.Value)) + 1
		default:
			for _, c := range n.Content {
				total += expanded(c, depth+1)
				if total > limit {
					break
				}
			}
		}
		memo[n] = total
		return total
	}
	if got := expanded(root, 0); got > limit {
		return fmt.Errorf("%w: over %d bytes of values from a %d-byte file (the limit is the file's size plus %d bytes)", errExpansion, limit, size, aliasAllowance(size))
	}
	return nil
}

// strayBodies lists, per interaction of the interactions node, the members
// of its request and response whose name says body but that are neither
// body nor parsed_body: a tool's own way of storing a body, which the
// importer would otherwise drop without a word.
func strayBodies(seq *yaml.Node) [][]string {
	if seq.Kind != yaml.SequenceNode {
		return nil
	}
	out := make([][]string, len(seq.Content))
	for i, in := range seq.Content {
		if in.Kind != yaml.MappingNode {
			continue
		}
		for j := 0; j+1 < len(in.Content); j += 2 {
			side, msg := in.Content[j].Value, in.Content[j+1]
			if (side != "request" && side != "response") || msg.Kind != yaml.MappingNode {
				continue
			}
			for k := 0; k+1 < len(msg.Content); k += 2 {
				name := msg.Content[k].Value
				if strings.Contains(strings.ToLower(name), "body") && name != "body" && name != "parsed_body" {
					out[i] = append(out[i], side+"."+name)
				}
			}
		}
	}
	return out
}

// parseYAML reads a vcrpy or go-vcr cassette, checking it is of format.
func parseYAML(format string, doc *yamlDoc) ([]exchange, error) {
	want := 1
	if format == GoVCR4 {
		want = 2
	}
	if doc.Version != want {
		return nil, fmt.Errorf("cassette version %d, want %d", doc.Version, want)
	}
	if !doc.hasInteractions {
		return nil, errors.New("no interactions member")
	}
	out := make([]exchange, 0, len(doc.Interactions))
	for i, in := range doc.Interactions {
		fail := func(format string, args ...any) error {
			return fmt.Errorf("interaction %d: %s", i, fmt.Sprintf(format, args...))
		}
		if i < len(doc.strayBodies) && len(doc.strayBodies[i]) > 0 {
			return nil, fail("%s: a body member the importer does not read (it reads body and parsed_body)", strings.Join(doc.strayBodies[i], ", "))
		}
		var e exchange
		e.method = strings.ToUpper(strings.TrimSpace(in.Request.Method))
		var err error
		if e.reqHdr, err = headerOf(&in.Request.Headers); err != nil {
			return nil, fail("request headers: %v", err)
		}
		var note string
		if e.reqBody, note, err = messageBody("request", &in.Request.Body, &in.Request.ParsedBody, e.reqHdr); err != nil {
			return nil, fmt.Errorf("interaction %d: %w", i, err)
		}
		if note != "" {
			e.notes = append(e.notes, fmt.Sprintf("interaction %d: %s", i, note))
		}
		if e.respHdr, err = headerOf(&in.Response.Headers); err != nil {
			return nil, fail("response headers: %v", err)
		}
		if e.respBody, note, err = messageBody("response", &in.Response.Body, &in.Response.ParsedBody, e.respHdr); err != nil {
			return nil, fmt.Errorf("interaction %d: %w", i, err)
		}
		if note != "" {
			e.notes = append(e.notes, fmt.Sprintf("interaction %d: %s", i, note))
		}
		switch format {
		case VCRPy:
			if in.Request.URI == "" {
				return nil, fail("the request has no uri (not a vcrpy cassette)")
			}
			e.url = in.Request.URI
			var st struct {
				Code    int    `yaml:"code"`
				Message string `yaml:"message"`
			}
			if in.Response.Status.Kind != yaml.MappingNode {
				return nil, fail("the response status is not a {code, message} mapping (not a vcrpy cassette)")
			}
			if err := in.Response.Status.Decode(&st); err != nil {
				return nil, fail("response status: %v", err)
			}
			e.code, e.status = st.Code, st.Message
		default: // go-vcr
			if in.Request.URL == "" {
				return nil, fail("the request has no url (not a go-vcr cassette)")
			}
			e.url = in.Request.URL
			if in.Response.Status.Kind != 0 {
				if in.Response.Status.Kind != yaml.ScalarNode {
					return nil, fail("the response status is not a string (not a go-vcr cassette)")
				}
				e.status = in.Response.Status.Value
			}
			e.code = in.Response.Code
			if e.code == 0 {
				// Older writers may leave the code out; the status line has it.
				if f := strings.Fields(e.status); len(f) > 0 {
					e.code, _ = strconv.Atoi(f[0])
				}
			}
			e.duration = durationOf(&in.Response.Duration)
		}
		out = append(out, e)
	}
	return out, nil
}

// messageBody reads the body of one side ("request" or "response") of an
// exchange from its body member or, failing that, its parsed_body (see
// parsedBody); when the JSON text of a parsed_body is not the length h's
// Content-Length gives, that is set to its length, and note says so. A
// message with both is read from body when the two hold the same JSON
// value, and refused otherwise. Errors name the member.
func messageBody(side string, body, parsed *yaml.Node, h http.Header) (_ []byte, note string, _ error) {
	b, err := bodyOf(body)
	if err != nil {
		return nil, "", fmt.Errorf("%s body: %w", side, err)
	}
	if parsed.Kind == 0 || (parsed.Kind == yaml.ScalarNode && parsed.ShortTag() == "!!null") {
		return b, "", nil
	}
	p, stale, err := parsedBody(parsed, h)
	if err != nil {
		return nil, "", fmt.Errorf("%s parsed_body: %w", side, err)
	}
	if len(b) > 0 {
		if !sameJSON(b, p) {
			return nil, "", fmt.Errorf("%s: %w", side, errBothBodies)
		}
		return b, "", nil
	}
	if stale {
		note = fmt.Sprintf("the %s parsed_body is %d bytes of JSON text, not the recorded Content-Length %s: Content-Length rewritten to %d",
			side, len(p), strings.TrimSpace(h.Get("Content-Length")), len(p))
		h.Set("Content-Length", strconv.Itoa(len(p)))
	}
	return p, note, nil
}

// bodyOf reads a body: absent or null is empty; a scalar is its string
// (a !!binary one base64-decoded, by yaml.v3); a mapping is vcrpy's
// {string: ...}, and one without that member, or with others, is refused.
func bodyOf(n *yaml.Node) ([]byte, error) {
	switch n.Kind {
	case 0:
		return nil, nil
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return nil, nil
		}
		var s string
		if err := n.Decode(&s); err != nil {
			return nil, err
		}
		return []byte(s), nil
	case yaml.MappingNode:
		var str *yaml.Node
		var others []string
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i].Value; k == "string" {
				str = n.Content[i+1]
			} else {
				others = append(others, k)
			}
		}
		switch {
		case len(others) > 0:
			return nil, fmt.Errorf("a mapping with members %s at line %d (the importer reads only {string: ...})", strings.Join(others, ", "), n.Line)
		case str == nil:
			return nil, fmt.Errorf("an empty mapping at line %d (the importer reads {string: ...})", n.Line)
		case str.Kind != yaml.ScalarNode && str.Kind != yaml.AliasNode:
			return nil, fmt.Errorf("string is a %s at line %d, not text", kindName(str.Kind), str.Line)
		}
		return bodyOf(str)
	case yaml.AliasNode:
		return bodyOf(n.Alias)
	}
	return nil, fmt.Errorf("unexpected YAML %s at line %d", kindName(n.Kind), n.Line)
}

// headerOf reads headers: a mapping of names to a list of values (or a
// single value). Names are canonicalised.
func headerOf(n *yaml.Node) (http.Header, error) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	switch {
	case n.Kind == 0, n.Kind == yaml.ScalarNode && n.Tag == "!!null":
		return http.Header{}, nil
	case n.Kind != yaml.MappingNode:
		return nil, fmt.Errorf("not a mapping (line %d)", n.Line)
	}
	h := http.Header{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i].Value, n.Content[i+1]
		if v.Kind == yaml.AliasNode {
			v = v.Alias
		}
		var vals []string
		switch v.Kind {
		case yaml.SequenceNode:
			if err := v.Decode(&vals); err != nil {
				return nil, fmt.Errorf("%s: %v", k, err)
			}
		case yaml.ScalarNode:
			if v.Tag == "!!null" {
				continue
			}
			vals = []string{v.Value}
		default:
			return nil, fmt.Errorf("%s: unexpected YAML %s (line %d)", k, kindName(v.Kind), v.Line)
		}
		for _, s := range vals {
			h.Add(k, s)
		}
	}
	return h, nil
}

// durationOf reads a go-vcr duration: "" (go-vcr v1), a Go duration
// ("1.2s") or nanoseconds. Anything else is taken as unknown (0): the
// duration is informational.
func durationOf(n *yaml.Node) time.Duration {
	if n.Kind != yaml.ScalarNode {
		return 0
	}
	v := strings.TrimSpace(n.Value)
	if d, err := time.ParseDuration(v); err == nil {
		return d
	}
	if ns, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Duration(ns)
	}
	return 0
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.SequenceNode:
		return "sequence"
	case yaml.MappingNode:
		return "mapping"
	case yaml.ScalarNode:
		return "scalar"
	case yaml.DocumentNode:
		return "document"
	case yaml.AliasNode:
		return "alias"
	}
	return "node"
}
