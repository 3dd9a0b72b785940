package s3mem_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/s3mem"
	"github.com/fifoworker/fifoworker/pkg/s3mem/s3memtest"
)

var (
	_ s3memtest.API = (*s3mem.S3)(nil)
	_ s3memtest.API = (*s3mem.FaultyS3)(nil)
)

// TestConformance holds the in-memory S3 to the suite that
// TestIntegrationConformance holds the local stack's emulator to, with no
// deviation declared: where the emulator differs from AWS, s3mem does
// what AWS does.
func TestConformance(t *testing.T) {
	t.Parallel()
	s3memtest.Run(t, newBucket(func(cfg s3mem.Config) (s3memtest.API, error) { return s3mem.New(cfg) }))
}

// TestFaultyConformance holds a FaultyS3 told to fail nothing to the
// suite: every request it neither fails nor holds is the S3's to answer.
func TestFaultyConformance(t *testing.T) {
	t.Parallel()
	s3memtest.Run(t, newBucket(func(cfg s3mem.Config) (s3memtest.API, error) { return s3mem.NewFaultyS3(cfg) }))
}

// newBucket gives each test of the suite an S3 of its own, made by
// newS3, with one empty bucket.
func newBucket(newS3 func(s3mem.Config) (s3memtest.API, error)) s3memtest.NewBucket {
	return func(t *testing.T) s3memtest.Bucket {
		const name = "conformance"
		client, err := newS3(s3mem.Config{Buckets: []string{name}})
		require.NoError(t, err)
		return s3memtest.Bucket{Client: client, Name: name}
	}
}
