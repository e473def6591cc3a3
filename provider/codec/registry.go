package codec

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
)

// The registry: Register, called from the vendors' init functions, and
// the lookups every consumer makes.

// ErrUnknownWire marks a request or a recording that no registered wire
// claims.
var ErrUnknownWire = errors.New("no registered vendor wire claims it")

// UnknownWireError is a request or recording no registered wire claims,
// or one that several claim alike.
type UnknownWireError struct {
	// Request names the request ("POST /v2/foo").
	Request string
	// Claimants are the wires that claimed it alike, when several did.
	Claimants []string
}

func (e *UnknownWireError) Error() string {
	if len(e.Claimants) > 1 {
		return fmt.Sprintf("%s: the wires %s all claim it, and none more surely", e.Request, strings.Join(e.Claimants, " and "))
	}
	return fmt.Sprintf("%s: %v (known: %s)", e.Request, ErrUnknownWire, strings.Join(Names(), ", "))
}

// Unwrap makes an UnknownWireError an ErrUnknownWire.
func (e *UnknownWireError) Unwrap() error { return ErrUnknownWire }

var (
	mu    sync.RWMutex
	wires = map[string]Wire{}
	// infos holds each wire's Info as it registered it (Info is a fixed
	// description), so the lookups that run on every request, header and
	// query parameter do not build it again.
	infos = map[string]Info{}
	// byName is every wire with its Info, sorted by name: kept at
	// Register so Wires and the lookups over every wire neither sort nor
	// build an Info on each call (a replay asks them for every request).
	byName []registered
)

type registered struct {
	w  Wire
	in Info
}

// Register adds a wire to the registry. It is called from the vendor
// package's init function and panics on a nil wire, a wire without a name,
// provider or stream type, or a name or (provider, api) pair already
// registered.
func Register(w Wire) {
	if w == nil {
		panic("codec: Register of a nil wire")
	}
	in := w.Info()
	if in.Name == "" || in.Provider == "" || in.StreamType == "" {
		panic(fmt.Sprintf("codec: Register of wire %q: Name, Provider and StreamType are required", in.Name))
	}
	mu.Lock()
	defer mu.Unlock()
	if _, dup := wires[in.Name]; dup {
		panic("codec: Register called twice for wire " + in.Name)
	}
	for _, o := range wires {
		oi := o.Info()
		if oi.Provider != in.Provider {
			continue
		}
		if oi.API == in.API {
			panic(fmt.Sprintf("codec: wires %s and %s both register --provider %s --api %q", oi.Name, in.Name, in.Provider, in.API))
		}
		if oi.Default && in.Default {
			panic(fmt.Sprintf("codec: wires %s and %s are both the default wire of --provider %s", oi.Name, in.Name, in.Provider))
		}
	}
	wires[in.Name] = w
	infos[in.Name] = in
	i, _ := slices.BinarySearchFunc(byName, in.Name, func(r registered, name string) int { return strings.Compare(r.in.Name, name) })
	byName = slices.Insert(slices.Clip(slices.Clone(byName)), i, registered{w: w, in: in}) // a new array: see sorted
}

// sorted is the registry by wire name. Register never writes an array
// it has handed out (it inserts into a copy), so a caller may range over
// it after the lock is released.
func sorted() []registered {
	mu.RLock()
	defer mu.RUnlock()
	return byName[:len(byName):len(byName)]
}

// Lookup is the wire registered under name.
func Lookup(name string) (Wire, bool) {
	mu.RLock()
	defer mu.RUnlock()
	w, ok := wires[name]
	return w, ok
}

// Wires returns the registered wires, by name.
func Wires() []Wire {
	rs := sorted()
	out := make([]Wire, len(rs))
	for i, r := range rs {
		out[i] = r.w
	}
	return out
}

// Names returns the registered wires' names, sorted.
func Names() []string {
	var out []string
	for _, r := range sorted() {
		out = append(out, r.in.Name)
	}
	return out
}

// Providers returns the --provider values the registered wires answer to,
// sorted, each once.
func Providers() []string {
	var out []string
	for _, r := range sorted() {
		if p := r.in.Provider; !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// ForProvider is the wire --provider name --api api selects; api "" is
// the provider's default wire (Info.Default). The error says what the
// registry holds instead.
func ForProvider(name, api string) (Wire, error) {
	var apis []string
	found := false
	for _, r := range sorted() {
		in := r.in
		if in.Provider != name {
			continue
		}
		found = true
		if in.API == api && api != "" || api == "" && in.Default {
			return r.w, nil
		}
		if in.API != "" {
			apis = append(apis, in.API)
		}
	}
	switch {
	case !found:
		return nil, fmt.Errorf("codec: no wire for --provider %q (known: %s)", name, strings.Join(Providers(), ", "))
	case apis == nil:
		return nil, fmt.Errorf("codec: --provider %s has no --api (it has one wire)", name)
	case api == "":
		return nil, fmt.Errorf("codec: --provider %s has no default wire: give --api (%s)", name, strings.Join(apis, ", "))
	}
	return nil, fmt.Errorf("codec: unknown --api %q for --provider %s (known: %s)", api, name, strings.Join(apis, ", "))
}

// APIs returns the --api values of provider name's wires, by wire name.
func APIs(name string) []string {
	var out []string
	for _, r := range sorted() {
		if in := r.in; in.Provider == name && in.API != "" {
			out = append(out, in.API)
		}
	}
	return out
}

// ForRequest is the wire a request belongs to: the one wire that claims
// it most surely (see Claim). The error wraps ErrUnknownWire when none
// claims it, or when two claim it equally.
func ForRequest(r *Request) (Wire, Claim, error) {
	best, claim := []Wire(nil), ClaimNone
	for _, rw := range sorted() {
		w := rw.w
		switch c := w.Claim(r); {
		case c > claim:
			best, claim = []Wire{w}, c
		case c == claim && c != ClaimNone:
			best = append(best, w)
		}
	}
	if len(best) == 1 {
		return best[0], claim, nil
	}
	return nil, ClaimNone, unknown(r.String(), best)
}

// ForRecording is the wire of a recorded exchange: its request's wire
// (ForRequest), or when no wire claims the request, the one wire that
// claims the recorded response body (Wire.ClaimBody). The error wraps
// ErrUnknownWire.
func ForRecording(r *Request, contentType string, body []byte) (Wire, error) {
	w, _, err := ForRequest(r)
	if err == nil {
		return w, nil
	}
	var ue *UnknownWireError
	if errors.As(err, &ue) && len(ue.Claimants) > 1 {
		return nil, err
	}
	var by []Wire
	for _, r := range sorted() {
		if r.w.ClaimBody(contentType, body) {
			by = append(by, r.w)
		}
	}
	if len(by) == 1 {
		return by[0], nil
	}
	return nil, unknown(r.String()+" (nor its recorded body)", by)
}

func unknown(req string, claimants []Wire) error {
	e := &UnknownWireError{Request: req}
	for _, w := range claimants {
		e.Claimants = append(e.Claimants, w.Info().Name)
	}
	return e
}

// CredentialEnv returns the credential variables of every registered
// wire, sorted, each once.
func CredentialEnv() []string { return collect(func(in Info) []string { return in.CredentialEnv }) }

// SecretHeaders returns the credential header names of every registered
// wire, lower-cased and sorted, each once.
func SecretHeaders() []string {
	return collect(func(in Info) []string { return lower(in.SecretHeaders) })
}

// SecretQuery returns the credential query parameter names of every
// registered wire, lower-cased and sorted, each once.
func SecretQuery() []string { return collect(func(in Info) []string { return lower(in.SecretQuery) }) }

// IsSecretHeader reports whether a registered wire names the header name
// (in any case) among its SecretHeaders.
func IsSecretHeader(name string) bool {
	return named(name, func(in Info) []string { return in.SecretHeaders })
}

// IsSecretQuery reports whether a registered wire names the query
// parameter name (in any case) among its SecretQuery.
func IsSecretQuery(name string) bool {
	return named(name, func(in Info) []string { return in.SecretQuery })
}

func named(name string, f func(Info) []string) bool {
	mu.RLock()
	defer mu.RUnlock()
	for _, in := range infos {
		for _, v := range f(in) {
			if strings.EqualFold(v, name) {
				return true
			}
		}
	}
	return false
}

// IsShownHeader reports whether a registered wire names the response
// header name among its ShownHeaders (by name, or by a prefix ending in
// "-"), in any case.
func IsShownHeader(name string) bool {
	mu.RLock()
	defer mu.RUnlock()
	l := strings.ToLower(name)
	for _, in := range infos {
		for _, v := range in.ShownHeaders {
			v = strings.ToLower(v)
			if l == v || strings.HasSuffix(v, "-") && strings.HasPrefix(l, v) {
				return true
			}
		}
	}
	return false
}

func lower(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = strings.ToLower(v)
	}
	return out
}

func collect(f func(Info) []string) []string {
	mu.RLock()
	defer mu.RUnlock()
	var out []string
	for _, in := range infos {
		for _, v := range f(in) {
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	sort.Strings(out)
	return out
}
