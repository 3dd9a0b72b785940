package localesm

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestKafkaConfigValidate(t *testing.T) {
	t.Parallel()
	valid := KafkaConfig{BootstrapServers: []string{"127.0.0.1:9092"}, Topics: []string{testTopic}, Invoker: noop}
	require.NoError(t, valid.Validate(), "only the brokers, the topic and the invoker are required")
	d := valid.withDefaults()
	require.Equal(t, EventSourceSelfManagedKafka, d.EventSource)
	require.Equal(t, TrimHorizon, d.StartingPosition)
	require.Equal(t, DefaultKafkaBatchSize, d.BatchSize)
	require.Equal(t, 100, d.BatchSize)
	require.Equal(t, 500*time.Millisecond, d.MaximumBatchingWindow)
	require.Equal(t, retryForever, d.maxRetries(), "the zero value retries until success, like Lambda")
	require.Equal(t, DefaultFunctionTimeout, d.FunctionTimeout)
	require.NotNil(t, d.Now)

	now := time.Now()
	producer := &kgo.Client{}
	sqsDest := KafkaSQSDestination{Client: &sqs.Client{}, QueueURL: "http://127.0.0.1:1/000000000000/failures"}
	bad := map[string]struct {
		mutate func(*KafkaConfig)
		field  string
	}{
		"no brokers": {func(c *KafkaConfig) { c.BootstrapServers = nil }, "BootstrapServers"},
		"11 brokers": {func(c *KafkaConfig) {
			c.BootstrapServers = strings.Split("a:1,b:1,c:1,d:1,e:1,f:1,g:1,h:1,i:1,j:1,k:1", ",")
		}, "BootstrapServers has 11"},
		"a broker without a port": {func(c *KafkaConfig) { c.BootstrapServers = []string{"127.0.0.1"} }, "BootstrapServers[0]"},
		"a URL broker":            {func(c *KafkaConfig) { c.BootstrapServers = []string{"kafka://b:9092"} }, "BootstrapServers[0]"},
		"a broker twice":          {func(c *KafkaConfig) { c.BootstrapServers = []string{"b:1", "b:1"} }, "BootstrapServers[1]"},
		"a 301-character broker":  {func(c *KafkaConfig) { c.BootstrapServers = []string{strings.Repeat("a", 294) + ".b:9092"} }, "BootstrapServers[0]"},
		"no topic":                {func(c *KafkaConfig) { c.Topics = nil }, "Topics"},
		"two topics":              {func(c *KafkaConfig) { c.Topics = []string{"a1", "b1"} }, "Topics"},
		"a 1-character topic":     {func(c *KafkaConfig) { c.Topics = []string{"a"} }, "Topics[0]"},
		"a 250-character topic":   {func(c *KafkaConfig) { c.Topics = []string{strings.Repeat("t", 250)} }, "Topics[0]"},
		"a topic starting with .": {func(c *KafkaConfig) { c.Topics = []string{".orders"} }, "Topics[0]"},
		"a topic with a space":    {func(c *KafkaConfig) { c.Topics = []string{"my topic"} }, "Topics[0]"},
		"a 201-character group":   {func(c *KafkaConfig) { c.ConsumerGroupID = strings.Repeat("g", 201) }, "ConsumerGroupID"},
		"a group with a space":    {func(c *KafkaConfig) { c.ConsumerGroupID = "my group" }, "ConsumerGroupID"},
		"an unknown event source": {func(c *KafkaConfig) { c.EventSource = "kafka" }, "EventSource"},
		"MSK without an ARN":      {func(c *KafkaConfig) { c.EventSource = EventSourceMSK }, "ClusterARN"},
		"MSK with a queue ARN": {func(c *KafkaConfig) {
			c.EventSource, c.ClusterARN = EventSourceMSK, testQueueARN
		}, "ClusterARN"},
		"self-managed with an ARN": {func(c *KafkaConfig) { c.ClusterARN = testClusterARN }, "ClusterARN"},
		"an unknown position":      {func(c *KafkaConfig) { c.StartingPosition = "EARLIEST" }, "StartingPosition"},
		"a timestamp with LATEST": {func(c *KafkaConfig) {
			c.StartingPosition, c.StartingPositionTimestamp = Latest, now.Add(-time.Hour)
		}, "StartingPositionTimestamp"},
		"AT_TIMESTAMP without one": {func(c *KafkaConfig) { c.StartingPosition = AtTimestamp }, "StartingPositionTimestamp"},
		"AT_TIMESTAMP in the future": {func(c *KafkaConfig) {
			c.StartingPosition, c.StartingPositionTimestamp, c.Now = AtTimestamp, now.Add(time.Nanosecond), func() time.Time { return now }
		}, "StartingPositionTimestamp"},
		"batch of 10001":    {func(c *KafkaConfig) { c.BatchSize = 10001 }, "BatchSize"},
		"negative batch":    {func(c *KafkaConfig) { c.BatchSize = -1 }, "BatchSize"},
		"a window of 1.5s":  {func(c *KafkaConfig) { c.MaximumBatchingWindow = 1500 * time.Millisecond }, "MaximumBatchingWindow"},
		"a window of 301s":  {func(c *KafkaConfig) { c.MaximumBatchingWindow = 301 * time.Second }, "MaximumBatchingWindow"},
		"a window of 100ms": {func(c *KafkaConfig) { c.MaximumBatchingWindow = 100 * time.Millisecond }, "MaximumBatchingWindow"},
		"a negative window": {func(c *KafkaConfig) { c.MaximumBatchingWindow = -2 * time.Second }, "MaximumBatchingWindow"},
		// With a destination: the error without one names MaximumRetryAttempts too.
		"retries below -1":        {func(c *KafkaConfig) { c.MaximumRetryAttempts, c.OnFailure = new(-2), sqsDest }, "MaximumRetryAttempts"},
		"retries over 10000":      {func(c *KafkaConfig) { c.MaximumRetryAttempts, c.OnFailure = new(10001), sqsDest }, "MaximumRetryAttempts"},
		"retries, no destination": {func(c *KafkaConfig) { c.MaximumRetryAttempts = new(0) }, "OnFailure"},
		"an age of 59s":           {func(c *KafkaConfig) { c.MaximumRecordAge, c.OnFailure = 59*time.Second, sqsDest }, "MaximumRecordAge"},
		"an age of 604801s":       {func(c *KafkaConfig) { c.MaximumRecordAge, c.OnFailure = 604801*time.Second, sqsDest }, "MaximumRecordAge"},
		"an age of 60.5s":         {func(c *KafkaConfig) { c.MaximumRecordAge, c.OnFailure = 60500*time.Millisecond, sqsDest }, "MaximumRecordAge"},
		"an age, no destination":  {func(c *KafkaConfig) { c.MaximumRecordAge = time.Minute }, "OnFailure"},
		"a destination topic that is the source": {func(c *KafkaConfig) {
			c.OnFailure = KafkaTopicDestination{Producer: producer, Topic: testTopic}
		}, "OnFailure.Topic"},
		"a destination topic with no name": {func(c *KafkaConfig) { c.OnFailure = KafkaTopicDestination{Producer: producer} }, "OnFailure.Topic"},
		"a destination topic, no producer": {func(c *KafkaConfig) { c.OnFailure = KafkaTopicDestination{Topic: "dlt"} }, "OnFailure.Producer"},
		"a destination queue, no client":   {func(c *KafkaConfig) { c.OnFailure = KafkaSQSDestination{QueueURL: "http://h/1/q"} }, "OnFailure.Client"},
		"a destination queue with no URL":  {func(c *KafkaConfig) { c.OnFailure = KafkaSQSDestination{Client: &sqs.Client{}} }, "OnFailure.QueueURL"},
		"a FIFO destination queue": {func(c *KafkaConfig) {
			c.OnFailure = KafkaSQSDestination{Client: &sqs.Client{}, QueueURL: "http://h/1/q.fifo"}
		}, "OnFailure.QueueURL"},
		"no invoker":                        {func(c *KafkaConfig) { c.Invoker = nil }, "Invoker"},
		"a timeout over 14 minutes":         {func(c *KafkaConfig) { c.FunctionTimeout = 14*time.Minute + time.Nanosecond }, "FunctionTimeout"},
		"a negative timeout":                {func(c *KafkaConfig) { c.FunctionTimeout = -time.Second }, "FunctionTimeout"},
		"an AT_TIMESTAMP of the zero time":  {func(c *KafkaConfig) { c.StartingPosition, c.StartingPositionTimestamp = AtTimestamp, time.Time{} }, "StartingPositionTimestamp"},
		"self-managed with a stray ARN too": {func(c *KafkaConfig) { c.EventSource, c.ClusterARN = EventSourceSelfManagedKafka, "x" }, "ClusterARN"},
	}
	for name, tc := range bad {
		c := valid
		tc.mutate(&c)
		requireInvalid(t, c.Validate(), tc.field, name)
		m, err := NewKafkaMapping(c)
		requireInvalid(t, err, tc.field, name)
		require.Nil(t, m, name)
	}
	// Each bound is a valid setting itself.
	for name, mutate := range map[string]func(*KafkaConfig){
		"ten brokers": func(c *KafkaConfig) {
			c.BootstrapServers = strings.Split("a:1,b:1,c:1,d:1,e:1,f:1,g:1,h:1,i:1,j:1", ",")
		},
		"a 300-character broker": func(c *KafkaConfig) { c.BootstrapServers = []string{strings.Repeat("a", 293) + ".b:9092"} },
		"a 2-character topic":    func(c *KafkaConfig) { c.Topics = []string{"ab"} },
		"a 249-character topic":  func(c *KafkaConfig) { c.Topics = []string{strings.Repeat("t", 249)} },
		"a 1-character group":    func(c *KafkaConfig) { c.ConsumerGroupID = "g" },
		"a 200-character group":  func(c *KafkaConfig) { c.ConsumerGroupID = strings.Repeat("g", 200) },
		"every group character":  func(c *KafkaConfig) { c.ConsumerGroupID = "aZ09-/*:_+=.@" },
		"MSK":                    func(c *KafkaConfig) { c.EventSource, c.ClusterARN = EventSourceMSK, testClusterARN },
		"LATEST":                 func(c *KafkaConfig) { c.StartingPosition = Latest },
		"AT_TIMESTAMP now": func(c *KafkaConfig) {
			c.StartingPosition, c.StartingPositionTimestamp, c.Now = AtTimestamp, now, func() time.Time { return now }
		},
		"batch of 1":                 func(c *KafkaConfig) { c.BatchSize = 1 },
		"batch of 10000":             func(c *KafkaConfig) { c.BatchSize = 10000 },
		"no window":                  func(c *KafkaConfig) { c.MaximumBatchingWindow = NoBatchingWindow },
		"a window of 1s":             func(c *KafkaConfig) { c.MaximumBatchingWindow = time.Second },
		"a window of 300s":           func(c *KafkaConfig) { c.MaximumBatchingWindow = 300 * time.Second },
		"retries -1, no destination": func(c *KafkaConfig) { c.MaximumRetryAttempts = new(-1) },
		"0 retries":                  func(c *KafkaConfig) { c.MaximumRetryAttempts, c.OnFailure = new(0), sqsDest },
		"10000 retries":              func(c *KafkaConfig) { c.MaximumRetryAttempts, c.OnFailure = new(10000), sqsDest },
		"an age of 60s":              func(c *KafkaConfig) { c.MaximumRecordAge, c.OnFailure = time.Minute, sqsDest },
		"an age of 604800s":          func(c *KafkaConfig) { c.MaximumRecordAge, c.OnFailure = 604800*time.Second, sqsDest },
		"a destination topic":        func(c *KafkaConfig) { c.OnFailure = KafkaTopicDestination{Producer: producer, Topic: "dlt"} },
		"a timeout of 14 minutes":    func(c *KafkaConfig) { c.FunctionTimeout = 14 * time.Minute },
	} {
		c := valid
		mutate(&c)
		require.NoError(t, c.Validate(), name)
		_, err := NewKafkaMapping(c)
		require.NoError(t, err, name)
	}

	// -1 with a destination is capped at 10, as Lambda caps it.
	c := valid
	c.OnFailure = sqsDest
	require.Equal(t, 10, c.withDefaults().maxRetries())
	n := 3
	c.MaximumRetryAttempts = &n
	d = c.withDefaults()
	n = 7
	require.Equal(t, 3, d.maxRetries(), "the mapping does not share the caller's int")
}

func TestNewKafkaMappingMakesUpAUniqueGroup(t *testing.T) {
	t.Parallel()
	cfg := KafkaConfig{BootstrapServers: []string{"127.0.0.1:9092"}, Topics: []string{testTopic}, Invoker: noop}
	a, err := NewKafkaMapping(cfg)
	require.NoError(t, err)
	b, err := NewKafkaMapping(cfg)
	require.NoError(t, err)
	require.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, a.ConsumerGroupID())
	require.NotEqual(t, a.ConsumerGroupID(), b.ConsumerGroupID())
	cfg.ConsumerGroupID = "orders"
	c, err := NewKafkaMapping(cfg)
	require.NoError(t, err)
	require.Equal(t, "orders", c.ConsumerGroupID())

	rie, err := NewRIE(RIEConfig{Addr: "127.0.0.1:9001"})
	require.NoError(t, err)
	cfg.Invoker = rie
	m, err := NewKafkaMapping(cfg)
	require.NoError(t, err)
	require.Equal(t, 1, m.limit, "the emulator runs one invocation at a time")
}
