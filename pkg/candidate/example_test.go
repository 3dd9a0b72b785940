package candidate_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/s3mem"
)

// The running example: worker A (generation 1) stalled, worker B
// (generation 2) took over. Each writes its own candidate, neither can
// overwrite the other, and the job store accepts B's by its key.
func Example() {
	ctx := context.Background()
	bucket, err := s3mem.New(s3mem.Config{Buckets: []string{"candidates-test"}}) // in a function: s3.NewFromConfig(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	store, err := candidate.New(candidate.Config{Client: bucket, Bucket: "candidates-test"})
	if err != nil {
		fmt.Println("invalid configuration:", err)
		return
	}

	keyB, err := candidate.NewKey("job-42", 2, "worker-b", "json")
	if err != nil {
		fmt.Println(err)
		return
	}
	w, err := store.Create(ctx, keyB)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = w.Close() }() // discards the spool if Commit is not reached
	fmt.Fprint(w, `{"articles":120}`)
	res, err := w.Commit()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("B wrote", res.Key, res.Size, "bytes, sha256", res.SHA256[:12]+"…")

	// A finishes late: its candidate goes to its own key.
	keyA, _ := candidate.NewKey("job-42", 1, "worker-a", "json")
	if _, err := store.Put(ctx, keyA, strings.NewReader(`{"articles":100}`)); err != nil {
		fmt.Println(err)
		return
	}

	// Nothing can replace B's candidate.
	_, err = store.Put(ctx, keyB, strings.NewReader(`{"articles":0}`))
	fmt.Println("overwrite refused:", errors.Is(err, candidate.ErrExists))

	entries, err := store.List(ctx, "job-42")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range entries {
		fmt.Println("listed", e.Key)
	}

	r, err := store.Open(ctx, keyB)
	if err != nil {
		fmt.Println(err)
		return
	}
	body, err := io.ReadAll(r) // fails if the content does not match its SHA-256
	fmt.Println(string(body), err, r.Close())
	// Output:
	// B wrote candidates/job-42/g0000000002/worker-b.json 16 bytes, sha256 feab2bce1302…
	// overwrite refused: true
	// listed candidates/job-42/g0000000001/worker-a.json
	// listed candidates/job-42/g0000000002/worker-b.json
	// {"articles":120} <nil> <nil>
}

func ExampleParseKey() {
	k, err := candidate.ParseKey("candidates/job-42/g0000000002/worker-b.json")
	fmt.Println(k.JobID, k.Generation, k.AttemptID, k.Ext, err)

	_, err = candidate.ParseKey("candidates/job-42/g2/worker-b.json")
	fmt.Println(err)
	// Output:
	// job-42 2 worker-b json <nil>
	// candidate: "candidates/job-42/g2/worker-b.json" is not a candidate key: the generation is not g followed by 10 digits: invalid candidate key
}

func ExampleNewKey() {
	_, err := candidate.NewKey("../job-42", 1, "worker-a", "json")
	fmt.Println(err)
	// Output:
	// candidate: job id "../job-42" has byte '.' at offset 0; only A-Z a-z 0-9 _ - are allowed: invalid candidate key
}

// New refuses a Config that cannot work, naming the field: here a spool
// budget that cannot hold one candidate of the max size.
func ExampleNew() {
	bucket, err := s3mem.New(s3mem.Config{Buckets: []string{"candidates-test"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = candidate.New(candidate.Config{
		Client:      bucket,
		Bucket:      "candidates-test",
		MaxSize:     128 << 20,
		SpoolBudget: 100 << 20,
	})
	fmt.Println(errors.Is(err, candidate.ErrInvalidConfig), errors.Is(err, candidate.ErrBudgetTooSmall))
	fmt.Println(err)
	// Output:
	// true true
	// candidate: invalid configuration: SpoolBudget: candidate: max size 134217728 is above the spool budget 104857600: a candidate of the max size cannot fit the spool budget
}
