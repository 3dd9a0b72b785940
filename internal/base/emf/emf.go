package emf

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"time"
)

// Unit is a CloudWatch metric unit.
type Unit string

// The units our metrics use.
const (
	Count        Unit = "Count"
	Seconds      Unit = "Seconds"
	Milliseconds Unit = "Milliseconds"
)

// Dimension is one dimension of a record: its name, and its value as a
// top-level member.
type Dimension struct {
	Name, Value string
}

// Metric is one value of a record, written as a top-level member named
// Name and declared with its Unit in the directive.
type Metric struct {
	Name  string
	Unit  Unit
	Value int64
}

// Record is one EMF document. Its dimensions form one dimension set, and
// its metrics are declared and written in the order given.
type Record struct {
	Namespace  string
	Time       time.Time
	Dimensions []Dimension
	Metrics    []Metric
}

// metadata is the _aws member. The fields are declared in the sorted
// order json.Marshal gives a map's keys, the order the records had when
// they were built from maps: alarms and tests read these bytes.
type metadata struct {
	CloudWatchMetrics []directive `json:"CloudWatchMetrics"`
	Timestamp         int64       `json:"Timestamp"`
}

type directive struct {
	Dimensions [][]string   `json:"Dimensions"`
	Metrics    []definition `json:"Metrics"`
	Namespace  string       `json:"Namespace"`
}

type definition struct {
	Name string `json:"Name"`
	Unit Unit   `json:"Unit"`
}

func (r Record) metadata() metadata {
	names := make([]string, len(r.Dimensions))
	for i, d := range r.Dimensions {
		names[i] = d.Name
	}
	defs := make([]definition, len(r.Metrics))
	for i, m := range r.Metrics {
		defs[i] = definition{Name: m.Name, Unit: m.Unit}
	}
	return metadata{
		CloudWatchMetrics: []directive{{Dimensions: [][]string{names}, Metrics: defs, Namespace: r.Namespace}},
		Timestamp:         r.Time.UnixMilli(),
	}
}

// Attrs returns the record as log attributes, in the order _aws, the
// dimensions, the metrics: logged at the top level of a JSON handler's
// record (no group), they make that record the EMF document.
func (r Record) Attrs() []slog.Attr {
	attrs := make([]slog.Attr, 0, 1+len(r.Dimensions)+len(r.Metrics))
	attrs = append(attrs, slog.Any("_aws", r.metadata()))
	for _, d := range r.Dimensions {
		attrs = append(attrs, slog.String(d.Name, d.Value))
	}
	for _, m := range r.Metrics {
		attrs = append(attrs, slog.Int64(m.Name, m.Value))
	}
	return attrs
}

// Log logs the record at level Info with msg (see Attrs).
func (r Record) Log(ctx context.Context, log *slog.Logger, msg string) {
	log.LogAttrs(ctx, slog.LevelInfo, msg, r.Attrs()...)
}

// WriteLine writes the record to w as one JSON object on a line of its
// own, its members in sorted order, in one Write.
func (r Record) WriteLine(w io.Writer) error {
	doc := make(map[string]any, 1+len(r.Dimensions)+len(r.Metrics))
	doc["_aws"] = r.metadata()
	for _, d := range r.Dimensions {
		doc[d.Name] = d.Value
	}
	for _, m := range r.Metrics {
		doc[m.Name] = m.Value
	}
	line, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("emf: encode the %s record: %w", r.Namespace, err)
	}
	if _, err := w.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("emf: write the %s record: %w", r.Namespace, err)
	}
	return nil
}
