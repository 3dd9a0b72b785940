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
// most this many bytes of an item, for versions below 36^4 and
// generations below 36 (the issue asked for about 400).
const (
	historyBudget = 350
	writeUnit     = 1024
)

// exportExt is the extension of the default task's result, the export's
// (internal/app/tasks.ExportExt, which a library may not import): the key
// of the result a typical job accepts ends with it.
const exportExt = "ndjson"

// The tenants of the measurements: one of the usual length, and one as
// long as a UUID, the longest a deployment is likely to use.
const (
	typicalTenant = "tenant-0042"
	uuidTenant    = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
)

// typicalLife is a job as the functions make it, with ids at their usual
// length (a derived job id, an attempt id of a Lambda request id and an
// SQS message id, a UUID intent) and the export's result key: created,
// claimed, renewed the given number of times and accepted. It returns the
// job after each write, creation first; with accept false it stops before
// the accept.
func typicalLife(t *testing.T, tenant string, renewals int, accept bool) []Job {
	t.Helper()
	cfg, err := Config{}.resolve()
	require.NoError(t, err)
	now := time.Date(2026, 11, 4, 9, 0, 0, 0, time.UTC)
	req := CreateRequest{IntentID: "0b6a3c0e-4f7d-4d8e-9a51-2f1c8e7d6b5a", Tenant: tenant, Spec: map[string]string{"source": "articles"}}
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
	apply(&ClaimRequest{JobID: j.ID, AttemptID: attempt, LeaseUntil: now.Add(2 * time.Minute)})
	for range renewals {
		apply(&RenewRequest{JobID: j.ID, AttemptID: attempt, Generation: j.Generation, Version: j.Version,
			LeaseUntil: now.Add(2 * time.Minute), Progress: j.Progress + 100})
	}
	if !accept {
		return life
	}
	key := fmt.Sprintf("candidates/%s/g%010d/%s.%s", j.ID, j.Generation, attempt, exportExt)
	require.NoError(t, ValidateResultKey(key, j.ID, j.Generation, attempt))
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
func units(life []Job) []int {
	out := make([]int, len(life))
	for i := range life {
		n, _ := sizes(&life[i])
		if i > 0 {
			n = max(n, first(sizes(&life[i-1])))
		}
		out[i] = (n + writeUnit - 1) / writeUnit
	}
	return out
}

func first(a, _ int) int { return a }

// TestTheHistoryCostsAtMostItsBudget measures the history at its
// largest: MaxHistory entries, the slots' names included. An entry grows
// with its version's and generation's base-36 digits (20 entries cost 297
// bytes at v42, 310 at v102, 330 from v1315 on, when every version has
// three digits), so the budget is stated for versions below 36^4 =
// 1,679,616 and generations below 36 (MaxGenerations is 3 by default),
// and checked at both limits, where it is exactly historyBudget.
func TestTheHistoryCostsAtMostItsBudget(t *testing.T) {
	t.Parallel()
	const maxVersion, maxGeneration = 36*36*36*36 - 1, 35
	for _, c := range []struct{ version, generation int64 }{
		{MaxHistory - 1, 1}, {42, 1}, {102, 2}, {1302, 2}, {1296 + MaxHistory - 1, 3},
		{46655, 3}, {maxVersion, maxGeneration},
	} {
		life := typicalLife(t, typicalTenant, 0, false)
		j := life[len(life)-1]
		at := j.History[len(j.History)-1].At
		j.History = nil
		for v := c.version - MaxHistory + 1; v <= c.version; v++ {
			j.History = append(j.History, Transition{Version: v, Status: StatusRunning, Generation: c.generation,
				At: at.Add(time.Duration(v) * time.Minute), Event: EventProgress})
		}
		j.Version = c.version
		with, without := sizes(&j)
		t.Logf("%d entries up to v%d at g%d: %d bytes", len(j.History), c.version, c.generation, with-without)
		require.LessOrEqual(t, with-without, historyBudget, "the history up to v%d at g%d", c.version, c.generation)
		if c.version == maxVersion {
			require.Equal(t, historyBudget, with-without, "the budget is the largest history's")
		}
	}
}

// maxRenewalsInAUnit is the most renewals after which a typical job's
// every write, its accept included, is still one write unit (measured by
// TestAJobsWritesCostAUnitEach): a renewal writes its version's slot, so
// the completed item grows by an entry a renewal until the history is
// full (17 renewals, 1,014 bytes), then by a byte an entry whose version
// has two base-36 digits (v36 on) until it passes 1 KB.
const maxRenewalsInAUnit = 43

// TestAJobsWritesCostAUnitEach measures a typical job's DynamoDB item
// through its life for 0 to 50 renewals: the completed item's
// size with and without its history, and the write units of the accept
// and of the whole life. Up to maxRenewalsInAUnit renewals, every write
// is one unit; one more renewal takes the accept to two, so the figure is
// the largest. A tenant as long as a UUID (25 bytes more) is measured
// too: its writes are a unit each up to 16 renewals. The figures in
// docs/ARCHITECTURE.md ("The history") are what this logs:
// go test -run 'TheHistoryCosts|WritesCostAUnit' -v ./pkg/jobs/
func TestAJobsWritesCostAUnitEach(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		tenant string
		most   int // the most renewals whose writes are a unit each
	}{
		{typicalTenant, maxRenewalsInAUnit},
		{uuidTenant, 16},
	} {
		for renewals := 0; renewals <= 50; renewals++ {
			life := typicalLife(t, c.tenant, renewals, true)
			done := life[len(life)-1]
			with, without := sizes(&done)
			u := units(life)
			t.Logf("tenant of %d bytes, %2d renewals: completed item %d bytes (%d without its history, %d entries); accept %d unit(s), life %d units in %d writes",
				len(c.tenant), renewals, with, without, len(done.History), u[len(u)-1], sum(u), len(u))
			switch {
			case renewals <= c.most:
				require.Equal(t, 1, slices.Max(u), "tenant %q, %d renewals: a unit a write", c.tenant, renewals)
			case renewals == c.most+1:
				require.Equal(t, 2, u[len(u)-1], "tenant %q, %d renewals: the accept passes 1 KB (the most renewals in a unit is %d)", c.tenant, renewals, c.most)
			}
		}
	}
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}
