// Package jsonnum compares JSON numbers by value rather than by spelling:
// it rewrites each number of a decoded value (decoded with UseNumber) to
// one canonical spelling, exactly, with no rounding through float64. Both
// request matching (recorder/replay) and the fake app-server's line
// matching (replay/appserver) use it.
package jsonnum

import (
	"encoding/json"
	"strconv"
	"strings"
)

// All replaces every JSON number in v (parsed with UseNumber) by
// the canonical spelling of its value, so that matching compares numbers
// by value: 1, 1.0, 1e0 and 10E-1 are one number. The comparison is exact
// (no rounding through float64): 12345678901234567890 and
// 12345678901234567891 still differ.
func All(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = All(e)
		}
	case []any:
		for i, e := range x {
			x[i] = All(e)
		}
	case json.Number:
		return json.Number(Canon(string(x)))
	}
	return v
}

// Canon is the canonical spelling of the JSON number s: no leading
// or trailing zeros, no sign on zero, plain digits when the value is an
// integer of at most 21 digits or a fraction with at most 21 digits after
// the point, otherwise d.ddde±N. A string that is not a JSON number (or
// whose exponent overflows) is returned as it is.
func Canon(s string) string {
	neg := strings.HasPrefix(s, "-")
	rest := strings.TrimPrefix(s, "-")
	mant, expText := rest, ""
	if i := strings.IndexAny(rest, "eE"); i >= 0 {
		mant, expText = rest[:i], rest[i+1:]
	}
	exp := int64(0)
	if expText != "" {
		e, err := strconv.ParseInt(expText, 10, 64)
		if err != nil || e > 1<<40 || e < -(1<<40) {
			return s
		}
		exp = e
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return s
	}
	exp -= int64(len(frac))
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return "0"
	}
	trimmed := strings.TrimRight(digits, "0")
	exp += int64(len(digits) - len(trimmed))
	digits = trimmed
	sign := ""
	if neg {
		sign = "-"
	}
	n := int64(len(digits))
	switch {
	case exp >= 0 && n+exp <= 21:
		return sign + digits + strings.Repeat("0", int(exp))
	case exp < 0 && -exp <= 21:
		if point := n + exp; point > 0 {
			return sign + digits[:point] + "." + digits[point:]
		}
		return sign + "0." + strings.Repeat("0", int(-(n+exp))) + digits
	}
	// d.ddd × 10^(exp+n-1)
	out := sign + digits[:1]
	if n > 1 {
		out += "." + digits[1:]
	}
	return out + "e" + strconv.FormatInt(exp+n-1, 10)
}
