//go:build integration

package s3mem_test

import (
	"testing"

	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/s3mem/s3memtest"
)

// TestIntegrationConformance holds the local stack's S3 emulator to the
// suite TestConformance holds s3mem to, with the emulator's known
// deviations from AWS declared (see each Deviation).
func TestIntegrationConformance(t *testing.T) {
	t.Parallel()
	s3memtest.Run(t, func(t *testing.T) s3memtest.Bucket {
		// awstest's client closes its idle connections when the test ends
		// (that cleanup, registered first, runs last).
		client := awstest.S3(t)
		return s3memtest.Bucket{Client: client, Name: awstest.Bucket(t, client, "s3conf")}
	},
		s3memtest.IfNoneMatchIgnored, s3memtest.ChecksumsAsPlainHeaders, s3memtest.MaxKeysBelowOneIgnored,
		s3memtest.FullPageNamesANextToken, s3memtest.ListEntriesLoose, s3memtest.ReplaceKeepsMetadata)
}
