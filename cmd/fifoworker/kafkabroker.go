package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/fifoworker/fifoworker/internal/dev/kafkabroker"
)

// brokerBinary is the program a stack started here runs as its Kafka
// broker (empty: this one). The tests name their own binary, which their
// TestMain makes answer `local kafka-broker` as this one does.
var brokerBinary string

// localKafkaBrokerOptions are `fifoworker local kafka-broker`'s: the
// stack's Kafka broker, which `local up` starts as a process of its own.
type localKafkaBrokerOptions struct{ Port int }

func (c *cli) localKafkaBrokerCmd() *cobra.Command {
	o := &localKafkaBrokerOptions{}
	cmd := &cobra.Command{
		Use:    "kafka-broker",
		Short:  "run the stack's Kafka broker on 127.0.0.1 until SIGTERM or SIGINT (local up starts it)",
		Args:   noArgs,
		Hidden: true, // the stack's process, not a verb of the user's
		RunE:   c.choose(o, nil),
	}
	cmd.Flags().IntVar(&o.Port, "port", 0, "the port on 127.0.0.1 (0: a free one, which it logs)")
	return cmd
}

func (o *localKafkaBrokerOptions) Validate() error {
	return kafkabroker.Config{Port: o.Port}.Validate()
}

// Run serves until SIGTERM (local down) or SIGINT, then closes the broker.
func (o *localKafkaBrokerOptions) Run(ctx context.Context, c *cli) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	b, err := kafkabroker.New(kafkabroker.Config{Port: o.Port, Logger: slog.New(slog.NewTextHandler(c.stderr, nil))})
	if err != nil {
		return err
	}
	return b.Run(ctx)
}
