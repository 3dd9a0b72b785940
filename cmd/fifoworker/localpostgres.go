package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/fifoworker/fifoworker/internal/dev/pgserver"
)

// postgresStopTimeout bounds the server's fast shutdown: well within the
// 10 s `local down` gives this process before it kills it, which would
// leave the postmaster (a process group of its own) running.
const postgresStopTimeout = 5 * time.Second

// localPostgresOptions are `fifoworker local postgres`'s: the stack's
// PostgreSQL server, which `local up` starts as a process of its own.
type localPostgresOptions struct {
	Port    int
	DataDir string
}

func (c *cli) localPostgresCmd() *cobra.Command {
	o := &localPostgresOptions{}
	cmd := &cobra.Command{
		Use:    "postgres",
		Short:  "run the stack's PostgreSQL 18 server on 127.0.0.1 until SIGTERM or SIGINT (local up starts it)",
		Args:   noArgs,
		Hidden: true, // the stack's process, not a verb of the user's
		RunE:   c.choose(o, nil),
	}
	cmd.Flags().IntVar(&o.Port, "port", 0, "the port on 127.0.0.1 (0: a free one, which it logs)")
	cmd.Flags().StringVar(&o.DataDir, "data-dir", "", "the cluster's directory, made when it holds none (required)")
	return cmd
}

func (o *localPostgresOptions) Validate() error {
	if o.DataDir == "" {
		return errors.New("--data-dir is required")
	}
	return o.config().Validate()
}

func (o *localPostgresOptions) config() pgserver.Config {
	return pgserver.Config{Port: o.Port, DataDir: o.DataDir, StopTimeout: postgresStopTimeout}
}

// Run serves until SIGTERM (local down) or SIGINT, then stops the server;
// a server that exits by itself ends this process with an error, so that
// the stack's status shows it gone.
func (o *localPostgresOptions) Run(ctx context.Context, c *cli) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(c.stderr, nil))
	cfg := o.config()
	cfg.Progress, cfg.Logger = c.stderr, logger
	s, err := pgserver.Start(ctx, cfg)
	if err != nil {
		return err
	}
	logger.Info("postgres listening", "dsn", s.DSN(), "pid", s.PID(), "data_dir", s.DataDir())
	select {
	case <-ctx.Done():
		return s.Stop(context.WithoutCancel(ctx))
	case <-s.Exited():
		return fmt.Errorf("postgres (pid %d) exited; see its log in %s", s.PID(), s.DataDir())
	}
}
