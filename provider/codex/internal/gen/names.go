package main

import (
	"strings"
	"unicode"
)

// initialisms are the words written in capitals in Go names (ThreadID,
// not ThreadId), matched per word after the word is capitalised.
var initialisms = map[string]string{
	"Id": "ID", "Ids": "IDs", "Url": "URL", "Urls": "URLs", "Uri": "URI",
	"Api": "API", "Json": "JSON", "Http": "HTTP", "Https": "HTTPS",
}

// goName turns a schema name, JSON member name, enum value or method
// ("item/agentMessage/delta", "text_elements", "on-request") into an
// exported Go identifier: the parts between characters that are not
// letters or digits and the camel-case words inside them each start with a
// capital, initialisms in capitals. A name that would start with a digit
// gets a leading V; an empty one is Empty.
func goName(s string) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(s, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		for _, w := range camelWords(part) {
			w = strings.ToUpper(w[:1]) + w[1:]
			if up, ok := initialisms[w]; ok {
				w = up
			}
			b.WriteString(w)
		}
	}
	out := b.String()
	switch {
	case out == "":
		return "Empty"
	case unicode.IsDigit(rune(out[0])):
		return "V" + out
	}
	return out
}

// camelWords splits "threadIdHash" into thread, Id, Hash: a word starts at
// a capital that follows a lower-case letter or a digit.
func camelWords(s string) []string {
	var words []string
	start := 0
	rs := []rune(s)
	for i := 1; i < len(rs); i++ {
		prev := rs[i-1]
		if unicode.IsUpper(rs[i]) && (unicode.IsLower(prev) || unicode.IsDigit(prev)) {
			words = append(words, string(rs[start:i]))
			start = i
		}
	}
	return append(words, string(rs[start:]))
}
