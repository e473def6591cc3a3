package main

import (
	"flag"
	"strings"

	"github.com/openmax/openmax/recorder/replay"
)

// harnessIgnore is dropped from every body on replay whatever the flags
// say: the tool list is the harness's, not the conversation's, so a
// cassette survives a change of tools.
var harnessIgnore = []string{"tools"}

// matchFlags are the request-matching flags that `openmax replay` and
// `openmax fake-provider --cassette` share, so a request that matches
// under one matches under the other.
type matchFlags struct {
	cfg replay.MatchConfig
}

// addMatchFlags registers --ignore (repeatable) and --no-default-ignores
// on fs.
func addMatchFlags(fs *flag.FlagSet) *matchFlags {
	m := &matchFlags{}
	fs.Var((*pathList)(&m.cfg.Ignore), "ignore",
		"a request-body field to ignore when matching, as a dotted path (metadata.tag, messages.*.cache_control); repeatable")
	fs.BoolVar(&m.cfg.NoDefaults, "no-default-ignores", false,
		"match strictly: drop neither the built-in volatile fields of known clients (metadata.user_id, prompt_cache_key, ...) nor normalise paths, UUIDs and dates in strings")
	return m
}

// apply sets o's matching fields: the harness's own ignores, then the
// flags'. A nil m applies the defaults alone.
func (m *matchFlags) apply(o *replay.Options) {
	o.Ignore = append(o.Ignore, harnessIgnore...)
	if m != nil {
		m.cfg.Apply(o)
	}
}

// pathList is a repeatable flag collecting its values.
type pathList []string

func (p *pathList) String() string { return strings.Join(*p, ",") }

func (p *pathList) Set(v string) error {
	*p = append(*p, v)
	return nil
}
