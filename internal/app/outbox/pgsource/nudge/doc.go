// Package nudge tells the PostgreSQL outbox's relay (its parent package,
// internal/app/outbox/pgsource) that a writer committed rows: Aurora has no
// stream to trigger it, and logical decoding needs a long-lived consumer,
// which Lambda is not. A writer calls its Nudger after each commit; the
// deployed one is a Coalescer over Lambda, an asynchronous invocation of
// the relay function. An EventBridge schedule on the same function is the
// backstop for a nudge lost or refused.
//
// Invariants:
//   - A Coalescer sends at most one nudge per Interval from its Nudge calls;
//     every counted commit goes with a nudge, sent by a later Nudge or by
//     Flush, or, if sending fails, is counted again for the next.
//   - Nothing outlives a call: no goroutine, no timer (a Lambda writer is
//     frozen between invocations).
//   - A nudge carries no data the relay relies on: a lost, repeated or late
//     nudge changes only when the rows are published, never which or in
//     what order.
//
// It imports no client of an AWS service (Lambda's requests are signed with
// the SDK's signer), so the functions that link it gain no service's
// client.
package nudge
