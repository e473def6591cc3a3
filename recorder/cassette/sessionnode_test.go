package cassette

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"testing"

	"github.com/openmax/openmax/internal/rapidchecks"
	"gopkg.in/yaml.v3"
	"pgregory.net/rapid"
)

// sameNodes compares the node trees as decoding sees them: kind, resolved
// tag, value, whether a scalar is a string by its style, and children.
func sameNodes(a, b *yaml.Node, path string) error {
	stringy := func(n *yaml.Node) bool {
		return n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0
	}
	switch {
	case a.Kind != b.Kind:
		return fmt.Errorf("%s: kind %v, yaml.v3 %v", path, a.Kind, b.Kind)
	case a.Tag != b.Tag:
		return fmt.Errorf("%s: tag %q, yaml.v3 %q", path, a.Tag, b.Tag)
	case a.Value != b.Value:
		return fmt.Errorf("%s: value %q, yaml.v3 %q", path, a.Value, b.Value)
	case a.Kind == yaml.ScalarNode && stringy(a) != stringy(b):
		return fmt.Errorf("%s: string by style %v, yaml.v3 %v", path, stringy(a), stringy(b))
	case len(a.Content) != len(b.Content):
		return fmt.Errorf("%s: %d children, yaml.v3 %d", path, len(a.Content), len(b.Content))
	}
	for i := range a.Content {
		if err := sameNodes(a.Content[i], b.Content[i], fmt.Sprintf("%s/%d", path, i)); err != nil {
			return err
		}
	}
	return nil
}

// checkSessionDoc fails unless the fast reader's tree of doc (a session
// member alone) is yaml.v3's, and decodes to the same session; ok is false
// when the fast reader leaves doc to yaml.v3.
func checkSessionDoc(t testing.TB, doc []byte) (ok bool) {
	t.Helper()
	got, err := sessionNode(doc)
	if err != nil {
		return false
	}
	var want yaml.Node
	if err := yaml.Unmarshal(doc, &want); err != nil {
		t.Fatalf("yaml.v3 refuses what the fast reader read: %v\n%s", err, doc)
	}
	if err := sameNodes(got, &want, ""); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	type wrap struct {
		Session *Session `yaml:"openmax"`
	}
	var a, b wrap
	aerr, berr := got.Decode(&a), want.Decode(&b)
	if fmt.Sprint(aerr) != fmt.Sprint(berr) || !reflect.DeepEqual(a, b) {
		t.Fatalf("decoded otherwise: %v / yaml.v3 %v\n%s", aerr, berr, doc)
	}
	return true
}

// TestSessionNodeReadsTheLibrary: every session of the library is read by
// the fast reader into yaml.v3's tree.
func TestSessionNodeReadsTheLibrary(t *testing.T) {
	paths := libraryPaths(t)
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		i := bytes.Index(data, []byte("\nopenmax:"))
		if i < 0 {
			t.Fatalf("%s: no session", path)
		}
		if !checkSessionDoc(t, data[i+1:]) {
			t.Errorf("%s: the fast reader left its session to yaml.v3", path)
		}
	}
}

// TestRapidSessionNodeAgreesWithYAML: for any session the recorder writes,
// whatever its fields hold, the fast reader builds yaml.v3's tree or
// leaves it to yaml.v3; and it takes most of them.
func TestRapidSessionNodeAgreesWithYAML(t *testing.T) {
	rapidchecks.Use(t, rapidchecks.Pick(150, 30))
	taken, all := 0, 0
	rapid.Check(t, func(rt *rapid.T) {
		s := rapid.Make[Session]().Draw(rt, "session")
		if rapid.IntRange(0, 3).Draw(rt, "tame") > 0 {
			// Text as sessions hold it, and text that looks like YAML:
			// most strings rapid makes up are written with escapes the
			// fast reader leaves to yaml.v3.
			tame(rt, reflect.ValueOf(&s).Elem())
		}
		f := New()
		f.Session = &s
		data, err := f.Marshal() // as the recorder writes it
		if err != nil {
			rt.Skip(err)
		}
		i := bytes.Index(data, []byte("\nopenmax:"))
		if i < 0 {
			rt.Fatalf("no session in\n%s", data)
		}
		all++
		if checkSessionDoc(t, data[i+1:]) {
			taken++
		}
	})
	t.Logf("the fast reader took %d of %d sessions", taken, all)
	if taken < all/4 {
		t.Fatalf("the fast reader took only %d of %d sessions", taken, all)
	}
}

// tame replaces every string in v with text drawn from pieces sessions
// hold, plain and YAML-like.
func tame(rt *rapid.T, v reflect.Value) {
	piece := rapid.SampledFrom([]string{"plain", " ", "one\ntwo\n", "- ", ": ", "'", "\"", "#", "true", "123", "0x1F", "1.5", "null", "~", "2m0s", "{}", "[]", "|", ">", "ü", "{\"cmd\":\"user\"}"})
	switch v.Kind() {
	case reflect.String:
		var b bytes.Buffer
		for _, p := range rapid.SliceOfN(piece, 0, 6).Draw(rt, "text") {
			b.WriteString(p)
		}
		v.SetString(b.String())
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			tame(rt, v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				tame(rt, v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			tame(rt, v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		m := reflect.MakeMap(v.Type())
		for _, k := range v.MapKeys() {
			nk := reflect.New(v.Type().Key()).Elem()
			nk.Set(k)
			tame(rt, nk)
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			tame(rt, e)
			m.SetMapIndex(nk, e)
		}
		v.Set(m)
	}
}
