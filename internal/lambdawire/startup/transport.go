package startup

import "fmt"

// The transports a bootstrap is built for: TRANSPORT's values.
const (
	TransportSQS   = "sqs"
	TransportKafka = "kafka"
)

// CheckTransport records a problem unless TRANSPORT names built, the
// transport of the builder calling it. template-kafka.yaml sets TRANSPORT
// to "kafka" for every function; template.yaml sets none, which is
// "sqs". A bootstrap is built for one transport (functions/<name>'s main
// or main_kafka.go, by the kafka build tag), so one deployed with the
// other transport's template refuses to start and names the build to
// make, instead of failing on the first missing setting of its own
// transport, or waiting for events that never come. Only the consumers
// and the relays check it (internal/lambdawire/kafkarelay too): intake
// and the sweeper are the same code on both transports.
func CheckTransport(env *Env, built string) {
	got := env.StringOr("TRANSPORT", TransportSQS)
	if built == TransportKafka {
		got = env.String("TRANSPORT")
	}
	switch {
	case got == built, got == "":
	case got != TransportSQS && got != TransportKafka:
		env.Problem("TRANSPORT", fmt.Errorf("%q is neither %s nor %s", got, TransportSQS, TransportKafka))
	case built == TransportSQS:
		env.Problem("TRANSPORT", fmt.Errorf("%q, but this bootstrap's wiring is SQS's: build it with the kafka tag (-tags lambda.norpc,kafka)", got))
	default:
		env.Problem("TRANSPORT", fmt.Errorf("%q, but this bootstrap's wiring is Kafka's: build it without the kafka tag", got))
	}
}
