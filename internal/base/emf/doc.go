// Package emf writes CloudWatch embedded metric format (EMF) records: one
// JSON object whose top-level _aws member tells CloudWatch Logs to turn
// the object's other members into metrics, so that a function publishes
// metrics by logging, without a PutMetricData call.
//
// A Record is one document: a namespace, one dimension set (its
// dimensions' names in the directive, their values as top-level strings)
// and its metrics (names and units in the directive, values as top-level
// numbers), stamped with a time in epoch milliseconds. It is written
// either as slog attributes (Record.Log: the JSON log record of a
// slog.JSONHandler is then the EMF document) or as one JSON line of its
// own (Record.WriteLine).
//
// The shape follows AWS's "Specification: Embedded metric format"
// (CloudWatch User Guide), checked for this package: the root holds the
// _aws metadata object with CloudWatchMetrics (an array of directives,
// each with Namespace, Dimensions as an array of dimension sets, and
// Metrics with Name and Unit) and Timestamp in milliseconds since the
// epoch, and every member a directive names must be a member of the
// root. Values are integers, so a value CloudWatch would refuse (NaN, an
// infinity) cannot be written.
//
// The package imports the standard library only: the libraries
// (pkg/quarantine) may import it.
package emf
