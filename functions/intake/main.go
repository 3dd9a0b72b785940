// Command intake is the jobs API's function behind API Gateway's HTTP API
// (payload format 2.0, JWT authorizer). It only wires: settings from the
// environment, the SDK clients, lambda.Start; the logic is pkg/intake.
//
// Environment:
//
//	JOBS_TABLE         the Jobs table (required)
//	CANDIDATES_BUCKET  the bucket of the results it presigns GETs for (required)
//	TENANT_CLAIM       the JWT claim naming the tenant (default "tenant"; Cognito: "custom:tenant")
//	RESULT_URL_TTL     how long a result URL is valid (default 5m, between 1s and 1h)
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fifoworker/fifoworker/internal/lambdawire"
	"github.com/fifoworker/fifoworker/pkg/intake"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

func main() {
	log := lambdawire.Logger()
	env := lambdawire.NewEnv()
	table := env.String("JOBS_TABLE")
	bucket := env.String("CANDIDATES_BUCKET")
	claim := env.StringOr("TENANT_CLAIM", intake.DefaultTenantClaim)
	ttl := env.Duration("RESULT_URL_TTL", intake.DefaultResultURLTTL, intake.MinResultURLTTL, intake.MaxResultURLTTL)
	if err := env.Err(); err != nil {
		lambdawire.Fatal(log, err)
	}

	cfg, err := lambdawire.AWSConfig(context.Background())
	if err != nil {
		lambdawire.Fatal(log, err)
	}
	presigner, err := intake.NewS3Presigner(s3.NewPresignClient(s3.NewFromConfig(cfg)), bucket)
	if err != nil {
		lambdawire.Fatal(log, err)
	}
	h, err := intake.New(intake.Config{
		Store:        jobs.NewDynamoStore(dynamodb.NewFromConfig(cfg), table),
		Presigner:    presigner,
		TenantClaim:  claim,
		ResultURLTTL: ttl,
		Logger:       log,
	})
	if err != nil {
		lambdawire.Fatal(log, err)
	}
	lambda.Start(h.Handle)
}
