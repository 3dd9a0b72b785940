// Package lambdawire wires the functions: for each one a startup.Builder
// that reads its settings (internal/lambdawire/startup's Env, all at once,
// so that a misconfigured function names every problem in one cold-start
// error) and builds its handler from pkg/, which every
// functions/<name>/main.go passes to startup.Main. The local pipeline calls
// the same builders with the settings its template gives each function, so
// a function runs the same code in Lambda, under the runtime interface
// emulator and in process. It holds no logic of the pipeline.
//
// The worker and the projector have a builder per transport: Worker and
// Projector consume SQS (template.yaml), WorkerKafka and ProjectorKafka
// Kafka (template-kafka.yaml). A bootstrap is built for one of them: the
// kafka build tag picks functions/<name>/main_kafka.go instead of main.go,
// so the linker keeps only that transport's processor (pkg/fifo's or
// pkg/kafka's); TRANSPORT in the environment says which a template
// deploys, and a builder of the other refuses to start
// (startup.CheckTransport). The relay's Kafka builder is a package of its
// own (internal/lambdawire/kafkarelay), which does not import this one:
// its bootstrap would link every builder's packages, and their clients,
// with franz-go (docs/BENCHMARKS.md).
//
// Each function has a builder per store as well: the DynamoDB ones above
// (template.yaml, template-kafka.yaml) and the PostgreSQL ones
// (template-postgres.yaml): IntakePostgres, WorkerPostgres,
// ProjectorPostgres, SweeperPostgres and Migrate (the DatabaseSchema
// custom resource), each taking an OpenDB, and the relay's
// internal/lambdawire/pgrelay.Relay, a package of its own as kafkarelay
// is. The postgres build tag picks functions/<name>/main_postgres.go,
// which passes internal/lambdawire/pgopen.Open: the one package of the
// wiring that imports the driver (internal/base/pgwire), so that no
// DynamoDB bootstrap links it. STORE
// says which store a template deploys, and a builder of the other refuses
// to start (startup.CheckStore). On PostgreSQL the relay has no stream:
// the writers' job store (nudgingJobs) nudges it after each committed
// write, and their handlers flush the nudges before they return
// (flushing); a schedule backs the nudges up.
package lambdawire
