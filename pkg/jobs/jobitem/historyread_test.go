package jobitem_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs/jobitem"
)

// runningImage is the stream image of a running job at version v whose
// history slots hold an entry for each of versions (a renewal's, at
// second v after at).
func runningImage(v int64, versions ...int64) map[string]events.DynamoDBAttributeValue {
	s, n := events.NewStringAttribute, events.NewNumberAttribute
	image := map[string]events.DynamoDBAttributeValue{
		"job_id": s("job-42"), "tenant": s("t-1"), "intent_id": s("export-intent-7"), "status": s("running"),
		"generation": n("1"), "version": n(strconv.FormatInt(v, 10)),
		"created_at": n("1793782800000"), "updated_at": n("1793782800000"),
	}
	for _, x := range versions {
		image[jobitem.HistorySlot(x)] = s(entry(x))
	}
	return image
}

func entry(v int64) string {
	return jobitem.EncodeTransition(jobitem.Transition{Version: v, Status: jobitem.StatusRunning, Generation: 1,
		At: time.UnixMilli(1793782800000).Add(time.Duration(v) * time.Second), Event: jobitem.EventProgress})
}

func versionsOf(h []jobitem.Transition) []int64 {
	out := make([]int64, len(h))
	for i, t := range h {
		out[i] = t.Version
	}
	return out
}

func span(from, to int64) []int64 {
	var out []int64
	for v := from; v <= to; v++ {
		out = append(out, v)
	}
	return out
}

// A reader keeps only the entries of the item's last MaxHistory versions:
// a write by a binary without the history (a rolling deploy, a rollback,
// an old CLI) leaves the entry of MaxHistory versions before in its slot,
// and an entry above the item's version was not written by its history.
// Both bounds are checked at their value: version-19 is read, version-20
// is not; the item's version is read, the one after is not.
func TestTheHistoryReadsOnlyTheItemsLastVersions(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		version int64
		slots   []int64
		want    []int64
	}{
		"a whole history":                        {27, span(8, 27), span(8, 27)},
		"v27 written without its entry: h7 = v7": {27, append(span(7, 7), span(8, 26)...), span(8, 26)},
		"v26 written without its entry: h6 = v6": {27, append([]int64{6, 27}, span(8, 25)...), append(span(8, 25), 27)},
		"an entry of v28 on a v27 item":          {27, append(span(9, 27), 28), span(9, 27)},
		"an entry far above":                     {27, append(span(9, 27), 48), span(9, 27)},
		"a young job":                            {3, span(0, 3), span(0, 3)},
		"a young job with an entry above":        {3, []int64{0, 1, 2, 3, 4}, span(0, 3)},
	} {
		j, err := jobitem.FromStreamImage(runningImage(c.version, c.slots...))
		require.NoError(t, err, name)
		require.Equal(t, c.want, versionsOf(j.History), name)
	}
}

// The history is diagnostic: a slot that does not hold an entry of its
// version (another type, a malformed string, another version's entry) is
// skipped and the rest of the history read, where an attribute of the
// job's own state is an error (TestFromItemGolden).
func TestAMalformedSlotIsSkipped(t *testing.T) {
	t.Parallel()
	s, n := events.NewStringAttribute, events.NewNumberAttribute
	for name, bad := range map[string]events.DynamoDBAttributeValue{
		"a number":               n("3"),
		"a map":                  events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"v": s(entry(3))}),
		"too short":              s("smw1w1b9c3"),
		"an unknown kind letter": s("z" + entry(3)[1:]),
		"no generation":          s(entry(3)[:len(entry(3))-2]),
		"another slot's entry":   s(entry(4)),
		"a negative version":     s("smw1w1b9c-3.1"),
	} {
		image := runningImage(5, span(0, 5)...)
		image["h3"] = bad
		j, err := jobitem.FromStreamImage(image)
		require.NoError(t, err, name)
		require.Equal(t, []int64{0, 1, 2, 4, 5}, versionsOf(j.History), name)
		require.Equal(t, int64(5), j.Version, name)
	}
}

// So in a PostgreSQL row: a slot of its history column that is not an
// entry is skipped, and a history column that is not an object is no
// history.
func TestAMalformedPostgresSlotIsSkipped(t *testing.T) {
	t.Parallel()
	row := func(history string) []byte {
		return []byte(`{"job_id": "job-42", "tenant": "t-1", "intent_id": "i-1", "status": "running", "generation": 1,` +
			` "version": 2, "created_at": 1793782800000, "updated_at": 1793782800000, "history": ` + history + `}`)
	}
	for name, c := range map[string]struct {
		history string
		want    []int64
	}{
		"whole":                {`{"h0": "` + entry(0) + `", "h1": "` + entry(1) + `", "h2": "` + entry(2) + `"}`, []int64{0, 1, 2}},
		"a number in h1":       {`{"h0": "` + entry(0) + `", "h1": 1, "h2": "` + entry(2) + `"}`, []int64{0, 2}},
		"another slot's in h1": {`{"h0": "` + entry(0) + `", "h1": "` + entry(2) + `", "h2": "` + entry(2) + `"}`, []int64{0, 2}},
		"not an object":        {`"h0"`, []int64{}},
	} {
		j, err := jobitem.FromPostgresImage(row(c.history))
		require.NoError(t, err, name)
		require.Equal(t, c.want, versionsOf(j.History), name)
	}
}
