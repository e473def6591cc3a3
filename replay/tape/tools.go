package tape

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/recorder/cassette"
)

// toolResults are a recorded session's tool results, one queue per tool
// name in dispatch order, shared by every set of tools the replay offers
// (the session's first ones and each reload's).
type toolResults struct {
	mu     sync.Mutex
	queues map[string][]cassette.ToolResult
}

func newToolResults(s *cassette.Session) *toolResults {
	q := &toolResults{queues: map[string][]cassette.ToolResult{}}
	for _, r := range s.ToolResults {
		q.queues[r.Name] = append(q.queues[r.Name], r)
	}
	return q
}

// tools stand in for recorded tools: each call is answered with the next
// recorded result of that tool's name, and nothing runs.
func (q *toolResults) tools(recorded []cassette.Tool) []tool.Tool {
	var out []tool.Tool
	for _, t := range recorded {
		spec := provider.ToolSpec{Name: t.Name, Description: t.Description, Schema: json.RawMessage(t.Schema)}
		fn := tool.Func{ToolSpec: spec, Fn: func(context.Context, json.RawMessage) tool.Result {
			q.mu.Lock()
			defer q.mu.Unlock()
			rs := q.queues[spec.Name]
			if len(rs) == 0 {
				return tool.Failed("replay: the recording has no further result for %s", spec.Name)
			}
			q.queues[spec.Name] = rs[1:]
			return tool.Result{OK: rs[0].OK, Output: rs[0].Output}
		}}
		switch {
		case t.Source != nil:
			src := *t.Source
			src.Checks = append([]cassette.SourceCheck(nil), t.Source.Checks...)
			out = append(out, &sourceTool{gatedTool: gatedTool{fn}, src: src})
			continue
		case t.Mutating:
			out = append(out, gatedTool{fn})
			continue
		}
		out = append(out, fn)
	}
	return out
}
