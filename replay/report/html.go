package report

import (
	"bufio"
	"embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:embed templates/*.tmpl
var templateFS embed.FS

// pages are the templates, parsed the first time a report is written
// (not at every start of the binary).
var pages = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("").Funcs(template.FuncMap{
		"pct":   pct,
		"num":   func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) },
		"dur":   dur,
		"join":  strings.Join,
		"ticks": ticks,
		"seq": func(n int) []int {
			s := make([]int, n)
			for i := range s {
				s[i] = i
			}
			return s
		},
		"difflines":    diffLines,
		"verdictClass": func(v string) string { return strings.ReplaceAll(v, " ", "") },
		"turns": func(c *Cassette) int {
			n := 0
			for _, t := range c.Turns {
				if t.Number > 0 {
					n++
				}
			}
			return n
		},
		"interactions": func(c *Cassette) int {
			n := len(c.Unused)
			for _, t := range c.Turns {
				n += len(t.Interactions)
			}
			return n
		},
		"cellClass": func(vs []*Variant) string {
			if len(vs) == 0 {
				return "c-none"
			}
			for _, v := range vs {
				if !v.OK() {
					return "c-fail"
				}
			}
			return "c-ok"
		},
		"failures": func(m *SweepMatrix) []*Variant {
			var out []*Variant
			for _, r := range m.Rows {
				for _, c := range r.Cells {
					for _, v := range c {
						if !v.OK() {
							out = append(out, v)
						}
					}
				}
			}
			return out
		},
	}).ParseFS(templateFS, "templates/*.tmpl"))
})

// pct is at as a percentage of scale, for a CSS length.
func pct(at, scale float64) string {
	if scale <= 0 {
		return "0"
	}
	return strconv.FormatFloat(at*100/scale, 'f', 4, 64)
}

// dur renders milliseconds for people: 0ms, 35ms, 1.25s, 2m0s.
func dur(msec float64) string {
	switch {
	case msec < 1000:
		return strconv.FormatFloat(math.Round(msec*10)/10, 'f', -1, 64) + "ms"
	case msec < 60000:
		return strconv.FormatFloat(math.Round(msec)/1000, 'f', -1, 64) + "s"
	}
	return time.Duration(msec * float64(time.Millisecond)).Round(time.Second).String()
}

// tick is one label of a timeline's axis.
type tick struct {
	Pct   string
	Label string
}

// ticks are the axis labels of a timeline of scale milliseconds: about
// five, at round steps.
func ticks(scale float64) []tick {
	step := 1.0
	for p := 1.0; step == 1 && scale/p > 6; p *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if scale/(m*p) <= 6 {
				step = m * p
				break
			}
		}
	}
	var out []tick
	for at := 0.0; at <= scale+step/1000; at += step {
		out = append(out, tick{Pct: pct(at, scale), Label: dur(at)})
	}
	return out
}

// diffLine is one line of a unified diff, classed for its colour.
type diffLine struct {
	Class string
	Text  string
}

func diffLines(diff string) []diffLine {
	var out []diffLine
	for _, l := range strings.Split(strings.TrimRight(diff, "\n"), "\n") {
		c := ""
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
			c = "hdr"
		case strings.HasPrefix(l, "@@"):
			c = "hunk"
		case strings.HasPrefix(l, "+"):
			c = "add"
		case strings.HasPrefix(l, "-"):
			c = "del"
		}
		out = append(out, diffLine{Class: c, Text: l})
	}
	return out
}

// page is what one page's template is given.
type page struct {
	Root     string // the way back to the report's folder: "", "../"
	Title    string
	Site     *Site
	Cassette *Cassette
	Variant  *Variant
}

// Write writes the site into dir: index.html, a page per cassette, the
// sweep's matrix and a page per variant, and report.json.
func (s *Site) Write(dir string) error {
	w := func(rel, name string, p page) error {
		p.Site = s
		p.Root = strings.Repeat("../", strings.Count(rel, "/"))
		return writeFile(filepath.Join(dir, filepath.FromSlash(rel)), func(out io.Writer) error {
			return pages().ExecuteTemplate(out, name, p)
		})
	}
	if err := w("index.html", "index", page{Title: s.Title}); err != nil {
		return err
	}
	byName := map[string]*Cassette{}
	for _, c := range s.Cassettes {
		byName[c.Name] = c
		if err := w(c.Page, "cassette", page{Title: c.Name, Cassette: c}); err != nil {
			return err
		}
	}
	if sw := s.Sweep; sw != nil {
		if err := w(sw.Page, "sweep", page{Title: "sweep of " + s.Title}); err != nil {
			return err
		}
		for i, m := range sw.Cassettes {
			c := s.Cassettes[i]
			vs := []*Variant{m.Base}
			for _, r := range m.Rows {
				for _, cell := range r.Cells {
					vs = append(vs, cell...)
				}
			}
			for _, v := range vs {
				if v == nil {
					continue
				}
				if err := w(v.Page, "variant", page{Title: m.Cassette + ": " + v.Name, Cassette: c, Variant: v}); err != nil {
					return err
				}
			}
		}
	}
	return writeFile(filepath.Join(dir, "report.json"), s.WriteJSON)
}

// writeFile writes one file of the site, making its folder.
func writeFile(path string, fill func(io.Writer) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	err = fill(bw)
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("report: %s: %w", path, err)
	}
	return nil
}
