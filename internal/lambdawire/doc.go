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
package lambdawire
