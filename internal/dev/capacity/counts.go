package capacity

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
)

// ErrInvalid is wrapped by every error of a bad input to the model: counts
// it cannot read or model, a template setting out of range, a bad plan
// input.
var ErrInvalid = errors.New("capacity: invalid input")

// Path names of requests.json: the paths the request tests count.
const (
	PathHappy = "happy"
)

// RequestsFile is requests.json's name, relative to this package's folder:
// the request tests regenerate it there.
const RequestsFile = "requests.json"

// GeneratedBy is the command that regenerates requests.json.
const GeneratedBy = "bin/fifoworker local run -- go test -count=1 -tags integration ./test/ -run TestRequestsPerJob -args -update-requests"

//go:embed requests.json
var requestsJSON []byte

// Requests are the counted requests per job of one path: function (or
// "operator") → operation → requests.
type Requests map[string]map[string]int

// Counts is requests.json: each path's requests, one job alone.
type Counts struct {
	GeneratedBy string              `json:"generated_by"`
	Note        string              `json:"note"`
	Paths       map[string]Requests `json:"paths"`
}

// countsNote says what requests.json holds and leaves out.
const countsNote = "Requests per job, by path, function (or the test itself, \"operator\") and operation, " +
	"one job alone, as test/requests*_integration_test.go count them. The projector's BatchGetItem " +
	"(one read of the holds per batch: 1 to n events' worth, as the stream and the relay batched them) " +
	"is left out; those tests check its range."

// Counted returns the committed counts (requests.json as built in).
func Counted() (Counts, error) { return ParseCounts(requestsJSON) }

// ParseCounts reads a requests.json, strictly.
func ParseCounts(raw []byte) (Counts, error) {
	var c Counts
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Counts{}, fmt.Errorf("%w: %s: %w", ErrInvalid, RequestsFile, err)
	}
	for path, reqs := range c.Paths {
		for fn, ops := range reqs {
			for op, n := range ops {
				if n < 1 {
					return Counts{}, fmt.Errorf("%w: %s: path %s: %s %s: %d requests, want at least 1", ErrInvalid, RequestsFile, path, fn, op, n)
				}
			}
		}
	}
	return c, nil
}

// WithPath returns c with path's requests set to r, where the functions
// that made none are left out, so that a regenerated file differs only
// where a count did.
func (c Counts) WithPath(path string, r Requests) Counts {
	out := Counts{GeneratedBy: GeneratedBy, Note: countsNote, Paths: maps.Clone(c.Paths)}
	if out.Paths == nil {
		out.Paths = map[string]Requests{}
	}
	out.Paths[path] = r.Compact()
	return out
}

// Compact returns r without the functions that made no request.
func (r Requests) Compact() Requests {
	out := Requests{}
	for fn, ops := range r {
		if len(ops) > 0 {
			out[fn] = maps.Clone(ops)
		}
	}
	return out
}

// Marshal is requests.json's text: indented, keys sorted, a final newline.
func (c Counts) Marshal() ([]byte, error) {
	raw, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("capacity: marshal counts: %w", err)
	}
	return append(raw, '\n'), nil
}
