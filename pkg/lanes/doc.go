// Package lanes is the per-key lane engine of fifoworker's batch
// processors: a batch's items split into lanes, one per key, each lane run
// strictly in order and the lanes in parallel under a concurrency bound.
// It knows no transport: pkg/fifo runs an SQS FIFO batch's message groups
// on it, and a Kafka processor can run a partition's keys on it the same
// way. What an item is, what its failure means and what the caller answers
// stay with the caller.
//
// Batch is what both processors run their items with: it runs an item's
// handler, decides its outcome (dead-lettering or marking for the
// quarantine a permanent failure, containing a panic anywhere), logs one
// line per item and one per batch, and calls the metrics hook, skipped
// once the response reserve is spent. Held is the quarantine's side of a
// lane whose key is held: parking, holding again, recording a redriven
// copy, each call's items settled and logged. The processor says what its
// items are (Items), and keeps its own lanes under a hold, its response
// and its types; Outcome, PanicError and PermanentError are shared under
// each processor's names. Package lanestest holds the processors' test
// helpers.
//
// # Guarantees
//
//   - Order within a key: Plan puts the items of one key in one lane, in
//     index order; Run.Lanes runs each lane on one goroutine, so a lane's
//     items run one after another in that order. An item without a key is
//     a lane of its own.
//   - Parallel across keys, bounded: at most Config.Concurrency lanes run
//     at once (0: every lane); with fewer slots than lanes, the longest
//     lanes are taken first.
//   - Deadline-aware: Run.Context expires Config.ResponseReserve before
//     the deadline of the context the run started under, so that the
//     caller can still answer in time; Run.TimeToStart says no once less
//     than Config.DeadlineMargin is left (or that context is done), so
//     that an item does not start when it cannot finish.
//   - Stop on the first failure: Run.Stop and Run.Stopped let a lane tell
//     every other lane that no further item should start.
//   - Panic-safe: Contain returns a panic as a *PanicError instead of
//     letting it unwind; Guard also absorbs a runtime.Goexit, on a goroutine
//     of its own. If a lane ends its goroutine with runtime.Goexit, Run.Lanes
//     replaces that goroutine, which takes the remaining lanes; the lane
//     that exited is not resumed.
//   - No goroutine outlives the call: Run.Lanes returns only after every
//     lane's goroutine, replacements included, has returned, and Guard
//     only after its goroutine has. Run.Lanes starts its goroutines one at
//     a time, each as the one before it takes a lane, so that lanes that
//     wait run in parallel and lanes that do not need no goroutine each.
package lanes
