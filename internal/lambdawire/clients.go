package lambdawire

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

// S3 returns an S3 client; with an endpoint override (a local emulator on
// 127.0.0.1, which has no virtual-host names) it addresses buckets by path.
func S3(cfg aws.Config) *s3.Client {
	local := localEndpoint(cfg, s3.ServiceID)
	return s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = local })
}

// DynamoDB returns a DynamoDB client. With an endpoint override (DynamoDB
// Local) it does not check responses' CRC32: DynamoDB Local's error
// responses carry none, and the SDK would warn of each conditional write
// refused. The CLI's clients are built here too, for the same reason.
func DynamoDB(cfg aws.Config) *dynamodb.Client {
	local := localEndpoint(cfg, dynamodb.ServiceID)
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.DisableValidateResponseChecksum = local })
}

// localEndpoint reports whether cfg sends the service's requests (sdkID,
// e.g. dynamodb.ServiceID) to an endpoint of its own instead of AWS's
// (startup.ServiceEndpoint): here, a local emulator.
func localEndpoint(cfg aws.Config, sdkID string) bool {
	_, ok := startup.ServiceEndpoint(cfg, sdkID)
	return ok
}
