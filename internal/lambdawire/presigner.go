package lambdawire

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fifoworker/fifoworker/internal/app/intake"
)

// ResultPresigner is the signer of accepted results' download links in
// bucket (intake.S3Presigner): the jobs API's, and the operator's
// console's, so that both sign the same way. On a local endpoint the
// emulator (gofakes3) keeps no checksums, so a version is matched by its
// size there.
func ResultPresigner(cfg aws.Config, bucket string) (*intake.S3Presigner, error) {
	client := S3(cfg)
	return intake.NewS3Presigner(intake.S3PresignerConfig{
		Client: client, Presign: s3.NewPresignClient(client), Bucket: bucket,
		EmulatorWithoutChecksums: localEndpoint(cfg, s3.ServiceID),
	})
}
