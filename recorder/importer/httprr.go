package importer

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// httprrMagic starts every httprr trace.
const httprrMagic = "httprr trace v1\n"

// parseHTTPRR reads an httprr trace: the magic line, then per exchange
// "<n> <m>\n", n bytes of raw HTTP/1.1 request and m bytes of raw response.
func parseHTTPRR(data []byte) ([]exchange, error) {
	if !bytes.HasPrefix(data, []byte(httprrMagic)) {
		return nil, fmt.Errorf("not an httprr trace: it does not start with %q", httprrMagic)
	}
	data = data[len(httprrMagic):]
	var out []exchange
	for k := 0; len(data) > 0; k++ {
		fail := func(format string, args ...any) error {
			return fmt.Errorf("exchange %d: %s", k, fmt.Sprintf(format, args...))
		}
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			return nil, fail("no length line")
		}
		n, m, ok := lengths(string(data[:nl]))
		if !ok {
			return nil, fail("bad length line %q", data[:nl])
		}
		data = data[nl+1:]
		if n > len(data) || m > len(data)-n {
			return nil, fail("truncated: %d request and %d response bytes announced, %d left", n, m, len(data))
		}
		rawReq, rawResp := data[:n], data[n:n+m]
		data = data[n+m:]

		req, reqBody, err := readRequest(rawReq)
		if err != nil {
			return nil, fail("request: %v", err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(rawResp)), req)
		if err != nil {
			return nil, fail("response: %v", err)
		}
		respBody, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, fail("response body: %v", err)
		}
		u := req.URL
		if !u.IsAbs() {
			// An origin-form request line: the host is in Host.
			c := *u
			c.Scheme, c.Host = "https", req.Host
			u = &c
		}
		out = append(out, exchange{
			method:   req.Method,
			url:      u.String(),
			reqHdr:   req.Header,
			reqBody:  reqBody,
			code:     resp.StatusCode,
			status:   resp.Status,
			respHdr:  resp.Header,
			respBody: respBody,
		})
	}
	return out, nil
}

// lengths parses "<n> <m>".
func lengths(line string) (n, m int, ok bool) {
	a, b, found := strings.Cut(line, " ")
	if !found {
		return 0, 0, false
	}
	n, err1 := strconv.Atoi(a)
	m, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || n < 0 || m < 0 {
		return 0, 0, false
	}
	return n, m, true
}

// readRequest parses a raw request and reads its body. Lines of the head
// may end in a bare "\n" (net/textproto accepts them, as HTTP/1.1 lets a
// recipient), which httprr's scrubbers write.
func readRequest(raw []byte) (*http.Request, []byte, error) {
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
	if err != nil {
		return nil, nil, err
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("body: %w", err)
	}
	return req, body, nil
}
