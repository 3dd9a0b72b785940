package s3memtest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"
)

func ifNoneMatch(v string) func(*s3.PutObjectInput) {
	return func(in *s3.PutObjectInput) { in.IfNoneMatch = aws.String(v) }
}

// If-None-Match "*" writes a key that holds nothing and refuses, with 412
// PreconditionFailed, a key that holds an object, which stays as it was
// (AWS's conditional writes). Once the object is deleted, the key may be
// written again.
func testIfNoneMatchStar(t *testing.T, b *bundle) {
	b.put(t, "k", "first", ifNoneMatch("*"))
	in := b.putInput("k", "second")
	ifNoneMatch("*")(in)
	_, err := b.Client.PutObject(b.ctx, in)
	require.Equal(t, "PreconditionFailed", code(err), "%v", err)
	b.requireState(t, map[string]string{"k": "first"})

	_, err = b.Client.DeleteObject(b.ctx, &s3.DeleteObjectInput{Bucket: aws.String(b.Name), Key: aws.String("k")})
	require.NoError(t, err)
	b.put(t, "k", "third", ifNoneMatch("*"))
	b.requireState(t, map[string]string{"k": "third"})
}

// If-None-Match takes only "*" on a put (AWS's PutObject reference:
// "Expects the '*' (asterisk) character"); S3 answers any other value,
// an ETag included, with 501 NotImplemented, and writes nothing (as
// reported against AWS in aws/aws-sdk-ruby#3144).
func testIfNoneMatchOther(t *testing.T, b *bundle) {
	out := b.put(t, "k", "first")
	for key, value := range map[string]string{"k": aws.ToString(out.ETag), "new": `"0123456789abcdef0123456789abcdef"`} {
		in := b.putInput(key, "second")
		ifNoneMatch(value)(in)
		_, err := b.Client.PutObject(b.ctx, in)
		if b.deviates(IfNoneMatchIgnored) {
			require.NoError(t, err, "If-None-Match %s on %s", value, key)
			continue
		}
		require.Equal(t, "NotImplemented", code(err), "If-None-Match %s on %s: %v", value, key, err)
	}
	if b.deviates(IfNoneMatchIgnored) {
		b.requireState(t, map[string]string{"k": "second", "new": "second"})
		return
	}
	b.requireState(t, map[string]string{"k": "first"})
}

// Of conditional puts of one key at once, exactly one wins; every other
// one is refused with 412 PreconditionFailed, or with 409
// ConditionalRequestConflict, which AWS may answer while the winner is
// still being written. The object is the winner's.
func testConcurrentConditionalPuts(t *testing.T, b *bundle) {
	const n = 8
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		errs  = make([]error, n)
	)
	for i := range n {
		wg.Go(func() {
			in := b.putInput("k", fmt.Sprintf("writer %d", i))
			ifNoneMatch("*")(in)
			<-start
			_, errs[i] = b.Client.PutObject(b.ctx, in)
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		if err == nil {
			require.Equal(t, -1, winner, "writers %d and %d both won", winner, i)
			winner = i
			continue
		}
		require.Contains(t, []string{"PreconditionFailed", "ConditionalRequestConflict"}, code(err), "writer %d: %v", i, err)
	}
	require.NotEqual(t, -1, winner, "nobody won")
	b.requireState(t, map[string]string{"k": fmt.Sprintf("writer %d", winner)})
}
