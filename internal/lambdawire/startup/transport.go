package startup

import "fmt"

// The transports a bootstrap is built for: TRANSPORT's values.
const (
	TransportSQS   = "sqs"
	TransportKafka = "kafka"
)

// Transport reads TRANSPORT, the transport the function's template
// deploys: "sqs" when it is unset (template.yaml sets none), or "kafka"
// (template-kafka.yaml). Any other value is a problem, and "". Intake and
// the sweeper, whose bootstraps are the same on both, read it to know
// which settings their template gives them.
func Transport(env *Env) string {
	got := env.StringOr("TRANSPORT", TransportSQS)
	if got != TransportSQS && got != TransportKafka {
		env.Problem("TRANSPORT", fmt.Errorf("%q is neither %s nor %s", got, TransportSQS, TransportKafka))
		return ""
	}
	return got
}

// CheckTransport records a problem unless TRANSPORT names built, the
// transport of the builder calling it (a Kafka builder's template must
// set it). template-kafka.yaml sets TRANSPORT to "kafka" for every
// function; template.yaml sets none, which is "sqs". A bootstrap of the
// consumers and the relay is built for one transport
// (functions/<name>'s main or main_kafka.go, by the kafka build tag), so
// one deployed with the other transport's template refuses to start and
// names the build to make, instead of failing on the first missing
// setting of its own transport, or waiting for events that never come.
func CheckTransport(env *Env, built string) {
	if built == TransportKafka && env.String("TRANSPORT") == "" {
		return // named
	}
	switch got := Transport(env); {
	case got == built, got == "":
	case built == TransportSQS:
		env.Problem("TRANSPORT", fmt.Errorf("%q, but this bootstrap's wiring is SQS's: build it with the kafka tag (-tags lambda.norpc,nethttpomithttp2,kafka and the -gcflags of docs/KAFKA.md's sam build)", got))
	default:
		env.Problem("TRANSPORT", fmt.Errorf("%q, but this bootstrap's wiring is Kafka's: build it without the kafka tag", got))
	}
}
