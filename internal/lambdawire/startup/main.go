package startup

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
)

// Builder builds a function's handler from its settings. The function's
// main.go (through Main) and the local pipeline (in process, with the
// settings its template gives the function) call the same builder, so a
// function runs the same code wherever it runs.
type Builder[E, R any] func(env *Env, cfg aws.Config, log *slog.Logger) (func(context.Context, E) (R, error), error)

// Main is a function's main: settings and the AWS configuration from the
// process environment (AWSConfig), the handler, lambda.Start. A function
// that cannot be built fails its init with every problem named.
func Main[E, R any](builder Builder[E, R]) {
	// JSON lines on stdout, which Lambda sends to CloudWatch Logs.
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	h, err := build(NewEnv(), builder, log)
	if err != nil {
		// A function that cannot start must fail its init, which Lambda
		// reports, rather than run half-configured.
		log.Error("init failed", "error", err)
		os.Exit(1)
	}
	lambda.Start(h)
}

// build is Main's handler from env: the builder's, or an error with every
// problem found, the AWS configuration's included had the builder not
// asked for them (nil handler then).
func build[E, R any](env *Env, builder Builder[E, R], log *slog.Logger) (func(context.Context, E) (R, error), error) {
	h, err := builder(env, env.AWSConfig(), log)
	if err == nil {
		err = env.Err()
	}
	if err != nil {
		return nil, err
	}
	return h, nil
}
