package lambdawire

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/fifoworker/fifoworker/pkg/candidate"
)

// The worker's spool settings (see pkg/worker's "The spool").
const (
	// DefaultMaxCandidateBytes is MAX_CANDIDATE_BYTES when it is not set:
	// template.yaml's MaxCandidateBytes default, 128 MiB.
	DefaultMaxCandidateBytes = 128 << 20
	// MinEphemeralStorageMB and MaxEphemeralStorageMB are Lambda's bounds of
	// a function's ephemeral storage (EphemeralStorage.Size, MB). The least
	// is also Lambda's default, and EPHEMERAL_STORAGE_MB's when it is not
	// set: what a function whose configuration names none has.
	MinEphemeralStorageMB = 512
	MaxEphemeralStorageMB = 10240
	// spoolPercent is the share of the ephemeral storage the candidates'
	// spool budget takes.
	spoolPercent = 90
	// lanesPerBatch is the most lanes a worker invocation runs: the
	// commands mapping's BatchSize, SQS's most for a FIFO queue, one lane
	// per message group at most.
	lanesPerBatch = 10
)

// SpoolBudget is the bytes the worker's candidates may hold in /tmp at
// once, for an ephemeral storage of mb MB: 90% of mb × 1,000,000 bytes
// (the smaller reading of AWS's "MB"), the rest left to the file system's
// own use (its metadata, block rounding, blocks some file systems keep for
// root, which the function's user cannot write).
func SpoolBudget(mb int) int64 { return int64(mb) * 1_000_000 / 100 * spoolPercent }

// workerCandidates is the worker's candidate store: every candidate at
// most MAX_CANDIDATE_BYTES (default DefaultMaxCandidateBytes), spooled in
// /tmp under the budget of EPHEMERAL_STORAGE_MB (SpoolBudget; default
// MinEphemeralStorageMB). A bound the budget cannot hold is a problem of
// both settings, named at cold start. It returns nil when env has a
// problem it reports.
func workerCandidates(env *Env, api candidate.S3API, bucket string, log *slog.Logger) *candidate.Store {
	mb := env.Int("EPHEMERAL_STORAGE_MB", MinEphemeralStorageMB, MinEphemeralStorageMB, MaxEphemeralStorageMB)
	maxBytes := int64(env.Int("MAX_CANDIDATE_BYTES", DefaultMaxCandidateBytes, 1, int(candidate.MaxSize)))
	budget := SpoolBudget(mb)
	if err := candidate.CheckSpoolBudget(maxBytes, budget); err != nil {
		env.Problem("MAX_CANDIDATE_BYTES", fmt.Errorf("%d bytes do not fit the spool of EPHEMERAL_STORAGE_MB=%d (%d%%: %d bytes); lower MAX_CANDIDATE_BYTES or raise EPHEMERAL_STORAGE_MB: %w",
			maxBytes, mb, spoolPercent, budget, err))
		return nil
	}
	if bucket == "" {
		return nil
	}
	lanes := budget / maxBytes
	level := slog.LevelInfo
	if lanes < lanesPerBatch {
		level = slog.LevelWarn // a batch's lanes beyond these wait for room
	}
	log.Log(context.Background(), level, "worker: candidates' spool",
		slog.Int("ephemeral_storage_mb", mb), slog.Int64("spool_budget", budget),
		slog.Int64("max_candidate_bytes", maxBytes), slog.Int64("lanes_at_once", min(lanes, lanesPerBatch)))
	return candidate.New(api, bucket, candidate.WithMaxSize(maxBytes), candidate.WithSpoolBudget(budget))
}
