package sweeper_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobstest"
)

func TestS3CursorRoundTrip(t *testing.T) {
	t.Parallel()
	fake := newBucket(t, jobstest.NewClock(jobstest.Start).Now)
	c, err := sweeper.NewS3Cursor(sweeper.S3CursorConfig{Client: fake, Bucket: testBucket})
	require.NoError(t, err)
	ctx := t.Context()

	got, err := c.Load(ctx)
	require.NoError(t, err)
	require.Empty(t, got, "no cursor yet: the beginning")
	require.Equal(t, map[string]int{"GetObject": 1}, fake.TakeCalls())

	k := key("job-42", 2, "attempt-b")
	require.NoError(t, c.Save(ctx, k))
	require.Equal(t, k, fake.body(t, sweeper.CursorKey))
	got, err = c.Load(ctx)
	require.NoError(t, err)
	require.Equal(t, k, got)
	require.NoError(t, c.Save(ctx, ""))
	got, err = c.Load(ctx)
	require.NoError(t, err)
	require.Empty(t, got)
	require.Equal(t, map[string]int{"PutObject": 2, "GetObject": 2}, fake.TakeCalls(), "one request per load or save")

	require.Error(t, c.Save(ctx, strings.Repeat("k", 1025)), "longer than any S3 key")
	fake.rawPut(t, sweeper.CursorKey, []byte(strings.Repeat("k", 1025)))
	_, err = c.Load(ctx)
	require.ErrorContains(t, err, "is not a key")
	fake.rawPut(t, sweeper.CursorKey, []byte{0xff, 0xfe})
	_, err = c.Load(ctx)
	require.ErrorContains(t, err, "is not a key")
}

// Under the sweeper's role (s3:ListBucket only for the candidates/ and
// sweeper/ prefixes), S3 answers a GetObject of a missing key with 403,
// not 404. The cursor tells "missing" from "denied" by listing its key.
func TestS3CursorTellsAMissingCursorFromADeniedRead(t *testing.T) {
	t.Parallel()
	fake := newBucket(t, jobstest.NewClock(jobstest.Start).Now)
	fake.deniesMissing = true
	c, err := sweeper.NewS3Cursor(sweeper.S3CursorConfig{Client: fake, Bucket: testBucket})
	require.NoError(t, err)
	ctx := t.Context()
	fake.rawPut(t, "sweeper/cursor-old", []byte("x")) // a neighbour the listing must not mistake for it

	got, err := c.Load(ctx)
	require.NoError(t, err)
	require.Empty(t, got)
	require.Equal(t, map[string]int{"GetObject": 1, "ListObjectsV2": 1}, fake.TakeCalls())

	// A 403 for a cursor that exists is the error it is.
	require.NoError(t, c.Save(ctx, "candidates/job-42"))
	fake.Fail(func(op, _ string) error {
		if op == "GetObject" {
			return apiError("AccessDenied")
		}
		return nil
	})
	_, err = c.Load(ctx)
	require.ErrorContains(t, err, "AccessDenied")
}

func TestMemoryCursor(t *testing.T) {
	t.Parallel()
	var c sweeper.MemoryCursor
	got, err := c.Load(t.Context())
	require.NoError(t, err)
	require.Empty(t, got)
	require.NoError(t, c.Save(t.Context(), "candidates/job-42"))
	got, err = c.Load(t.Context())
	require.NoError(t, err)
	require.Equal(t, "candidates/job-42", got)
}

// A cursor that is not under candidates/ (edited by hand, or written by
// another layout) starts the sweep at the beginning, with a warning.
func TestACursorOutsideThePrefixStartsAtTheBeginning(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, "job-gone", 1, "attempt-a")
	require.NoError(t, b.cursor.Save(b.ctx, "zzz"))
	r := b.run(t, sweeper.Options{})
	require.Equal(t, 1, r.Examined)
	require.Contains(t, b.logs.String(), "the cursor is not under candidates/")
}

// TestNewS3CursorRefusesAnInvalidConfig: a cursor without a client or a
// bucket, or kept outside sweeper/ (where the sweeper's role may not write,
// or under candidates/, where it would be taken for an orphan), is an error
// naming the field.
func TestNewS3CursorRefusesAnInvalidConfig(t *testing.T) {
	t.Parallel()
	fake := newBucket(t, jobstest.NewClock(jobstest.Start).Now)
	for _, tc := range []struct {
		name  string
		cfg   sweeper.S3CursorConfig
		field string // "" when the configuration is valid
	}{
		{"the sweep's cursor", sweeper.S3CursorConfig{Client: fake, Bucket: testBucket}, ""},
		{"the repair's cursor", sweeper.S3CursorConfig{Client: fake, Bucket: testBucket, Key: sweeper.RepairCursorKey}, ""},
		{"no client", sweeper.S3CursorConfig{Bucket: testBucket}, "Client"},
		{"no bucket", sweeper.S3CursorConfig{Client: fake}, "Bucket"},
		{"a candidate's key", sweeper.S3CursorConfig{Client: fake, Bucket: testBucket, Key: "candidates/cursor"}, "Key"},
		{"the prefix alone", sweeper.S3CursorConfig{Client: fake, Bucket: testBucket, Key: "sweeper/"}, "Key"},
	} {
		c, err := sweeper.NewS3Cursor(tc.cfg)
		if tc.field == "" {
			require.NoError(t, err, tc.name)
			require.NotNil(t, c, tc.name)
			continue
		}
		require.ErrorIs(t, err, sweeper.ErrInvalidConfig, tc.name)
		require.ErrorContains(t, err, tc.field, tc.name)
		require.Nil(t, c, tc.name)
	}
}
