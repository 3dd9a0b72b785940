package testenv

import (
	"encoding/json"
	"strings"
	"testing"
)

// EMFRecords returns the lines of a JSON log that are embedded metric
// format records (a top-level _aws member), without the log's own fields
// (time, level, msg), each re-encoded with its members in sorted order:
// what a test compares with the record it expects, whatever the logger's
// order.
func EMFRecords(t testing.TB, logs string) []string {
	t.Helper()
	var out []string
	for line := range strings.Lines(logs) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("testenv: a log line is not JSON: %v: %q", err, line)
		}
		if _, ok := rec["_aws"]; !ok {
			continue
		}
		delete(rec, "time")
		delete(rec, "level")
		delete(rec, "msg")
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatalf("testenv: encode a record: %v", err)
		}
		out = append(out, string(b))
	}
	return out
}
