// Package localstack installs, starts and stops the local stack the tests
// and the demo run on: the SQS emulator (fauxqs), DynamoDB Local (with
// Streams), the S3 emulator (gofakes3), a Kafka broker (kfake, run by
// internal/dev/kafkabroker) and a PostgreSQL 18 server (run by
// internal/dev/pgserver), plus the Lambda runtime interface emulator
// binary that pkg/localesm drives.
//
// Invariants:
//   - Emulators are installed at pinned versions into a cache outside the
//     repository, once; an interrupted install never leaves a half-written
//     tool under its final name.
//   - Every server listens on 127.0.0.1 (DynamoDB Local has no bind option
//     and listens on all interfaces; clients still use 127.0.0.1 only).
//   - The Kafka broker is a process of the stack like the emulators, with a
//     PID, a log and a port: the fifoworker binary run as `fifoworker local
//     kafka-broker --port N` (Options.Broker; a test binary must name one).
//     It is ready when it answers a metadata request and advertises the
//     address it was reached at; the environment names it as
//     KAFKA_BOOTSTRAP_SERVERS. It starts with no topic and creates none on
//     demand, as MSK by default: whoever deploys creates the topics.
//   - The PostgreSQL server is a process of the stack in the same way:
//     `fifoworker local postgres --port N --data-dir D` (Options.Broker
//     again) runs PostgreSQL 18.4 (internal/dev/pgserver: pinned binaries,
//     127.0.0.1 only, an unprivileged user when root) and stops it on
//     SIGTERM. The environment names it as FIFOWORKER_POSTGRES_DSN (what
//     pkg/pgtest reads); it is ready when it answers a query. Each Up
//     starts a fresh, empty cluster (a copy of pgserver's template), as
//     every emulator starts empty, in a data directory of the system's
//     temporary directory named after the stack (the server's user cannot
//     reach root's cache); Down removes it, and kills a postmaster its
//     process left running on it.
//   - A stack has a name; its ports, PIDs and logs live in its own state
//     directory, so two stacks on one machine never collide. Down stops
//     exactly the recorded processes, after checking each PID still runs the
//     program it started.
//   - When AWS_ENDPOINT_URL is set (a running LocalStack, say), no AWS
//     emulator is started and that endpoint is used; the Kafka broker and
//     the PostgreSQL server still start, since no AWS endpoint speaks
//     their protocols.
//   - Starting processes is Linux only (proc_linux.go): a stack recognises
//     its own processes by their start time in /proc/PID/stat, so "down"
//     never signals a reused PID. Elsewhere Up refuses with an error that
//     says so, unless AWS_ENDPOINT_URL names an external stack, which then
//     runs without a Kafka broker or a PostgreSQL server.
//   - Every failure (no Java, a port in use, an emulator that does not come
//     up) is an error that says what to do; nothing is silently skipped.
package localstack
