package localesm

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"
)

// noop is an invoker for configurations that are never run.
var noop = Func(func(context.Context, struct{}) (struct{}, error) { return struct{}{}, nil })

// requireInvalid requires err to wrap ErrInvalidConfig and name field.
func requireInvalid(t *testing.T, err error, field, name string) {
	t.Helper()
	require.ErrorIs(t, err, ErrInvalidConfig, name)
	require.ErrorContains(t, err, field, name)
}

func TestSQSConfigValidate(t *testing.T) {
	t.Parallel()
	valid := SQSConfig{Client: &sqs.Client{}, Invoker: noop, QueueURL: "http://127.0.0.1:19324/000000000000/q.fifo"}
	require.NoError(t, valid.Validate(), "only the client, the invoker and the queue URL are required")
	d := valid.withDefaults()
	require.Equal(t, DefaultSQSBatchSize, d.BatchSize)
	require.Equal(t, DefaultMaximumConcurrency, d.MaximumConcurrency)
	require.Equal(t, DefaultFunctionTimeout, d.FunctionTimeout)
	require.Equal(t, DefaultPollWait, d.PollWait)
	require.Equal(t, DefaultFunctionARN, d.FunctionARN)
	require.NotNil(t, d.Logger)

	bad := map[string]struct {
		mutate func(*SQSConfig)
		field  string
	}{
		"no client":            {func(c *SQSConfig) { c.Client = nil }, "Client"},
		"no invoker":           {func(c *SQSConfig) { c.Invoker = nil }, "Invoker"},
		"no queue":             {func(c *SQSConfig) { c.QueueURL = "" }, "QueueURL"},
		"batch of 11":          {func(c *SQSConfig) { c.BatchSize = 11 }, "BatchSize"},
		"negative batch":       {func(c *SQSConfig) { c.BatchSize = -1 }, "BatchSize"},
		"concurrency 1":        {func(c *SQSConfig) { c.MaximumConcurrency = 1 }, "MaximumConcurrency"},
		"concurrency 1001":     {func(c *SQSConfig) { c.MaximumConcurrency = 1001 }, "MaximumConcurrency"},
		"negative timeout":     {func(c *SQSConfig) { c.FunctionTimeout = -time.Second }, "FunctionTimeout"},
		"timeout over 15m":     {func(c *SQSConfig) { c.FunctionTimeout = 15*time.Minute + time.Nanosecond }, "FunctionTimeout"},
		"poll wait over 20s":   {func(c *SQSConfig) { c.PollWait = 21 * time.Second }, "PollWait"},
		"fractional poll wait": {func(c *SQSConfig) { c.PollWait = 1500 * time.Millisecond }, "PollWait"},
		"negative poll wait":   {func(c *SQSConfig) { c.PollWait = -time.Second }, "PollWait"},
	}
	for name, tc := range bad {
		c := valid
		tc.mutate(&c)
		requireInvalid(t, c.Validate(), tc.field, name)
		m, err := NewSQSMapping(c)
		requireInvalid(t, err, tc.field, name)
		require.Nil(t, m, name)
	}
	// Each bound is a valid setting itself.
	for name, mutate := range map[string]func(*SQSConfig){
		"batch of 1":       func(c *SQSConfig) { c.BatchSize = 1 },
		"batch of 10":      func(c *SQSConfig) { c.BatchSize = 10 },
		"concurrency 2":    func(c *SQSConfig) { c.MaximumConcurrency = 2 },
		"concurrency 1000": func(c *SQSConfig) { c.MaximumConcurrency = 1000 },
		"timeout of 15m":   func(c *SQSConfig) { c.FunctionTimeout = 15 * time.Minute },
		"poll wait of 1s":  func(c *SQSConfig) { c.PollWait = time.Second },
		"poll wait of 20s": func(c *SQSConfig) { c.PollWait = 20 * time.Second },
	} {
		c := valid
		mutate(&c)
		require.NoError(t, c.Validate(), name)
		_, err := NewSQSMapping(c)
		require.NoError(t, err, name)
	}
}

func TestStreamConfigValidate(t *testing.T) {
	t.Parallel()
	valid := StreamConfig{Client: &dynamodbstreams.Client{}, Invoker: noop, StreamARN: testStreamARN}
	require.NoError(t, valid.Validate(), "only the client, the invoker and the stream ARN are required")
	d := valid.withDefaults()
	require.Equal(t, TrimHorizon, d.StartingPosition)
	require.Equal(t, DefaultStreamBatchSize, d.BatchSize)
	require.Nil(t, d.MaximumRetryAttempts)
	require.Equal(t, retryForever, d.maxRetries(), "the zero value retries until success, like Lambda")
	require.Equal(t, DefaultPollInterval, d.PollInterval)

	onFailure := &OnFailureDestination{Client: &sqs.Client{}, QueueURL: "http://h/1/stream-failures"}
	bad := map[string]struct {
		mutate func(*StreamConfig)
		field  string
	}{
		"no client":       {func(c *StreamConfig) { c.Client = nil }, "Client"},
		"no invoker":      {func(c *StreamConfig) { c.Invoker = nil }, "Invoker"},
		"no stream":       {func(c *StreamConfig) { c.StreamARN = "" }, "StreamARN"},
		"not an ARN":      {func(c *StreamConfig) { c.StreamARN = "table/x/stream/y" }, "StreamARN"},
		"odd position":    {func(c *StreamConfig) { c.StartingPosition = "AT_TIMESTAMP" }, "StartingPosition"},
		"batch over 1000": {func(c *StreamConfig) { c.BatchSize = 1001 }, "BatchSize"},
		// With an on-failure destination, so that only the bound can
		// refuse them: the error without one names MaximumRetryAttempts too.
		"retries below -1":   {func(c *StreamConfig) { c.MaximumRetryAttempts, c.OnFailure = new(-2), onFailure }, "MaximumRetryAttempts"},
		"retries over 10000": {func(c *StreamConfig) { c.MaximumRetryAttempts, c.OnFailure = new(10001), onFailure }, "MaximumRetryAttempts"},
		// Bounded retries discard records: only with a record of them.
		"no retry without on-failure":  {func(c *StreamConfig) { c.MaximumRetryAttempts = new(0) }, "OnFailure"},
		"3 retries without on-failure": {func(c *StreamConfig) { c.MaximumRetryAttempts = new(3) }, "OnFailure"},
		"FIFO on-failure": {func(c *StreamConfig) {
			c.OnFailure = &OnFailureDestination{Client: &sqs.Client{}, QueueURL: "http://h/1/q.fifo"}
		}, "OnFailure.QueueURL"},
		"on-failure no client": {func(c *StreamConfig) { c.OnFailure = &OnFailureDestination{QueueURL: "http://h/1/q"} }, "OnFailure.Client"},
		"on-failure no queue":  {func(c *StreamConfig) { c.OnFailure = &OnFailureDestination{Client: &sqs.Client{}} }, "OnFailure.QueueURL"},
		"negative poll":        {func(c *StreamConfig) { c.PollInterval = -time.Second }, "PollInterval"},
		"timeout over 15m":     {func(c *StreamConfig) { c.FunctionTimeout = 15*time.Minute + time.Nanosecond }, "FunctionTimeout"},
	}
	for name, tc := range bad {
		c := valid
		tc.mutate(&c)
		requireInvalid(t, c.Validate(), tc.field, name)
		m, err := NewStreamMapping(c)
		requireInvalid(t, err, tc.field, name)
		require.Nil(t, m, name)
	}
	for _, n := range []int{-1, 0, 10000} {
		c := valid
		c.MaximumRetryAttempts = &n
		c.OnFailure = onFailure
		require.NoError(t, c.Validate(), "retries %d", n)
	}
	for _, n := range []int{1, 1000} {
		c := valid
		c.BatchSize = n
		require.NoError(t, c.Validate(), "batch size %d", n)
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
	_, err := NewStreamMapping(c)
	require.NoError(t, err)
}

func TestNewRIERefusesAnInvalidConfig(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]string{
		"127.0.0.1:9001":         "http://127.0.0.1:9001" + rieInvokePath,
		"http://127.0.0.1:9001/": "http://127.0.0.1:9001" + rieInvokePath,
	} {
		r, err := NewRIE(RIEConfig{Addr: addr})
		require.NoError(t, err, addr)
		require.Equal(t, want, r.URL(), addr)
	}
	for _, addr := range []string{"", "http://", "://127.0.0.1:9001", "http://[::1:9001"} {
		r, err := NewRIE(RIEConfig{Addr: addr})
		requireInvalid(t, err, "Addr", addr)
		require.Nil(t, r, addr)
	}
}

func TestSQSMappingConcurrencyFollowsTheInvoker(t *testing.T) {
	t.Parallel()
	cfg := SQSConfig{Client: &sqs.Client{}, Invoker: noop, QueueURL: "http://127.0.0.1:19324/000000000000/q.fifo"}
	m, err := NewSQSMapping(cfg)
	require.NoError(t, err)
	require.Equal(t, DefaultMaximumConcurrency, m.Concurrency(), "Func sets no bound")
	rie, err := NewRIE(RIEConfig{Addr: "127.0.0.1:9001"})
	require.NoError(t, err)
	cfg.Invoker = rie
	m, err = NewSQSMapping(cfg)
	require.NoError(t, err)
	require.Equal(t, 1, m.Concurrency(), "the emulator runs one invocation at a time")
	cfg.MaximumConcurrency = 2
	cfg.Invoker = limitedInvoker{Invoker: noop, n: 3}
	m, err = NewSQSMapping(cfg)
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
