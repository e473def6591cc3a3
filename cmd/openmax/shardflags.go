package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/openmax/openmax/internal/shard"
)

// shardFlags are --shard, --shards and --timings, the same on every
// command that splits its run (replay DIR, cassette sweep).
type shardFlags struct {
	spec    *string
	shards  *int
	timings *string
}

func addShardFlags(fs *flag.FlagSet) *shardFlags {
	return &shardFlags{
		spec:    fs.String("shard", "", shard.FlagUsage),
		shards:  fs.Int("shards", 0, shard.ShardsUsage),
		timings: fs.String("timings", "", shard.TimingsUsage),
	}
}

// set reports whether a flag asked for a shard (so a single-cassette
// command can refuse them).
func (s *shardFlags) set() bool {
	return *s.spec != "" || *s.shards != 0 || *s.timings != ""
}

// resolveFor is resolve for command c: on an error it reports it and
// returns ok false with the exit code (2 for a usage error, 1 otherwise).
func (s *shardFlags) resolveFor(c command, e env, stderr io.Writer) (se shard.Env, tm shard.Timings, code int, ok bool) {
	se, tm, usage, err := s.resolve(e)
	switch {
	case err == nil:
		return se, tm, 0, true
	case usage:
		return se, nil, c.usageError(stderr, "%v", err), false
	}
	fmt.Fprintf(stderr, "%s: %v\n", c.name, err)
	return se, nil, 1, false
}

// resolve is the shard the flags and the environment choose, and the
// timings to balance it by. A malformed flag or variable is a usage error
// (the bool); a timings file that does not read is a failure.
func (s *shardFlags) resolve(e env) (shard.Env, shard.Timings, bool, error) {
	se, err := shard.Detect(*s.spec, *s.shards, e.env)
	if err != nil {
		return se, nil, true, err
	}
	tm, err := shard.ReadTimingsFile(*s.timings)
	if err != nil {
		return se, nil, false, fmt.Errorf("--timings: %w", err)
	}
	if err := se.Touch(); err != nil {
		return se, nil, false, err
	}
	return se, tm, false, nil
}

// describe writes which part of the run this is, when it is a part.
func describeShard(w io.Writer, name string, se shard.Env, picked, of int, what string) {
	if d := se.Describe(picked, of); d != "" {
		fmt.Fprintf(w, "%s: %s %s\n", name, d, what)
	}
}
