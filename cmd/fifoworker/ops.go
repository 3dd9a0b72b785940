package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/fifoworker/fifoworker/internal/app/outbox/kafkaout"
	"github.com/fifoworker/fifoworker/internal/lambdawire"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// The operator's commands (jobs, quarantine, sweep) work on a local stack
// and a real account alike: the SDK's standard configuration (AWS_PROFILE,
// AWS_REGION, AWS_ENDPOINT_URL for a local stack) says where, and the
// resources are named by flags or by the FIFOWORKER_* variables that
// `fifoworker local deploy` prints from template.yaml's outputs (set them
// from the stack's outputs for a real deployment).

// opsEnv is where the operator's commands find their resources (see
// target).
type opsEnv struct {
	getenv func(string) string
	stdin  io.Reader
	now    func() time.Time
	open   opener
	// stacks reads a local stack's env file: its variables and its path
	// (readStack). Nil: there are no local stacks.
	stacks func(name string) (vars map[string]string, path string, err error)
	// connect returns the opener of the resources with a stack's variables
	// (nil: the process environment), whose clients log through log
	// (connectAWS). Nil: open stays as it is.
	connect func(vars map[string]string, log *slog.Logger) opener
	// origin says where getenv's names come from, when not from the
	// environment: "the env file of stack serve (...)".
	origin string
}

func defaultOpsEnv() opsEnv {
	return opsEnv{getenv: os.Getenv, stdin: os.Stdin, now: time.Now, stacks: readStack, connect: connectAWS}
}

// resource returns the flag's value, or the output variable's.
func (e opsEnv) resource(flagValue, output, flagName string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if v := e.getenv(outputVar(output)); v != "" {
		return v, nil
	}
	if e.origin != "" {
		return "", fmt.Errorf("no %s: pass --%s; %s sets no %s", outputWords(output), flagName, e.origin, outputVar(output))
	}
	return "", fmt.Errorf("no %s: pass --%s or set %s (fifoworker local serve, or eval \"$(fifoworker local deploy)\", gives it for a local stack; --stack reads a local stack's)",
		outputWords(output), flagName, outputVar(output))
}

// outputWords names an output for a person: CommandsQueueUrl -> commands
// queue URL.
func outputWords(output string) string {
	words := strings.Split(strings.ToLower(strings.TrimPrefix(outputVar(output), "FIFOWORKER_")), "_")
	for i, w := range words {
		switch w {
		case "url", "arn", "dlq":
			words[i] = strings.ToUpper(w)
		}
	}
	return strings.Join(words, " ")
}

// opener opens what the operator's commands work on, after checking that
// it exists: awsOpener the real resources, the unit tests fakes.
type opener interface {
	jobsStore(ctx context.Context, table, hint string) (jobsStore, error)
	quarantineOperator(ctx context.Context, t quarantineTarget) (*quarantine.Operator, error)
	sweeper(ctx context.Context, s sweepTarget, log *slog.Logger) (sweepFunc, error)
	consoleSources(ctx context.Context, t consoleTarget) (consoleParts, error) // console.go
}

// jobsStore is what the jobs commands call; *jobs.DynamoStore and
// *jobs.MemoryStore have it.
type jobsStore interface {
	Get(ctx context.Context, id string) (jobs.Job, error)
	Cancel(ctx context.Context, req jobs.CancelRequest) (jobs.Job, error)
	jobs.ListStore
}

var (
	_ jobsStore = (*jobs.DynamoStore)(nil)
	_ jobsStore = (*jobs.MemoryStore)(nil)
)

// quarantineTarget is the quarantine a command works on. The hints say
// where a name came from, for the error that says it is wrong.
type quarantineTarget struct {
	QueueURL, Queue, QueueHint string
	Table, TableHint           string
	Bucket, BucketHint         string // "" when none is configured
	NeedBucket                 bool   // check the bucket (discard archives there)
	// Progress, when set, is told of each copy a redrive sends.
	Progress func(quarantine.RedriveProgress)
	// Kafka: Queue is a topic's name (QueueURL is empty), and a redrive
	// produces its copies to Brokers (none: no redrive) with SASL
	// mechanism SASL ("" for none).
	Kafka   bool
	Brokers []string
	SASL    string
}

// awsOpener opens the resources with the SDK's standard configuration.
type awsOpener struct {
	load func(context.Context) (aws.Config, error)
}

func (o awsOpener) jobsStore(ctx context.Context, table, hint string) (jobsStore, error) {
	cfg, err := o.load(ctx)
	if err != nil {
		return nil, err
	}
	db := lambdawire.DynamoDB(cfg) // as the functions': no CRC32 check against DynamoDB Local
	if err := checkTable(ctx, db, table, hint); err != nil {
		return nil, err
	}
	// As many shards as jobs were written with: the listings walk them all.
	shards, err := jobs.RecordedLiveShards(ctx, db, table)
	if err != nil {
		return nil, err
	}
	store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: db, Table: table, LiveShards: min(shards, jobs.MaxLiveShards)})
	if err != nil {
		return nil, err
	}
	return store, nil
}

func (o awsOpener) quarantineOperator(ctx context.Context, t quarantineTarget) (*quarantine.Operator, error) {
	cfg, err := o.load(ctx)
	if err != nil {
		return nil, err
	}
	var op quarantine.OperatorConfig
	if t.Kafka {
		if len(t.Brokers) > 0 {
			records, err := newKafkaRecords(t.Brokers, t.SASL, kafkaout.ProducerConfig{Credentials: cfg.Credentials})
			if err != nil {
				return nil, err
			}
			op.Records = records
		}
	} else {
		queues := sqs.NewFromConfig(cfg)
		if err := checkQueue(ctx, queues, t.QueueURL, t.QueueHint); err != nil {
			return nil, err
		}
		op.QueueURL, op.Sender = t.QueueURL, queues
	}
	db := lambdawire.DynamoDB(cfg)
	if err := checkTable(ctx, db, t.Table, t.TableHint); err != nil {
		return nil, err
	}
	store, err := quarantine.NewDynamoStore(quarantine.DynamoConfig{Client: db, Table: t.Table})
	if err != nil {
		return nil, err
	}
	op.Store, op.Queue, op.Progress = store, t.Queue, t.Progress
	if t.Bucket != "" {
		s3c := lambdawire.S3(cfg)
		if t.NeedBucket {
			if err := checkBucket(ctx, s3c, t.Bucket, t.BucketHint); err != nil {
				return nil, err
			}
		}
		if op.Bodies, err = quarantine.NewS3Bodies(quarantine.S3BodiesConfig{Client: s3c, Bucket: t.Bucket}); err != nil {
			return nil, err
		}
	}
	return quarantine.NewOperator(op)
}

// errMissing marks a table, queue or bucket that does not exist.
var errMissing = errors.New("it does not exist")

type tableDescriber interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// checkTable says clearly when the table is not there, rather than
// letting the first read fail with the SDK's words. hint says where the
// name came from.
func checkTable(ctx context.Context, db tableDescriber, table, hint string) error {
	_, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	var nf *dbtypes.ResourceNotFoundException
	switch {
	case err == nil:
		return nil
	case errors.As(err, &nf):
		return fmt.Errorf("table %s: %w (check %s, and the region and endpoint the AWS configuration gives)", table, errMissing, hint)
	}
	return fmt.Errorf("table %s: %w", table, err)
}

type queueAttributes interface {
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// checkQueue says clearly when the queue is not there.
func checkQueue(ctx context.Context, q queueAttributes, url, hint string) error {
	_, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameFifoQueue},
	})
	var nf *sqstypes.QueueDoesNotExist
	var api smithy.APIError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &nf), errors.As(err, &api) && (strings.Contains(api.ErrorCode(), "NonExistentQueue") || api.ErrorCode() == "QueueDoesNotExist"):
		return fmt.Errorf("queue %s: %w (check %s)", url, errMissing, hint)
	}
	return fmt.Errorf("queue %s: %w", url, err)
}

type bucketHeader interface {
	HeadBucket(ctx context.Context, in *s3.HeadBucketInput, optFns ...func(*s3.Options)) (*s3.HeadBucketOutput, error)
}

// checkBucket says clearly when the bucket is not there.
func checkBucket(ctx context.Context, b bucketHeader, bucket, hint string) error {
	_, err := b.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)})
	var nf *s3types.NotFound
	var nb *s3types.NoSuchBucket
	switch {
	case err == nil:
		return nil
	case errors.As(err, &nf), errors.As(err, &nb):
		return fmt.Errorf("bucket %s: %w (check %s)", bucket, errMissing, hint)
	}
	return fmt.Errorf("bucket %s: %w", bucket, err)
}

// hint says where a resource's name came from.
func (e opsEnv) hint(flagValue, flagName, output string) string {
	switch {
	case flagValue != "":
		return "--" + flagName
	case e.origin != "":
		return outputVar(output) + " in " + e.origin
	}
	return outputVar(output)
}

// printJSON writes v as one indented JSON document.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// oneLine is s on one line, cut to n runes.
func oneLine(s string, n int) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return string(r)
}
