package sweep

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// WriteTable prints the report as a table, one row per variant in the
// report's order, then a totals line. It holds nothing that varies between
// runs (no times), so two sweeps of the same cassettes print the same bytes.
func (r *Report) WriteTable(w io.Writer) error {
	cw, vw, sw := len("CASSETTE"), len("VARIANT"), len("STOP")
	for _, row := range r.Rows {
		cw = max(cw, len(row.Cassette))
		vw = max(vw, len(row.Variant))
		sw = max(sw, len(stops(row)))
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%-*s  %-*s  %-*s  %7s  %s\n", cw, "CASSETTE", vw, "VARIANT", sw, "STOP", "RETRIES", "VERDICT")
	for _, row := range r.Rows {
		fmt.Fprintf(bw, "%-*s  %-*s  %-*s  %7d  %s\n", cw, row.Cassette, vw, row.Variant, sw, stops(row), row.Retries, verdict(row))
	}
	fmt.Fprintf(bw, "%d variant(s) over %d cassette(s), %d failed\n", len(r.Rows), r.Cassettes, r.Failed)
	return bw.Flush()
}

func stops(row Row) string {
	if len(row.Stops) == 0 {
		return "-"
	}
	return strings.Join(row.Stops, ",")
}

func verdict(row Row) string {
	if row.OK() {
		return "ok"
	}
	return "FAIL " + strings.Join(row.Failures, "; ")
}

// WriteJSON prints the report as one JSON object: the rows, the number of
// cassettes and of failed rows.
func (r *Report) WriteJSON(w io.Writer) error {
	out := struct {
		Rows      []Row `json:"rows"`
		Variants  int   `json:"variants"`
		Cassettes int   `json:"cassettes"`
		Failed    int   `json:"failed"`
	}{r.Rows, len(r.Rows), r.Cassettes, r.Failed}
	if out.Rows == nil {
		out.Rows = []Row{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	return nil
}

// String is the verdict of a row in the table's words.
func (row Row) String() string {
	return row.Cassette + " " + row.Variant + " " + stops(row) + " " + strconv.Itoa(row.Retries) + " " + verdict(row)
}
