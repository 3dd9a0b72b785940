package jobs

import (
	"context"
	"errors"
	"time"
)

// StatusReader reads only the statuses of jobs: what a count needs, where
// reading whole jobs costs (DynamoStore has it: a job item is up to 1 KB).
// A store without it is counted through BatchGetter.GetMany, which on
// MemoryStore and PostgresStore costs no more than this would.
type StatusReader interface {
	// GetStatuses is GetMany that reads each job's status only: the status
	// of each job of ids that exists, by id, and GetMany's errors (an item
	// whose id or status does not decode is named by the
	// *UndecodableError returned with the others).
	GetStatuses(ctx context.Context, ids []string) (map[string]Status, error)
}

var _ StatusReader = (*DynamoStore)(nil)

// LiveCount is the live jobs by status, on the first page of the live
// listing.
type LiveCount struct {
	Total    int
	ByStatus map[Status]int
	// More says the listing had more live jobs than the count's limit:
	// then each number is a lower bound.
	More bool
}

// CountLive counts by status the jobs that List's first page of live jobs
// (ListOptions{LiveOnly: true, Limit: limit}) shows at now, and says
// whether there were more: the same walk of the live index, reading each
// job's status only where st is a StatusReader, and the whole job
// otherwise. So what it counts is what that page would show.
func CountLive(ctx context.Context, st ListStore, limit int, now time.Time) (LiveCount, error) {
	get := st.GetMany
	if sr, ok := st.(StatusReader); ok {
		get = statusJobs(sr)
	}
	page, err := list(ctx, st, ListOptions{LiveOnly: true, Limit: limit}, now, get)
	if err != nil {
		return LiveCount{}, err
	}
	n := LiveCount{Total: len(page.Jobs), ByStatus: map[Status]int{}, More: page.More}
	for _, j := range page.Jobs {
		n.ByStatus[j.Status]++
	}
	return n, nil
}

// statusJobs reads jobs through sr, each with its ID and Status only:
// what the live listing's walk looks at when it lists every tenant.
func statusJobs(sr StatusReader) getter {
	return func(ctx context.Context, ids []string) (map[string]Job, error) {
		got, err := sr.GetStatuses(ctx, ids)
		if err != nil && !errors.As(err, new(*UndecodableError)) {
			return nil, err
		}
		out := make(map[string]Job, len(got))
		for id, s := range got {
			out[id] = Job{ID: id, Status: s}
		}
		return out, err
	}
}

// statuses is the statuses of GetMany's answer, with its error.
func statuses(got map[string]Job, err error) (map[string]Status, error) {
	if err != nil && !errors.As(err, new(*UndecodableError)) {
		return nil, err
	}
	out := make(map[string]Status, len(got))
	for id, j := range got {
		out[id] = j.Status
	}
	return out, err
}
