package capacity

import (
	"fmt"
	"maps"
	"slices"
)

// PerJob is what one job costs the resources the limits are on, derived
// from the happy path's counted requests by what each request writes
// (perJob's table).
type PerJob struct {
	JobsWRU   float64 // write units on the Jobs table
	TotalsWRU float64 // write units on the Totals table
	// TotalsKeyWRU are the Totals table's write units on one
	// partition-key value: all of them, since a job's cursor and the
	// total it adds to share the value (the tenant; with TotalsShards,
	// tenant#k, the shard the job id hashes to).
	TotalsKeyWRU float64
	TotalItemWRU float64 // of them, on one total item (the tenant's, or its shard's)
	ViewsWRU     float64 // write units on the Views table
	LiveWrites   float64 // writes to the Jobs table's live index
	// FinishedWrites are writes to the Jobs table's finished index (the
	// accept enters the job in it).
	FinishedWrites float64
	// ReadUnits are read units on the tables, each counted read taken as
	// one (strongly consistent, items and pages under 4 KB).
	ReadUnits   float64
	S3Puts      float64 // candidate PutObjects
	Commands    float64 // messages on the commands queue
	Events      float64 // messages on the events queue
	APIRequests float64 // API Gateway requests (the POST /jobs)
}

// A transaction writes each item twice, to prepare and to commit
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html,
// "Capacity management for transactions"); items under 1 KB take one write
// unit a write.
const transactionalWrites = 2

// costs is what one counted request of a function writes, on the happy
// path: the design's knowledge the counts alone do not carry (which table a
// request goes to, how many items a transaction holds). A request the table
// does not know is an error: a new request in requests.json makes the model
// say it has to be told what it costs. Reads count for the cost only: none
// of them is near a limit (the holds read is one per batch, the page the
// task's own table).
var costs = map[string]map[string]func(p *PerJob, n float64){
	"intake": {
		// The job and its intent marker, in one transaction; the job
		// enters the live index.
		"TransactWriteItems": func(p *PerJob, n float64) {
			p.JobsWRU += n * 2 * transactionalWrites
			p.LiveWrites += n
			p.APIRequests += n // one POST /jobs made it
		},
	},
	"worker": {
		// The claim and the accept, one item each, in pairs: the claim
		// moves the job's live entry (its sort key, updated_at, changes:
		// a delete and a put), the accept removes it
		// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.Writes).
		"UpdateItem": func(p *PerJob, n float64) {
			p.JobsWRU += n
			p.LiveWrites += n / 2 * (2 + 1)
			p.FinishedWrites += n / 2
		},
		"PutObject":    func(p *PerJob, n float64) { p.S3Puts += n },
		"BatchGetItem": func(p *PerJob, n float64) { p.ReadUnits += n }, // the holds, one read per batch
		"Query":        func(p *PerJob, n float64) { p.ReadUnits += n }, // the task's page of articles
	},
	"relay": {
		// One message per job per call when the job is alone: every
		// message the job's transitions make.
		"SendMessageBatch": func(p *PerJob, n float64) { p.Commands += n },
	},
	"projector": {
		// The view, once per event: the events the projector handles.
		"UpdateItem": func(p *PerJob, n float64) {
			p.ViewsWRU += n
			p.Events += n
		},
		// Per event that adds to the totals, the job's cursor and the
		// total item in one transaction, on one partition-key value.
		"TransactWriteItems": func(p *PerJob, n float64) {
			p.TotalsWRU += n * 2 * transactionalWrites
			p.TotalsKeyWRU += n * 2 * transactionalWrites
			p.TotalItemWRU += n * transactionalWrites
		},
		"BatchGetItem": func(p *PerJob, n float64) { p.ReadUnits += n },
		// The Totals table's shard-count record (projection's
		// CheckShards, TotalsShards): one conditional PutItem per process
		// before its first write, which a job alone on a fresh pipeline
		// pays and a busy process spreads over all its jobs: nothing per
		// job. A PutItem per job would need an entry of its own.
		"PutItem": func(*PerJob, float64) {},
	},
}

// perJob derives what one job costs from the happy path's requests.
func perJob(happy Requests) (PerJob, error) {
	var p PerJob
	for _, fn := range slices.Sorted(maps.Keys(happy)) {
		for _, op := range slices.Sorted(maps.Keys(happy[fn])) {
			cost, ok := costs[fn][op]
			if !ok {
				return PerJob{}, fmt.Errorf("%w: %s %s on the happy path: the model does not know what it costs (capacity.costs)", ErrInvalid, fn, op)
			}
			cost(&p, float64(happy[fn][op]))
		}
	}
	// Every message is a command or an event; the projector handles
	// each event once.
	p.Commands -= p.Events
	if p.Commands < 1 || p.Events < 1 || p.APIRequests < 1 || p.TotalItemWRU <= 0 {
		return PerJob{}, fmt.Errorf("%w: the happy path's requests give %v commands, %v events, %v job creations and %v totals write units per job: want some of each",
			ErrInvalid, p.Commands, p.Events, p.APIRequests, p.TotalsWRU)
	}
	return p, nil
}
