package s3memtest_test

import (
	"testing"

	"github.com/fifoworker/fifoworker/pkg/s3mem"
	"github.com/fifoworker/fifoworker/pkg/s3mem/s3memtest"
)

// An S3 is held to the suite from its own test file, which hands Run a
// function that makes an empty bucket for each test. On a real endpoint
// the function creates one (CreateBucket) and the run declares the
// server's known deviations from AWS. The suite needs a *testing.T, so
// this example is compiled, not run; pkg/s3mem's conformance_test.go runs
// it.
func Example() {
	var newBucket s3memtest.NewBucket = func(t *testing.T) s3memtest.Bucket {
		m, err := s3mem.New(s3mem.Config{Buckets: []string{"conformance"}})
		if err != nil {
			t.Fatal(err)
		}
		return s3memtest.Bucket{Client: m, Name: "conformance"}
	}
	// In a _test.go file:
	//
	//	func TestConformance(t *testing.T) { s3memtest.Run(t, newBucket) }
	//
	// and on the local stack's emulator:
	//
	//	s3memtest.Run(t, newEmulatorBucket, s3memtest.IfNoneMatchIgnored, ...)
	_ = newBucket
}
