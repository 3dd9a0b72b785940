// Package faultproxy is an HTTP proxy on 127.0.0.1 that stands between AWS
// SDK clients and one service endpoint (an emulator, or anything else that
// speaks the service's protocol) and injects the faults a real network and
// a real service produce, by seeded random choice at configurable rates per
// operation:
//
//   - Latency: the request waits a random time in [MinLatency, MaxLatency]
//     before it is forwarded. It can come on top of any other fault.
//   - ServerError: a 500 or a 503 in the service's own error shape, without
//     forwarding (the request is not applied).
//   - Throttle: the service's throttling error, without forwarding:
//     DynamoDB's ProvisionedThroughputExceededException or
//     ThrottlingException (400), SQS's RequestThrottled (403) or
//     ThrottlingException (400) with its X-Amzn-Query-Error header, S3's
//     SlowDown (503).
//   - Reset: the connection is reset (hijacked, SO_LINGER 0, closed) before
//     anything is forwarded: not applied, no answer.
//   - Drop: the request is forwarded and applied, its answer is read, and
//     then the connection is reset instead of answering: applied, but the
//     caller cannot know.
//
// The error kinds exclude each other: one draw per request picks at most one
// of ServerError, Throttle, Reset and Drop; a second draw decides Latency.
//
// What the SDK makes of each (aws-sdk-go-v2's retry package, which the unit
// tests hold the proxy to with real clients): 500 and 503 are retryable by
// status; the throttling codes are in retry.DefaultThrottleErrorCodes, so
// they are retried, at the cheaper throttling token cost and with a 1 s base
// backoff; a reset, before or after the request was applied, reaches the SDK
// as a send error (smithy-go's RequestSendError, a ConnectionError), which
// the standard retryer retries for every operation whether or not it is
// idempotent. So a Drop is exactly the case an idempotent write must handle:
// its retry finds its own earlier write already there.
//
// Operations are named by the X-Amz-Target header for the JSON protocols
// ("DynamoDB_20120810.UpdateItem" is UpdateItem, "AmazonSQS.SendMessageBatch"
// is SendMessageBatch) and, for S3, by the method, the shape of the
// path-style path and the query (PUT /bucket/key is PutObject, GET
// /bucket?list-type=2 is ListObjectsV2; see S3Operation). Rates are given
// per operation, with a default for the rest.
//
// Decisions are replayable: each operation draws from its own generator,
// seeded by the seed and the operation's name, so the n-th request of an
// operation gets the same decision in every run with the same seed, however
// other operations interleave with it.
//
// Besides these random faults, a proxy can hold back one request that
// Config.Hold picks, such as a worker's accept: its caller gets no answer,
// and the request reaches the service only when Release sends it, after
// its sender has given up. The demo's running example and the takeover
// tests are built on it: an accept still on its way when its lease ends
// arrives after the next generation's, and the table's condition refuses
// it.
//
// The proxy counts what it saw and what it injected, per operation and per
// kind (Counts). It uses only the standard library.
//
// NewPostgres starts the same kind of proxy at the TCP level for the
// PostgreSQL wire protocol (PostgresConfig), for the PostgreSQL stores: it
// reads the protocol's messages, holds each round trip (a simple query, or
// an extended-protocol run up to its Sync) and resets it before it is
// forwarded (not applied), drops its answer after the server has answered
// (a statement outside a transaction, or a COMMIT, has committed: the
// answer is lost after the commit), stalls it until the caller gives up
// (not applied), or delays it. Operations are named by the statement's
// first keyword (PostgresOperation), or by a function of the SQL; a round
// trip that only prepares (the first use of a statement on a connection by
// a driver that caches statements, pgx's default for instance; fifoworker's
// own driver prepares nothing) is PostgresPrepare, so that statement
// caching changes no operation's sequence of faults. It holds back one
// round trip that PostgresConfig.Hold picks, as the HTTP proxy does a
// request: Release replays it on a connection of the proxy's own (the
// Parse of a statement it binds first), after its caller has gone, and
// reports the server's answer, so a conditional UPDATE's WHERE can be seen
// to refuse it.
package faultproxy
