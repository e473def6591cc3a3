package importer

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

const mappingKind = yaml.MappingNode

// yamlDoc is what the three YAML dialects share; the members that differ
// are kept as nodes and read per dialect.
type yamlDoc struct {
	Version      int `yaml:"version"`
	Interactions []struct {
		Request struct {
			Body    yaml.Node `yaml:"body"`
			Headers yaml.Node `yaml:"headers"`
			Method  string    `yaml:"method"`
			URI     string    `yaml:"uri"` // vcrpy
			URL     string    `yaml:"url"` // go-vcr
		} `yaml:"request"`
		Response struct {
			Body     yaml.Node `yaml:"body"`
			Headers  yaml.Node `yaml:"headers"`
			Status   yaml.Node `yaml:"status"`   // vcrpy {code, message}; go-vcr "200 OK"
			Code     int       `yaml:"code"`     // go-vcr
			Duration yaml.Node `yaml:"duration"` // go-vcr
		} `yaml:"response"`
	} `yaml:"interactions"`
	hasInteractions bool
}

func decodeYAML(data []byte) (*yamlDoc, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
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
		}
	}
	return &doc, nil
}

// parseYAML reads a vcrpy or go-vcr cassette, checking it is of format.
func parseYAML(format string, data []byte) ([]exchange, error) {
	doc, err := decodeYAML(data)
	if err != nil {
		return nil, fmt.Errorf("not a YAML cassette: %w", err)
	}
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
		var e exchange
		e.method = strings.ToUpper(strings.TrimSpace(in.Request.Method))
		var err error
		if e.reqHdr, err = headerOf(&in.Request.Headers); err != nil {
			return nil, fail("request headers: %v", err)
		}
		if e.reqBody, err = bodyOf(&in.Request.Body); err != nil {
			return nil, fail("request body: %v", err)
		}
		if e.respHdr, err = headerOf(&in.Response.Headers); err != nil {
			return nil, fail("response headers: %v", err)
		}
		if e.respBody, err = bodyOf(&in.Response.Body); err != nil {
			return nil, fail("response body: %v", err)
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

// bodyOf reads a body: absent or null is empty; a scalar is its string
// (a !!binary one base64-decoded, by yaml.v3); a mapping is vcrpy's
// {string: ...}.
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
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "string" {
				return bodyOf(n.Content[i+1])
			}
		}
		return nil, nil
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
