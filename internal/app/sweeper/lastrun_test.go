package sweeper_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobstest"
	"github.com/fifoworker/fifoworker/pkg/s3mem"
)

func newLastRun(t *testing.T, b *bucket) *sweeper.S3LastRun {
	t.Helper()
	l, err := sweeper.NewS3LastRun(sweeper.S3LastRunConfig{Client: b, Bucket: testBucket})
	require.NoError(t, err)
	return l
}

func TestNewS3LastRunRefusesEachInvalidConfig(t *testing.T) {
	t.Parallel()
	fake := newBucket(t, jobstest.NewClock(jobstest.Start).Now)
	for field, cfg := range map[string]sweeper.S3LastRunConfig{
		"Client": {Bucket: testBucket},
		"Bucket": {Client: fake},
	} {
		_, err := sweeper.NewS3LastRun(cfg)
		require.ErrorIs(t, err, sweeper.ErrInvalidConfig, field)
		require.ErrorContains(t, err, field)
	}
}

func TestS3LastRunRoundTrip(t *testing.T) {
	t.Parallel()
	fake := newBucket(t, jobstest.NewClock(jobstest.Start).Now)
	l := newLastRun(t, fake)
	ctx := t.Context()

	_, err := l.LastRun(ctx)
	require.ErrorIs(t, err, sweeper.ErrNoLastRun)
	require.ErrorContains(t, err, "s3://"+testBucket+"/"+sweeper.LastRunKey)

	long := strings.Repeat("k", 1024) // the longest cursor, three times
	want := sweeper.LastRun{At: jobstest.Start.UTC(), Report: sweeper.Report{
		Examined: 7, Deleted: 2, Errors: 1, Cursor: long, RepairCursor: long, RecheckCursor: long,
	}}
	require.NoError(t, l.Save(ctx, want))
	got, err := l.LastRun(ctx)
	require.NoError(t, err)
	require.Equal(t, want, got)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(fake.body(t, sweeper.LastRunKey)), &doc))
	require.Contains(t, doc, "report", "the report's own JSON, as the function returns it")
	require.Equal(t, map[string]int{"PutObject": 1, "GetObject": 2}, fake.TakeCalls())
}

// A report that is not one is said so, with where it is; it is never
// taken for no report.
func TestS3LastRunRefusesACorruptReport(t *testing.T) {
	t.Parallel()
	fake := newBucket(t, jobstest.NewClock(jobstest.Start).Now)
	l := newLastRun(t, fake)
	for name, body := range map[string]string{
		"not JSON":    "{not json",
		"no time":     `{"report":{"examined":1}}`,
		"wrong types": `{"at":"2026-01-02T03:04:05Z","report":{"examined":"many"}}`,
		"too long":    `{"at":"2026-01-02T03:04:05Z","pad":"` + strings.Repeat("x", sweeper.MaxLastRunSize) + `"}`,
	} {
		fake.rawPut(t, sweeper.LastRunKey, []byte(body))
		_, err := l.LastRun(t.Context())
		require.ErrorContains(t, err, "sweeper: last run s3://"+testBucket+"/"+sweeper.LastRunKey+" is not a report", name)
		require.NotErrorIs(t, err, sweeper.ErrNoLastRun, name)
	}
	// At exactly the bound, a report is read.
	body := `{"at":"2026-01-02T03:04:05Z","pad":"`
	body += strings.Repeat("x", sweeper.MaxLastRunSize-len(body)-2) + `"}`
	require.Len(t, body, sweeper.MaxLastRunSize)
	fake.rawPut(t, sweeper.LastRunKey, []byte(body))
	_, err := l.LastRun(t.Context())
	require.NoError(t, err)
}

// A read the bucket refuses is that error, not ErrNoLastRun; a missing
// report read with a role that may not list is ErrNoLastRun, as a
// missing cursor is the beginning.
func TestS3LastRunTellsMissingFromFailed(t *testing.T) {
	t.Parallel()
	fake := newBucket(t, jobstest.NewClock(jobstest.Start).Now)
	fake.deniesMissing = true
	l := newLastRun(t, fake)
	_, err := l.LastRun(t.Context())
	require.ErrorIs(t, err, sweeper.ErrNoLastRun)

	fake.Fail(func(op, _ string) error {
		if op == s3mem.OpGetObject {
			return errors.New("injected: slow down")
		}
		return nil
	})
	_, err = l.LastRun(t.Context())
	require.ErrorContains(t, err, "injected: slow down")
	require.NotErrorIs(t, err, sweeper.ErrNoLastRun)
}

// Each run keeps its report with Config.LastRun, a run with failed
// requests included (its Errors say so); a dry run, which writes
// nothing, keeps none, and the last real run's stays. A report that
// cannot be kept fails the run.
func TestARunKeepsItsReport(t *testing.T) {
	t.Parallel()
	b := setup(t)
	kept := newLastRun(t, b.s3)
	cfg := b.cfg
	cfg.LastRun = kept
	sw, err := sweeper.New(cfg)
	require.NoError(t, err)
	b.create(t, "job-1")
	b.clock.Advance(time.Hour)

	rep, err := sw.Run(b.ctx, sweeper.Options{})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Nudged)
	got, err := kept.LastRun(b.ctx)
	require.NoError(t, err)
	require.Equal(t, sweeper.LastRun{At: b.clock.Now(), Report: rep}, got)

	b.clock.Advance(time.Minute)
	dry, err := sw.Run(b.ctx, sweeper.Options{DryRun: true})
	require.NoError(t, err)
	require.True(t, dry.DryRun)
	got, err = kept.LastRun(b.ctx)
	require.NoError(t, err)
	require.Equal(t, sweeper.LastRun{At: b.clock.Now().Add(-time.Minute), Report: rep}, got, "a dry run keeps nothing")

	b.s3.Fail(func(op, _ string) error {
		if op == s3mem.OpListObjectsV2 {
			return errors.New("injected: list")
		}
		return nil
	})
	failed, err := sw.Run(b.ctx, sweeper.Options{})
	require.ErrorContains(t, err, "injected: list")
	require.Positive(t, failed.Errors)
	got, err = kept.LastRun(b.ctx)
	require.NoError(t, err)
	require.Equal(t, sweeper.LastRun{At: b.clock.Now(), Report: failed}, got, "a failed run keeps its report")

	b.s3.Fail(func(op, key string) error {
		if op == s3mem.OpPutObject && key == sweeper.LastRunKey {
			return errors.New("injected: put")
		}
		return nil
	})
	unkept, err := sw.Run(b.ctx, sweeper.Options{})
	require.ErrorContains(t, err, "injected: put")
	require.ErrorContains(t, err, "sweeper: keep the last run")
	require.Equal(t, 1, unkept.Errors, "the report's own save, counted")
}
