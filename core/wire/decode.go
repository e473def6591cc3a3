package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// CommandError is a command line that could not be honored as written. Name
// is the cmd value when the line named a known command (so a malformed user
// command can still be answered with done), else empty.
type CommandError struct {
	Name string
	Msg  string
}

func (e *CommandError) Error() string { return e.Msg }

// DecodeCommand parses one stdin line (without its newline) into a command.
// Fields beyond the command's definition are ignored. Any other problem is a
// *CommandError whose message names it.
func DecodeCommand(line []byte) (Command, error) {
	m, err := parseObject(line)
	if err != nil {
		if errors.Is(err, errNotObject) {
			return nil, &CommandError{Msg: "expected a JSON object, " + strings.TrimPrefix(err.Error(), errNotObject.Error()+": ")}
		}
		return nil, &CommandError{Msg: "malformed JSON: " + describeJSONError(line, err)}
	}
	rawCmd, ok := m.get("cmd")
	if !ok {
		return nil, &CommandError{Msg: `missing "cmd"`}
	}
	var name string
	if err := json.Unmarshal(rawCmd, &name); err != nil {
		return nil, &CommandError{Msg: fmt.Sprintf(`"cmd" must be a string, got %s`, jsonKind(rawCmd))}
	}
	d, ok := CommandDef(name)
	if !ok {
		return nil, &CommandError{Msg: fmt.Sprintf("unknown cmd %s (known: %s)", quoteShort(name), strings.Join(CommandNames(), ", "))}
	}
	v := reflect.New(reflect.TypeOf(d.Proto)).Elem()
	for i := range d.Fields {
		f := &d.Fields[i]
		raw, present := m.get(f.Name)
		if !present {
			if f.Optional {
				continue
			}
			return nil, &CommandError{Name: name, Msg: fmt.Sprintf("%s: missing %q", name, f.Name)}
		}
		if err := checkValue(f, raw); err != nil {
			return nil, &CommandError{Name: name, Msg: fmt.Sprintf("%s: %v", name, err)}
		}
		if err := json.Unmarshal(raw, v.Field(f.index).Addr().Interface()); err != nil {
			return nil, &CommandError{Name: name, Msg: fmt.Sprintf("%s: %q: %v", name, f.Name, err)}
		}
	}
	return v.Interface().(Command), nil
}

// CommandNames lists the known cmd values in definition order.
func CommandNames() []string {
	out := make([]string, len(Commands))
	for i, d := range Commands {
		out[i] = d.Name
	}
	return out
}

// describeJSONError turns a decoding error into a message that says where.
func describeJSONError(line []byte, err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("%v at byte %d", syn, syn.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("expected a JSON object, got %s", typ.Value)
	}
	return err.Error()
}
