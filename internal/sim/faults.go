package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// The errors the fault plan answers with.
var (
	// errThrottled: refused before it was applied (throttling, a 5xx).
	errThrottled = &smithy.GenericAPIError{Code: "ThrottlingException", Message: "sim: rate exceeded"}
	// errTimeout: no answer; the request may have been applied.
	errTimeout = errors.New("sim: request timed out: the answer was lost")
	// errDead: the invocation has crashed; nothing it sends arrives.
	errDead = errors.New("sim: the invocation crashed")
)

// fault is what the fault plan does to one request.
type fault int

const (
	faultNone       fault = iota
	faultBefore           // refused before it is applied
	faultAfter            // applied, and its answer lost
	faultDelay            // held in the network: applied later, its sender times out now
	faultConflict         // S3's 409 ConditionalRequestConflict
	faultDeadBefore       // the invocation crashes now: this request and the rest never land
	faultDeadAfter        // the invocation crashes just after this request landed
)

// invocation is one Lambda invocation: its request id, its deadline, and
// the crash the fault plan has in store for it.
type invocation struct {
	id       string
	kind     string
	deadline time.Time
	// crashAt is the request (1 for the first) at which the invocation dies;
	// 0: it does not.
	crashAt int
	calls   int
	dead    bool
	// dropAnswer: the invocation ends but its answer never reaches the
	// event source mapping.
	dropAnswer bool
}

type invocationKey struct{}

func invocationOf(ctx context.Context) *invocation {
	inv, _ := ctx.Value(invocationKey{}).(*invocation)
	return inv
}

// odds are the fault plan's chances, per thousand requests.
type odds struct {
	before, after, delay, conflict, slow int
}

// What a request may suffer besides refusals and lost answers.
type may int

const (
	mayDelay    may = 1 << iota // a write that can be held back in the network
	mayConflict                 // an S3 conditional put that can meet a concurrent one
)

// fault decides what happens to a request of op made under ctx. It draws
// from the world's generator only while faults are on or a crash is due,
// so a run replays exactly.
func (w *World) fault(ctx context.Context, comp, op string, m may) fault {
	if inv := invocationOf(ctx); inv != nil {
		if inv.dead {
			return faultDeadBefore
		}
		inv.calls++
		if inv.calls == inv.crashAt {
			inv.dead = true
			w.stats.Crashes++
			if w.rng.IntN(2) == 0 {
				w.logf("  crash of %s before %s", inv.id, op)
				return faultDeadBefore
			}
			w.logf("  crash of %s after %s", inv.id, op)
			return faultDeadAfter
		}
	}
	if !w.faulty {
		return faultNone
	}
	w.slow(ctx, op)
	if w.clock.Now().Before(w.outages[comp]) {
		w.stats.Refused++
		return faultBefore
	}
	r := w.rng.IntN(1000)
	switch {
	case r < w.odds.before:
		w.stats.Refused++
		return faultBefore
	case r < w.odds.before+w.odds.after:
		w.stats.LostAnswers++
		return faultAfter
	case m&mayDelay != 0 && r < w.odds.before+w.odds.after+w.odds.delay:
		w.stats.Delayed++
		return faultDelay
	case m&mayConflict != 0 && r >= 1000-w.odds.conflict:
		return faultConflict
	}
	return faultNone
}

// slow makes, now and then, a request of the running fiber slow: the
// invocation waits for its answer while the scheduler goes on with other
// steps. Only the fiber's own invocation is suspended: a client's request
// made from inside it (a cancellation during a task) is not.
func (w *World) slow(ctx context.Context, op string) {
	if !w.faulty {
		return
	}
	if inv := invocationOf(ctx); inv != nil && w.current != nil && w.current.inv == inv && w.rng.IntN(1000) < w.odds.slow {
		w.stats.SlowRequests++
		w.logf("  %s is slow", op)
		w.yield()
	}
}

// call runs one request under the fault plan: write is the request, which
// it may refuse, apply and lose the answer of, or hold back to apply later
// (delayable writes only).
func call[T any](w *World, ctx context.Context, comp, op string, m may, write func(context.Context) (T, error)) (T, error) {
	var zero T
	switch w.fault(ctx, comp, op, m) {
	case faultConflict:
		return zero, fmt.Errorf("%s: %w", op, &smithy.GenericAPIError{Code: "ConditionalRequestConflict", Message: "sim: a conflicting write is in progress"})
	case faultBefore:
		return zero, fmt.Errorf("%s: %w", op, errThrottled)
	case faultDeadBefore:
		return zero, fmt.Errorf("%s: %w", op, errDead)
	case faultAfter:
		_, _ = write(context.WithoutCancel(ctx))
		return zero, fmt.Errorf("%s: %w", op, errTimeout)
	case faultDeadAfter:
		_, _ = write(context.WithoutCancel(ctx))
		return zero, fmt.Errorf("%s: %w", op, errDead)
	case faultDelay:
		held := context.WithoutCancel(ctx)
		w.delayed = append(w.delayed, delayedWrite{op: op, at: w.clock.Now(), apply: func() error {
			_, err := write(held)
			return err
		}})
		return zero, fmt.Errorf("%s: %w", op, errTimeout)
	}
	return write(ctx)
}

// read runs a request that changes nothing: a fault refuses it.
func read[T any](w *World, ctx context.Context, comp, op string, get func(context.Context) (T, error)) (T, error) {
	var zero T
	switch w.fault(ctx, comp, op, 0) {
	case faultBefore, faultAfter:
		return zero, fmt.Errorf("%s: %w", op, errThrottled)
	case faultDeadBefore, faultDeadAfter:
		return zero, fmt.Errorf("%s: %w", op, errDead)
	}
	return get(ctx)
}

// delayedWrite is a request held back in the network.
type delayedWrite struct {
	op    string
	at    time.Time
	apply func() error
}

// faultJobs is the job store as every function reaches it: through the
// fault plan, onto the journal.
type faultJobs struct {
	w     *World
	inner *journal
}

var (
	_ jobs.Store          = (*faultJobs)(nil)
	_ jobs.Lister         = (*faultJobs)(nil)
	_ jobs.FinishedLister = (*faultJobs)(nil)
	_ jobs.BatchGetter    = (*faultJobs)(nil)
)

func (f *faultJobs) Create(ctx context.Context, req jobs.CreateRequest) (jobs.CreateResult, error) {
	return call(f.w, ctx, "jobs", "create", 0, func(ctx context.Context) (jobs.CreateResult, error) { return f.inner.Create(ctx, req) })
}

func (f *faultJobs) Claim(ctx context.Context, req jobs.ClaimRequest) (jobs.Job, error) {
	return call(f.w, ctx, "jobs", "claim "+req.JobID, mayDelay, func(ctx context.Context) (jobs.Job, error) { return f.inner.Claim(ctx, req) })
}

func (f *faultJobs) Renew(ctx context.Context, req jobs.RenewRequest) (jobs.Job, error) {
	return call(f.w, ctx, "jobs", "renew "+req.JobID, mayDelay, func(ctx context.Context) (jobs.Job, error) { return f.inner.Renew(ctx, req) })
}

func (f *faultJobs) Accept(ctx context.Context, req jobs.AcceptRequest) (jobs.Job, error) {
	return call(f.w, ctx, "jobs", "accept "+req.JobID, mayDelay, func(ctx context.Context) (jobs.Job, error) { return f.inner.Accept(ctx, req) })
}

func (f *faultJobs) Fail(ctx context.Context, req jobs.FailRequest) (jobs.Job, error) {
	return call(f.w, ctx, "jobs", "fail "+req.JobID, mayDelay, func(ctx context.Context) (jobs.Job, error) { return f.inner.Fail(ctx, req) })
}

func (f *faultJobs) Cancel(ctx context.Context, req jobs.CancelRequest) (jobs.Job, error) {
	return call(f.w, ctx, "jobs", "cancel "+req.JobID, 0, func(ctx context.Context) (jobs.Job, error) { return f.inner.Cancel(ctx, req) })
}

func (f *faultJobs) Nudge(ctx context.Context, req jobs.NudgeRequest) (jobs.Job, error) {
	return call(f.w, ctx, "jobs", "nudge "+req.JobID, mayDelay, func(ctx context.Context) (jobs.Job, error) { return f.inner.Nudge(ctx, req) })
}

func (f *faultJobs) Get(ctx context.Context, id string) (jobs.Job, error) {
	return read(f.w, ctx, "jobs", "get "+id, func(ctx context.Context) (jobs.Job, error) { return f.inner.Get(ctx, id) })
}

func (f *faultJobs) Live(ctx context.Context, before time.Time, limit int) ([]string, error) {
	return read(f.w, ctx, "jobs", "live", func(ctx context.Context) ([]string, error) { return f.inner.mem.Live(ctx, before, limit) })
}

func (f *faultJobs) GetMany(ctx context.Context, ids []string) (map[string]jobs.Job, error) {
	return read(f.w, ctx, "jobs", "get many", func(ctx context.Context) (map[string]jobs.Job, error) { return f.inner.mem.GetMany(ctx, ids) })
}

func (f *faultJobs) Finished(ctx context.Context, after string, before time.Time, limit int) ([]jobs.FinishedJob, error) {
	return read(f.w, ctx, "jobs", "finished", func(ctx context.Context) ([]jobs.FinishedJob, error) {
		return f.inner.mem.Finished(ctx, after, before, limit)
	})
}

// faultS3 is the bucket as every function reaches it: through the fault
// plan, onto the in-memory S3. Every delete is checked against the jobs: it must
// never remove a final job's result or a live job's current candidate.
type faultS3 struct {
	w     *World
	inner candidate.S3API
}

var _ candidate.S3API = (*faultS3)(nil)

func (f *faultS3) PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	return call(f.w, ctx, "s3", "put "+aws.ToString(in.Key), mayConflict, func(ctx context.Context) (*s3.PutObjectOutput, error) { return f.inner.PutObject(ctx, in, opts...) })
}

func (f *faultS3) GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	return read(f.w, ctx, "s3", "get "+aws.ToString(in.Key), func(ctx context.Context) (*s3.GetObjectOutput, error) { return f.inner.GetObject(ctx, in, opts...) })
}

func (f *faultS3) HeadObject(ctx context.Context, in *s3.HeadObjectInput, opts ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	return read(f.w, ctx, "s3", "head "+aws.ToString(in.Key), func(ctx context.Context) (*s3.HeadObjectOutput, error) { return f.inner.HeadObject(ctx, in, opts...) })
}

func (f *faultS3) ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	return read(f.w, ctx, "s3", "list", func(ctx context.Context) (*s3.ListObjectsV2Output, error) {
		return f.inner.ListObjectsV2(ctx, in, opts...)
	})
}

func (f *faultS3) DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, opts ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	key := aws.ToString(in.Key)
	return call(f.w, ctx, "s3", "delete "+key, 0, func(ctx context.Context) (*s3.DeleteObjectOutput, error) {
		f.w.checkDelete(ctx, key)
		return f.inner.DeleteObject(ctx, in, opts...)
	})
}

// faultQuarantine is the quarantine store as the processors reach it:
// Read, Park, Done and Failed go through the fault plan.
type faultQuarantine struct {
	quarantine.Store
	w *World
}

func (f *faultQuarantine) Read(ctx context.Context, queue string, groups []string, keys []quarantine.ItemKey) (map[string]quarantine.HoldRecord, map[quarantine.ItemKey]quarantine.Parked, error) {
	type pair struct {
		h map[string]quarantine.HoldRecord
		p map[quarantine.ItemKey]quarantine.Parked
	}
	got, err := read(f.w, ctx, "quarantine", "quarantine read", func(ctx context.Context) (pair, error) {
		h, p, err := f.Store.Read(ctx, queue, groups, keys)
		return pair{h, p}, err
	})
	return got.h, got.p, err
}

func (f *faultQuarantine) Park(ctx context.Context, queue, group string, items []quarantine.Parked, hold bool, cause string, now time.Time) (quarantine.HoldRecord, error) {
	return call(f.w, ctx, "quarantine", "park "+group, 0, func(ctx context.Context) (quarantine.HoldRecord, error) {
		return f.Store.Park(ctx, queue, group, items, hold, cause, now)
	})
}

func (f *faultQuarantine) Done(ctx context.Context, queue, group, seq string, epoch int64, now time.Time) (quarantine.HoldRecord, error) {
	return call(f.w, ctx, "quarantine", "done "+group, 0, func(ctx context.Context) (quarantine.HoldRecord, error) {
		return f.Store.Done(ctx, queue, group, seq, epoch, now)
	})
}

// Failed counts a Kafka record's failed attempt (pkg/kafka's quarantine;
// the SQS one reads the receive count instead).
func (f *faultQuarantine) Failed(ctx context.Context, queue, group string, fl quarantine.Failure, now time.Time) (quarantine.Attempts, error) {
	return call(f.w, ctx, "quarantine", "failed "+group, 0, func(ctx context.Context) (quarantine.Attempts, error) {
		return f.Store.Failed(ctx, queue, group, fl, now)
	})
}

// The operator's calls: a redrive or a discard can be slow, refused, or
// lose its answer at any request, like the processors'.

func (f *faultQuarantine) BeginRedrive(ctx context.Context, queue, group string, now time.Time) (quarantine.HoldRecord, error) {
	return call(f.w, ctx, "quarantine", "begin redrive "+group, 0, func(ctx context.Context) (quarantine.HoldRecord, error) {
		return f.Store.BeginRedrive(ctx, queue, group, now)
	})
}

func (f *faultQuarantine) Discard(ctx context.Context, queue, group, seq string, now time.Time) (quarantine.HoldRecord, error) {
	return call(f.w, ctx, "quarantine", "discard "+group, 0, func(ctx context.Context) (quarantine.HoldRecord, error) {
		return f.Store.Discard(ctx, queue, group, seq, now)
	})
}

func (f *faultQuarantine) Hold(ctx context.Context, queue, group string) (quarantine.HoldRecord, error) {
	return read(f.w, ctx, "quarantine", "hold "+group, func(ctx context.Context) (quarantine.HoldRecord, error) {
		return f.Store.Hold(ctx, queue, group)
	})
}

func (f *faultQuarantine) Messages(ctx context.Context, queue, group string, status quarantine.Status, after string, limit int) ([]quarantine.Parked, error) {
	return read(f.w, ctx, "quarantine", "messages "+group, func(ctx context.Context) ([]quarantine.Parked, error) {
		return f.Store.Messages(ctx, queue, group, status, after, limit)
	})
}

// slowSender is the queue as the operator's redrive sends to it: a send
// may be slow, never refused (the redrive's retry would wait in real time).
type slowSender struct {
	w *World
	q *Queue
}

func (s slowSender) SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	s.w.slow(ctx, "send a copy to "+s.q.Name)
	out, err := s.q.SendMessage(ctx, in, opts...)
	if err == nil {
		m := s.q.ByID(aws.ToString(out.MessageId))
		s.w.logf("  operator: copy of sequence %d sent to %s as %s", m.CopyOf, s.q.Name, m.ID)
	}
	return out, err
}

// faultProjection is the projection store as the projector and the
// sweeper reach it: through the fault plan, onto the observer.
type faultProjection struct {
	w     *World
	inner projection.Store
}

var _ projection.Store = (*faultProjection)(nil)

func (f *faultProjection) Apply(ctx context.Context, v projection.View, delta int64) (projection.Result, error) {
	return call(f.w, ctx, "projection", "apply "+jobs.OutboxID(v.JobID, v.Version), 0, func(ctx context.Context) (projection.Result, error) {
		return f.inner.Apply(ctx, v, delta)
	})
}

func (f *faultProjection) Recover(ctx context.Context, snap projection.View) (projection.Recovery, error) {
	return call(f.w, ctx, "projection", "recover "+snap.JobID, 0, func(ctx context.Context) (projection.Recovery, error) {
		return f.inner.Recover(ctx, snap)
	})
}

func (f *faultProjection) View(ctx context.Context, id string) (projection.View, error) {
	return read(f.w, ctx, "projection", "view "+id, func(ctx context.Context) (projection.View, error) { return f.inner.View(ctx, id) })
}

func (f *faultProjection) Totals(ctx context.Context, tenant string) (projection.Totals, error) {
	return read(f.w, ctx, "projection", "totals", func(ctx context.Context) (projection.Totals, error) { return f.inner.Totals(ctx, tenant) })
}

func (f *faultProjection) Cursor(ctx context.Context, tenant, id string) (projection.Cursor, error) {
	return read(f.w, ctx, "projection", "cursor "+id, func(ctx context.Context) (projection.Cursor, error) { return f.inner.Cursor(ctx, tenant, id) })
}
