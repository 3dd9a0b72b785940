package jobstest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

func testMissingJob(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	id := b.id("job-missing")
	until := b.clock.Now().Add(time.Minute)
	_, err := b.store.Get(b.ctx, id)
	require.ErrorIs(t, err, jobs.ErrNotFound)
	_, err = b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: id, AttemptID: "a", LeaseUntil: until})
	require.ErrorIs(t, err, jobs.ErrNotFound)
	_, err = b.store.Renew(b.ctx, jobs.RenewRequest{JobID: id, AttemptID: "a", Generation: 1, Version: 1, LeaseUntil: until})
	require.ErrorIs(t, err, jobs.ErrNotFound)
	_, err = b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: id, AttemptID: "a", Generation: 1, Version: 1, Result: result(id, "a", 1)})
	require.ErrorIs(t, err, jobs.ErrNotFound)
	_, err = b.store.Fail(b.ctx, jobs.FailRequest{JobID: id, AttemptID: "a", Generation: 1, Version: 1, Failure: jobs.Failure{Code: "x"}})
	require.ErrorIs(t, err, jobs.ErrNotFound)
	_, err = b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: id})
	require.ErrorIs(t, err, jobs.ErrNotFound)
	// Nothing was created by the attempts.
	_, err = b.store.Get(b.ctx, id)
	require.ErrorIs(t, err, jobs.ErrNotFound)
}

func testInvalidRequests(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	id := b.create(t, "job-42").ID
	before := b.get(t, id)
	now := b.clock.Now()
	good := result(id, "a", 1)
	for name, call := range map[string]func() error{
		"claim bad id": func() error {
			_, err := b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: "x/y", AttemptID: "a", LeaseUntil: now.Add(time.Minute)})
			return err
		},
		"claim bad attempt": func() error {
			_, err := b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: id, AttemptID: "", LeaseUntil: now.Add(time.Minute)})
			return err
		},
		"claim past lease": func() error {
			_, err := b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: id, AttemptID: "a", LeaseUntil: now})
			return err
		},
		"accept generation0": func() error {
			_, err := b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: id, AttemptID: "a", Version: 1, Result: good})
			return err
		},
		"accept no result": func() error {
			_, err := b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: id, AttemptID: "a", Generation: 1, Version: 1})
			return err
		},
		"accept bad sha": func() error {
			r := good
			r.SHA256 = "ABC"
			_, err := b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: id, AttemptID: "a", Generation: 1, Version: 1, Result: r})
			return err
		},
		"fail no code": func() error {
			_, err := b.store.Fail(b.ctx, jobs.FailRequest{JobID: id, AttemptID: "a", Generation: 1, Version: 1})
			return err
		},
		"renew negative": func() error {
			_, err := b.store.Renew(b.ctx, jobs.RenewRequest{JobID: id, AttemptID: "a", Generation: 1, Version: 1, LeaseUntil: now.Add(time.Minute), Progress: -1})
			return err
		},
		"get bad id":    func() error { _, err := b.store.Get(b.ctx, "intent#x#y"); return err },
		"cancel bad id": func() error { _, err := b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: ""}); return err },
	} {
		require.ErrorIs(t, call(), jobs.ErrInvalid, name)
	}
	b.requireUnchanged(t, before)
}
