package localesm

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"
)

func TestSQSConfigValidate(t *testing.T) {
	t.Parallel()
	valid := SQSConfig{QueueURL: "http://127.0.0.1:19324/000000000000/q.fifo"}
	require.NoError(t, valid.Validate(), "only the queue URL is required")
	d := valid.withDefaults()
	require.Equal(t, DefaultSQSBatchSize, d.BatchSize)
	require.Equal(t, DefaultMaximumConcurrency, d.MaximumConcurrency)
	require.Equal(t, DefaultFunctionTimeout, d.FunctionTimeout)
	require.Equal(t, DefaultPollWait, d.PollWait)
	require.Equal(t, DefaultFunctionARN, d.FunctionARN)
	require.NotNil(t, d.Logger)

	bad := map[string]func(*SQSConfig){
		"no queue":              func(c *SQSConfig) { c.QueueURL = "" },
		"batch of 11":           func(c *SQSConfig) { c.BatchSize = 11 },
		"negative batch":        func(c *SQSConfig) { c.BatchSize = -1 },
		"concurrency 1":         func(c *SQSConfig) { c.MaximumConcurrency = 1 },
		"concurrency 1001":      func(c *SQSConfig) { c.MaximumConcurrency = 1001 },
		"negative timeout":      func(c *SQSConfig) { c.FunctionTimeout = -time.Second },
		"timeout over 15m":      func(c *SQSConfig) { c.FunctionTimeout = 16 * time.Minute },
		"poll wait over 20s":    func(c *SQSConfig) { c.PollWait = 21 * time.Second },
		"fractional poll wait":  func(c *SQSConfig) { c.PollWait = 1500 * time.Millisecond },
		"negative poll wait":    func(c *SQSConfig) { c.PollWait = -time.Second },
		"negative batch size 0": func(c *SQSConfig) { c.BatchSize = -10 },
	}
	for name, mutate := range bad {
		c := valid
		mutate(&c)
		require.Error(t, c.Validate(), name)
		_, err := NewSQSMapping(&sqs.Client{}, Func(func(context.Context, struct{}) (struct{}, error) { return struct{}{}, nil }), c)
		require.Error(t, err, name)
	}
	for _, n := range []int{1, 10} {
		c := valid
		c.BatchSize = n
		require.NoError(t, c.Validate(), "batch size %d", n)
	}
}

func TestStreamConfigValidate(t *testing.T) {
	t.Parallel()
	valid := StreamConfig{StreamARN: testStreamARN}
	require.NoError(t, valid.Validate(), "only the stream ARN is required")
	d := valid.withDefaults()
	require.Equal(t, TrimHorizon, d.StartingPosition)
	require.Equal(t, DefaultStreamBatchSize, d.BatchSize)
	require.Nil(t, d.MaximumRetryAttempts)
	require.Equal(t, retryForever, d.maxRetries(), "the zero value retries until success, like Lambda")
	require.Equal(t, DefaultPollInterval, d.PollInterval)

	bad := map[string]func(*StreamConfig){
		"no stream":          func(c *StreamConfig) { c.StreamARN = "" },
		"not an ARN":         func(c *StreamConfig) { c.StreamARN = "table/x/stream/y" },
		"odd position":       func(c *StreamConfig) { c.StartingPosition = "AT_TIMESTAMP" },
		"batch over 1000":    func(c *StreamConfig) { c.BatchSize = 1001 },
		"retries below -1":   func(c *StreamConfig) { c.MaximumRetryAttempts = new(-2) },
		"retries over 10000": func(c *StreamConfig) { c.MaximumRetryAttempts = new(10001) },
		// Bounded retries discard records: only with a record of them.
		"no retry without on-failure":  func(c *StreamConfig) { c.MaximumRetryAttempts = new(0) },
		"3 retries without on-failure": func(c *StreamConfig) { c.MaximumRetryAttempts = new(3) },
		"FIFO on-failure": func(c *StreamConfig) {
			c.OnFailure = &OnFailureDestination{Client: &sqs.Client{}, QueueURL: "http://h/1/q.fifo"}
		},
		"on-failure no client": func(c *StreamConfig) { c.OnFailure = &OnFailureDestination{QueueURL: "http://h/1/q"} },
		"negative poll":        func(c *StreamConfig) { c.PollInterval = -time.Second },
	}
	for name, mutate := range bad {
		c := valid
		mutate(&c)
		require.Error(t, c.Validate(), name)
	}
	onFailure := &OnFailureDestination{Client: &sqs.Client{}, QueueURL: "http://h/1/stream-failures"}
	for _, n := range []int{-1, 0, 10000} {
		c := valid
		c.MaximumRetryAttempts = &n
		c.OnFailure = onFailure
		require.NoError(t, c.Validate(), "retries %d", n)
	}
	c := valid
	c.MaximumRetryAttempts = new(-1)
	require.NoError(t, c.Validate(), "retrying until success needs no on-failure destination")
	n := 3
	c.MaximumRetryAttempts, c.OnFailure = &n, onFailure
	d = c.withDefaults()
	n = 7
	require.Equal(t, 3, d.maxRetries(), "the mapping does not share the caller's int")
	c = valid
	c.OnFailure = onFailure
	c.StartingPosition = Latest
	require.NoError(t, c.Validate())
}

func TestSQSMappingConcurrencyFollowsTheInvoker(t *testing.T) {
	t.Parallel()
	fn := Func(func(context.Context, struct{}) (struct{}, error) { return struct{}{}, nil })
	cfg := SQSConfig{QueueURL: "http://127.0.0.1:19324/000000000000/q.fifo"}
	m, err := NewSQSMapping(&sqs.Client{}, fn, cfg)
	require.NoError(t, err)
	require.Equal(t, DefaultMaximumConcurrency, m.Concurrency(), "Func sets no bound")
	m, err = NewSQSMapping(&sqs.Client{}, NewRIE("127.0.0.1:9001"), cfg)
	require.NoError(t, err)
	require.Equal(t, 1, m.Concurrency(), "the emulator runs one invocation at a time")
	cfg.MaximumConcurrency = 2
	m, err = NewSQSMapping(&sqs.Client{}, limitedInvoker{Invoker: fn, n: 3}, cfg)
	require.NoError(t, err)
	require.Equal(t, 2, m.Concurrency(), "a higher bound of the invoker does not raise MaximumConcurrency")
}

type limitedInvoker struct {
	Invoker
	n int
}

func (l limitedInvoker) MaxConcurrency() int { return l.n }

func TestNewRequestIDIsAVersion4UUID(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 100 {
		id := newRequestID()
		require.Regexp(t, re, id)
		require.False(t, seen[id])
		seen[id] = true
	}
}
