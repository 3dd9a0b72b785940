package localesm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Outcome is what a mapping made of one invocation.
type Outcome int

const (
	// OutcomeSuccess means every record of the batch is done.
	OutcomeSuccess Outcome = iota
	// OutcomePartialFailure means the function reported some records as
	// failed in a valid partial batch response (ReportBatchItemFailures).
	OutcomePartialFailure
	// OutcomeFunctionError means the function returned an error, panicked or
	// crashed. The whole batch failed.
	OutcomeFunctionError
	// OutcomeTimeout means the function did not return before its
	// deadline. The whole batch failed.
	OutcomeTimeout
	// OutcomeInvalidResponse means that, with ReportBatchItemFailures, the
	// response was malformed or named a record that is not in the batch. The
	// whole batch failed.
	OutcomeInvalidResponse
	// OutcomeInvokeError means the function could not be invoked (or the
	// mapping stopped while it ran); nothing is known of its outcome, so the
	// batch is treated as failed.
	OutcomeInvokeError
	// OutcomeWithheld (SQS only): every message received belonged to a
	// message group already in flight; nothing was invoked.
	OutcomeWithheld
	// OutcomeTooLarge (Kafka only): the record alone makes an event over
	// MaxRequestSize; it was not invoked, and was given up to the on-failure
	// destination or, without one, holds its partition.
	OutcomeTooLarge
	// OutcomeExpired (Kafka only): the records were older than
	// MaximumRecordAge and were given up without an invocation.
	OutcomeExpired
)

func (o Outcome) String() string {
	switch o {
	case OutcomeSuccess:
		return "success"
	case OutcomePartialFailure:
		return "partial_failure"
	case OutcomeFunctionError:
		return "function_error"
	case OutcomeTimeout:
		return "timeout"
	case OutcomeInvalidResponse:
		return "invalid_response"
	case OutcomeInvokeError:
		return "invoke_error"
	case OutcomeWithheld:
		return "withheld"
	case OutcomeTooLarge:
		return "too_large"
	case OutcomeExpired:
		return "expired"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// ErrInvalidResponse is wrapped by the error recorded for a partial batch
// response that fails the whole batch: not a JSON object, batchItemFailures
// not a list, an item without a non-empty string itemIdentifier, or an
// itemIdentifier that names no record of the batch.
var ErrInvalidResponse = errors.New("invalid partial batch response")

// parseBatchItemFailures reads the item identifiers of a partial batch
// response, as Lambda reads them for SQS and for streams: each one a
// non-empty string. The rules for the response around them are
// batchItemIdentifiers'.
func parseBatchItemFailures(payload []byte) ([]string, error) {
	raws, err := batchItemIdentifiers(payload)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(raws))
	for i, rawID := range raws {
		var id *string
		if err := json.Unmarshal(rawID, &id); err != nil {
			return nil, fmt.Errorf("%w: batchItemFailures[%d].itemIdentifier is not a string", ErrInvalidResponse, i)
		}
		if id == nil || *id == "" {
			return nil, fmt.Errorf("%w: batchItemFailures[%d].itemIdentifier is null or empty", ErrInvalidResponse, i)
		}
		ids = append(ids, *id)
	}
	return ids, nil
}

// batchItemIdentifiers returns the raw itemIdentifier of each item of a
// partial batch response, whatever its source's identifier looks like. An
// empty or null response, a response without batchItemFailures, and a null
// or empty list all mean full success (no identifiers). Keys are matched
// exactly: Lambda treats "an itemIdentifier with a bad key name" as a
// failure, and encoding/json's case-insensitive matching would accept one.
func batchItemIdentifiers(payload []byte) ([]json.RawMessage, error) {
	trimmed := bytes.TrimSpace(payload)
	if len(trimmed) == 0 || isNull(trimmed) {
		return nil, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &top); err != nil {
		return nil, fmt.Errorf("%w: not a JSON object: %w", ErrInvalidResponse, err)
	}
	raw, ok := top["batchItemFailures"]
	if !ok || isNull(raw) {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("%w: batchItemFailures is not a list", ErrInvalidResponse)
	}
	ids := make([]json.RawMessage, 0, len(items))
	for i, it := range items {
		var item map[string]json.RawMessage
		if err := json.Unmarshal(it, &item); err != nil || item == nil {
			return nil, fmt.Errorf("%w: batchItemFailures[%d] is not an object", ErrInvalidResponse, i)
		}
		rawID, ok := item["itemIdentifier"]
		if !ok {
			return nil, fmt.Errorf("%w: batchItemFailures[%d] has no itemIdentifier", ErrInvalidResponse, i)
		}
		ids = append(ids, rawID)
	}
	return ids, nil
}

func isNull(b []byte) bool { return bytes.Equal(bytes.TrimSpace(b), []byte("null")) }

// failedOutcome maps a failed invocation's status to its outcome.
func failedOutcome(s Status) (Outcome, bool) {
	switch s {
	case StatusFunctionError:
		return OutcomeFunctionError, true
	case StatusTimeout:
		return OutcomeTimeout, true
	}
	return OutcomeSuccess, false
}
