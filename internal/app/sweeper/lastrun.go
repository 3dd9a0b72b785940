package sweeper

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// LastRunKey is where S3LastRun keeps the last run's report in the
// candidates bucket: beside the cursors, under sweeper/, which the
// sweeper's role may read and write, and outside candidates/.
const LastRunKey = "sweeper/last-run"

// MaxLastRunSize is the longest report S3LastRun reads, in bytes: a
// report is under 1 KiB of counts and flags beside its three cursors,
// each at most an S3 key's 1,024 bytes.
const MaxLastRunSize = 16 << 10

// LastRunSaver keeps a run's report (Config.LastRun); S3LastRun is one.
type LastRunSaver interface {
	Save(ctx context.Context, last LastRun) error
}

// S3LastRun keeps the last run's report as one JSON object (LastRunKey):
// one PutObject per run, one GetObject per read. The sweeper saves with
// its role; the operator's console reads with the operator's credentials.
type S3LastRun struct {
	api    CursorAPI
	bucket string
}

var _ LastRunSaver = (*S3LastRun)(nil)

// S3LastRunConfig configures an S3LastRun.
type S3LastRunConfig struct {
	// Client is the S3 client. Required.
	Client CursorAPI
	// Bucket is the candidates bucket, the cursors'. Required.
	Bucket string
}

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig.
func (c S3LastRunConfig) Validate() error {
	switch {
	case c.Client == nil:
		return fmt.Errorf("%w: Client is nil", ErrInvalidConfig)
	case c.Bucket == "":
		return fmt.Errorf("%w: Bucket is empty", ErrInvalidConfig)
	}
	return nil
}

// NewS3LastRun returns the report kept at LastRunKey in cfg.Bucket, or an
// error wrapping ErrInvalidConfig.
func NewS3LastRun(cfg S3LastRunConfig) (*S3LastRun, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &S3LastRun{api: cfg.Client, bucket: cfg.Bucket}, nil
}

// Save replaces the kept report with last.
func (l *S3LastRun) Save(ctx context.Context, last LastRun) error {
	body, err := json.Marshal(last)
	if err != nil { // a Report holds only numbers, strings and flags
		return fmt.Errorf("sweeper: keep the last run: %w", err)
	}
	_, err = l.api.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(l.bucket),
		Key:           aws.String(LastRunKey),
		Body:          bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))),
		ContentType:   aws.String("application/json"),
	})
	if err != nil {
		return fmt.Errorf("sweeper: keep the last run at s3://%s/%s: %w", l.bucket, LastRunKey, err)
	}
	return nil
}

// LastRun returns the kept report: the console's Sweeps. It fails with
// ErrNoLastRun when no run has kept one (a new stack, or only dry runs so
// far), and with an error that says the object is not a report when its
// body is not a LastRun's JSON with a time, or is over MaxLastRunSize.
func (l *S3LastRun) LastRun(ctx context.Context) (LastRun, error) {
	body, found, err := getSmall(ctx, l.api, l.bucket, LastRunKey, MaxLastRunSize)
	switch {
	case err != nil:
		return LastRun{}, fmt.Errorf("sweeper: read the last run s3://%s/%s: %w", l.bucket, LastRunKey, err)
	case !found:
		return LastRun{}, fmt.Errorf("sweeper: last run s3://%s/%s: %w", l.bucket, LastRunKey, ErrNoLastRun)
	case len(body) > MaxLastRunSize:
		return LastRun{}, l.notReport(fmt.Errorf("over %d bytes", MaxLastRunSize))
	}
	var last LastRun
	if err := json.Unmarshal(body, &last); err != nil {
		return LastRun{}, l.notReport(err)
	}
	if last.At.IsZero() {
		return LastRun{}, l.notReport(fmt.Errorf("it has no time"))
	}
	return last, nil
}

func (l *S3LastRun) notReport(why error) error {
	return fmt.Errorf("sweeper: last run s3://%s/%s is not a report: %w", l.bucket, LastRunKey, why)
}
