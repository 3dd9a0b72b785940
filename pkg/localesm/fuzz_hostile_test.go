package localesm

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"
)

// FuzzBatchItemFailures: a function's partial batch response, the one
// decoder of the mappings, is read without a panic; what it refuses wraps
// ErrInvalidResponse; the identifiers it reads are non-empty and read back
// the same once encoded again. The SQS and stream decisions built on it
// follow Lambda's rules for any response: an invalid one, or one naming a
// record not in the batch, finishes nothing; none named finishes
// everything; otherwise SQS deletes exactly the messages not named and a
// stream finishes exactly the records before the lowest one named.
func FuzzBatchItemFailures(f *testing.F) {
	golden, err := os.ReadFile("../../events/sqs-commands-batch-response.json")
	require.NoError(f, err)
	for _, seed := range []string{
		string(golden), ``, `null`, ` {} `, `{"batchItemFailures":null}`, `{"batchItemFailures":[]}`,
		`{"batchItemFailures":[{"itemIdentifier":"m1"},{"itemIdentifier":"m1"}]}`,
		`{"batchItemFailures":[{"itemIdentifier":""}]}`, `{"batchItemFailures":[{"itemIdentifier":null}]}`,
		`{"batchItemFailures":[{"ItemIdentifier":"m0"}]}`, `{"batchItemFailures":[{"itemIdentifier":7}]}`,
		`{"batchItemFailures":{"itemIdentifier":"m0"}}`, `{"batchItemFailures":[null]}`, `[{"itemIdentifier":"m0"}]`,
		`{"batchItemFailures":[{"itemIdentifier":"m2"}]} trailing`, `{"batchItemFailures":[{"itemIdentifier":"x"}]}`,
	} {
		f.Add([]byte(seed), uint8(3))
	}
	f.Fuzz(func(t *testing.T, payload []byte, n uint8) {
		ids, err := parseBatchItemFailures(payload)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidResponse)
			require.Nil(t, ids)
		} else {
			items := make([]events.SQSBatchItemFailure, 0, len(ids))
			for _, id := range ids {
				require.NotEmpty(t, id)
				items = append(items, events.SQSBatchItemFailure{ItemIdentifier: id})
			}
			again, err := json.Marshal(events.SQSEventResponse{BatchItemFailures: items})
			require.NoError(t, err)
			back, err := parseBatchItemFailures(again)
			require.NoError(t, err)
			if len(ids) == 0 {
				require.Empty(t, back) // null, absent and [] all mean none
			} else {
				require.Equal(t, ids, back)
			}
		}

		// A batch of n records named m0, m1, ... (as message ids and as
		// sequence numbers).
		size := int(n%12) + 1
		var msgs []events.SQSMessage
		var recs []events.DynamoDBEventRecord
		index := map[string]int{}
		for i := range size {
			id := fmt.Sprintf("m%d", i)
			index[id] = i
			msgs = append(msgs, events.SQSMessage{MessageId: id})
			recs = append(recs, events.DynamoDBEventRecord{Change: events.DynamoDBStreamRecord{SequenceNumber: id}})
		}
		inBatch := true
		lowest := size
		for _, id := range ids {
			i, ok := index[id]
			inBatch = inBatch && ok
			if ok {
				lowest = min(lowest, i)
			}
		}
		res := Result{Status: StatusOK, Payload: payload}
		sq := decideSQS(msgs, res, true)
		st := decideStream(recs, res, true)
		switch {
		case err != nil || !inBatch:
			require.Equal(t, OutcomeInvalidResponse, sq.outcome)
			require.Empty(t, sq.delete, "an invalid response deletes nothing")
			require.ErrorIs(t, sq.err, ErrInvalidResponse)
			require.Equal(t, OutcomeInvalidResponse, st.outcome)
			require.Zero(t, st.done, "an invalid response finishes nothing")
			require.True(t, errors.Is(st.err, ErrInvalidResponse))
		case len(ids) == 0:
			require.Equal(t, OutcomeSuccess, sq.outcome)
			require.Len(t, sq.delete, size)
			require.Equal(t, OutcomeSuccess, st.outcome)
			require.Equal(t, size, st.done)
		default:
			var keep []int
			for i := range size {
				if !slices.Contains(ids, msgs[i].MessageId) {
					keep = append(keep, i)
				}
			}
			require.Equal(t, OutcomePartialFailure, sq.outcome)
			if len(keep) == 0 {
				require.Empty(t, sq.delete)
			} else {
				require.Equal(t, keep, sq.delete, "exactly the messages not named, in batch order")
			}
			require.Equal(t, OutcomePartialFailure, st.outcome)
			require.Equal(t, lowest, st.done, "the records before the lowest one named")
		}

		// A failed invocation finishes nothing, whatever its payload.
		for _, status := range []Status{StatusFunctionError, StatusTimeout} {
			failed := Result{Status: status, Payload: payload}
			require.Empty(t, decideSQS(msgs, failed, true).delete)
			require.Zero(t, decideStream(recs, failed, true).done)
		}
	})
}
