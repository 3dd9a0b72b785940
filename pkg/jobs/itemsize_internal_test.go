package jobs

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs/jobitem"
)

// itemSize is an item's size by DynamoDB's rule (the Developer Guide's
// "DynamoDB item sizes and formats"): per attribute, its name's UTF-8
// bytes and its value's size. A string is its UTF-8 bytes; a number one
// byte per two significant digits, plus one; a map 3 bytes, plus per
// element one byte, its name and its value. (The rule calls the number's
// size approximate; it is what a write unit is counted on.)
func itemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		digits := strings.Trim(strings.TrimLeft(v.Value, "-"), "0")
		return (len(digits)+1)/2 + 1
	case *types.AttributeValueMemberM:
		n := 3
		for name, e := range v.Value {
			n += 1 + len(name) + valueSize(e)
		}
		return n
	}
	panic(fmt.Sprintf("itemSize: no rule for %T", v))
}

// The history's budget: MaxHistory entries and their slots' names cost at
// most this many bytes of an item (the issue asked for about 400).
const (
	historyBudget = 300
	writeUnit     = 1024
)

// typicalLife is a job as the functions make it, with ids at their usual
// length (a derived job id, an attempt id of a Lambda request id and an
// SQS message id, a UUID intent), through n transitions after creation:
// a claim, n-2 renewals, an accept. It returns the job after each write,
// creation first.
func typicalLife(t *testing.T, n int) []Job {
	t.Helper()
	cfg, err := Config{}.resolve()
	require.NoError(t, err)
	now := time.Date(2026, 11, 4, 9, 0, 0, 0, time.UTC)
	req := CreateRequest{IntentID: "0b6a3c0e-4f7d-4d8e-9a51-2f1c8e7d6b5a", Tenant: "tenant-0042", Spec: map[string]string{"source": "articles"}}
	j, _ := newJob(&req, nil, now, &cfg)
	life := []Job{normalize(j)}
	attempt := "6f1c2a7e-93b4-4d51-8c0e-5a2b9d3f7e14_" + "a3e1f0c2-7b94-4c6d-8e25-1f0a9b3c7d52"
	apply := func(r request) {
		t.Helper()
		now = now.Add(30 * time.Second)
		st, err := decide(r, &j, now, &cfg)
		require.NoError(t, err)
		j = normalize(st.patch.apply(j))
		life = append(life, j)
	}
	if n == 0 {
		return life
	}
	apply(&ClaimRequest{JobID: j.ID, AttemptID: attempt, LeaseUntil: now.Add(2 * time.Minute)})
	for range n - 2 {
		apply(&RenewRequest{JobID: j.ID, AttemptID: attempt, Generation: j.Generation, Version: j.Version,
			LeaseUntil: now.Add(2 * time.Minute), Progress: j.Progress + 100})
	}
	key := fmt.Sprintf("candidates/%s/g%010d/%s.json", j.ID, j.Generation, attempt)
	apply(&AcceptRequest{JobID: j.ID, AttemptID: attempt, Generation: j.Generation, Version: j.Version,
		Result: Result{Key: key, SHA256: strings.Repeat("5e", 32), Size: 48213}, Progress: j.Progress})
	return life
}

// sizes are an item's size with its history and without it.
func sizes(j *Job) (with, without int) {
	item := jobItem(j, LiveShards)
	with = itemSize(item)
	for slot := range jobitem.EncodeHistory(j.History) {
		delete(item, slot)
	}
	return with, itemSize(item)
}

// units are the write units of each write of life: a put counts the item
// it writes, an update the larger of the item before and after it
// (the Developer Guide, "Write request units"), a unit per KB begun.
func units(life []Job, history bool) []int {
	size := func(j *Job) int {
		with, without := sizes(j)
		if history {
			return with
		}
		return without
	}
	out := make([]int, len(life))
	for i := range life {
		n := size(&life[i])
		if i > 0 {
			n = max(n, size(&life[i-1]))
		}
		out[i] = (n + writeUnit - 1) / writeUnit
	}
	return out
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// TestTheHistoryCostsAtMostItsBudget measures the DynamoDB item of a
// typical job, with and without its history, at creation, after a normal
// life (claim, renewal, accept) and with a full history (MaxHistory
// entries), and the write units of each write. The history stays within
// historyBudget (its share of it for fewer entries), and a normal life's
// writes cost what they did: a unit each. (A completed item of these
// ids is 965 bytes without any history: a longer history, or longer ids,
// take the accept, and the writes after the item passes 1 KB, to two.)
// docs/ARCHITECTURE.md ("The job item") gives the figures this logs:
// go test -run TheHistoryCosts -v ./pkg/jobs/
func TestTheHistoryCostsAtMostItsBudget(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name        string
		transitions int
		entries     int
		sameUnits   bool
	}{
		{"at creation", 0, 1, true},
		{"after a normal life", 3, 4, true},
		{"with a full history", MaxHistory - 1, MaxHistory, false},
		{"past it", MaxHistory + 5, MaxHistory, false},
	} {
		life := typicalLife(t, c.transitions)
		j := life[len(life)-1]
		require.Len(t, j.History, c.entries, c.name)
		with, without := sizes(&j)
		history := with - without
		withUnits, withoutUnits := units(life, true), units(life, false)
		t.Logf("%s (v%d, %s): %d bytes without the history, %d with it (the history: %d bytes, %d entries); "+
			"write units of the life's %d writes: %d without, %d with (%v)",
			c.name, j.Version, j.Status, without, with, history, len(j.History), len(life), sum(withoutUnits), sum(withUnits), withUnits)
		require.LessOrEqual(t, history, historyBudget*len(j.History)/MaxHistory, "%s: the history's share of the budget", c.name)
		if c.sameUnits {
			require.Equal(t, withoutUnits, withUnits, "%s: the history costs no write unit", c.name)
			require.Equal(t, 1, slices.Max(withUnits), "%s: a unit a write", c.name)
		}
	}
}
