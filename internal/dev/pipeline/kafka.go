package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/pkg/localesm"
)

// A Kafka template (template-kafka.yaml) declares its worker's and
// projector's mappings as AWS::Lambda::EventSourceMapping resources, not
// as SAM events (a SAM event takes no condition, and the source is
// MSK or self-managed by a condition): each runs as a localesm.KafkaMapping
// on the local broker with the resource's settings. Both sources read the
// local broker: an MSK mapping's cluster ARN is the one the local
// deployment gave it (localdeploy.Result.KafkaCluster), a self-managed
// mapping's endpoints are the template's KafkaBootstrapServers, which the
// deployment made the local broker. What the local broker does not have
// is not applied: authentication (SourceAccessConfigurations; the relay's
// KAFKA_SASL_MECHANISM and KAFKA_SECRET_ARN, see localKafkaSettings), the
// VPC, and provisioned pollers (one consumer group member per mapping).

// kafkaMappingProperties are the properties of a Kafka mapping the
// pipeline reads, each resolved alone: the others (FunctionName, a
// function that is not deployed; SourceAccessConfigurations, which
// select subnets) cannot be resolved locally.
var kafkaMappingProperties = []string{
	"Enabled", "Topics", "EventSourceArn", "SelfManagedEventSource", "AmazonManagedKafkaEventSourceConfig",
	"SelfManagedKafkaEventSourceConfig", "StartingPosition", "StartingPositionTimestamp", "BatchSize",
	"MaximumBatchingWindowInSeconds", "FunctionResponseTypes", "BisectBatchOnFunctionError",
	"MaximumRetryAttempts", "MaximumRecordAgeInSeconds", "DestinationConfig",
}

// kafkaMapping is one of the template's Kafka mappings, configured but for
// what the running pipeline gives it (invoker, timeout, logger, ARN,
// destination).
type kafkaMapping struct {
	fn, name  string
	cfg       localesm.KafkaConfig
	onFailure string // the on-failure destination's ARN, "" for none
}

// kafkaMappings are the Kafka mappings that invoke function fn, in name
// order.
func (c *Config) kafkaMappings(fn string) ([]kafkaMapping, error) {
	var names []string
	for name, r := range c.Template.Resources {
		if r.Type != "AWS::Lambda::EventSourceMapping" || r.Properties["Topics"] == nil {
			continue
		}
		if ref, _ := r.Properties["FunctionName"].(map[string]any); ref["Ref"] == functionResources[fn] {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var out []kafkaMapping
	for _, name := range names {
		props := map[string]any{}
		for _, k := range kafkaMappingProperties {
			v, err := localdeploy.Resolve(c.Template, c.Deployed, c.StackName, c.Region, c.Template.Resources[name].Properties[k])
			if err != nil {
				return nil, fmt.Errorf("pipeline: %s's mapping %s: %s: %w", fn, name, k, err)
			}
			if v != nil {
				props[k] = v
			}
		}
		if _, ok := props["Enabled"]; ok && !boolProp(props, "Enabled") {
			continue
		}
		m, err := c.kafkaMapping(fn, name, props)
		if err != nil {
			return nil, fmt.Errorf("pipeline: %s's mapping %s: %w", fn, name, err)
		}
		out = append(out, m)
	}
	return out, nil
}

func (c *Config) kafkaMapping(fn, name string, props map[string]any) (kafkaMapping, error) {
	m := kafkaMapping{fn: fn, name: name, cfg: localesm.KafkaConfig{
		Topics:                     stringList(props["Topics"]),
		StartingPosition:           localesm.StartingPosition(fmt.Sprint(props["StartingPosition"])),
		BatchSize:                  intProp(props, "BatchSize"),
		ReportBatchItemFailures:    reportsItemFailures(props),
		BisectBatchOnFunctionError: boolProp(props, "BisectBatchOnFunctionError"),
	}}
	if arn, ok := props["EventSourceArn"]; ok {
		brokers, err := c.Deployed.KafkaCluster(fmt.Sprint(arn))
		if err != nil {
			return m, err
		}
		m.cfg.EventSource, m.cfg.ClusterARN, m.cfg.BootstrapServers = localesm.EventSourceMSK, fmt.Sprint(arn), brokers
		m.cfg.ConsumerGroupID = groupID(props["AmazonManagedKafkaEventSourceConfig"])
	} else {
		source, _ := props["SelfManagedEventSource"].(map[string]any)
		endpoints, _ := source["Endpoints"].(map[string]any)
		m.cfg.EventSource, m.cfg.BootstrapServers = localesm.EventSourceSelfManagedKafka, stringList(endpoints["KafkaBootstrapServers"])
		m.cfg.ConsumerGroupID = groupID(props["SelfManagedKafkaEventSourceConfig"])
	}
	if ts, ok := props["StartingPositionTimestamp"]; ok {
		secs, err := strconv.ParseFloat(fmt.Sprint(ts), 64)
		if err != nil {
			return m, fmt.Errorf("StartingPositionTimestamp %v is not a number of seconds", ts)
		}
		m.cfg.StartingPositionTimestamp = time.Unix(int64(secs), 0)
	}
	if _, ok := props["MaximumBatchingWindowInSeconds"]; ok {
		m.cfg.MaximumBatchingWindow = time.Duration(intProp(props, "MaximumBatchingWindowInSeconds")) * time.Second
		if m.cfg.MaximumBatchingWindow == 0 {
			m.cfg.MaximumBatchingWindow = localesm.NoBatchingWindow
		}
	}
	if _, ok := props["MaximumRetryAttempts"]; ok {
		n := intProp(props, "MaximumRetryAttempts")
		m.cfg.MaximumRetryAttempts = &n
	}
	if age := intProp(props, "MaximumRecordAgeInSeconds"); age > 0 {
		m.cfg.MaximumRecordAge = time.Duration(age) * time.Second
	}
	if dest, ok := props["DestinationConfig"].(map[string]any); ok {
		onFailure, _ := dest["OnFailure"].(map[string]any)
		m.onFailure = fmt.Sprint(onFailure["Destination"])
	}
	return m, nil
}

// groupID is a ...KafkaEventSourceConfig's ConsumerGroupId.
func groupID(config any) string {
	m, _ := config.(map[string]any)
	if id, ok := m["ConsumerGroupId"]; ok {
		return fmt.Sprint(id)
	}
	return ""
}

func stringList(v any) []string {
	items, _ := v.([]any)
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = fmt.Sprint(it)
	}
	return out
}

// buildKafkaMappings builds the Kafka mappings that invoke function fn.
func (p *Pipeline) buildKafkaMappings(fn string, s3c *s3.Client, sqsc *sqs.Client) error {
	specs, err := p.cfg.kafkaMappings(fn)
	if err != nil {
		return err
	}
	for _, spec := range specs {
		cfg := spec.cfg
		cfg.Invoker, cfg.FunctionTimeout = p.invokers[fn], p.timeouts[fn]
		cfg.FunctionARN = fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s-%s", p.cfg.Region, localdeploy.LocalAccountID, p.cfg.StackName, fn)
		cfg.Logger = p.cfg.Logger.With("mapping", fn+"."+spec.name)
		cfg.OnBatch = func(r localesm.KafkaBatchResult) {
			if p.cfg.OnKafkaBatch != nil {
				p.cfg.OnKafkaBatch(fn, r)
			}
		}
		var bucket string
		if spec.onFailure != "" {
			if cfg.OnFailure, bucket, err = p.kafkaDestination(spec.onFailure, s3c, sqsc); err != nil {
				return fmt.Errorf("pipeline: %s's mapping %s: %w", fn, spec.name, err)
			}
		}
		m, err := localesm.NewKafkaMapping(cfg)
		if err != nil {
			return fmt.Errorf("pipeline: %s's mapping %s: %w", fn, spec.name, err)
		}
		p.mappings = append(p.mappings, mapping{name: fn + "." + spec.name, run: m.Run})
		p.kafka = append(p.kafka, KafkaMapping{Function: fn, Name: spec.name, Topic: cfg.Topics[0], ConsumerGroupID: m.ConsumerGroupID(),
			Brokers: cfg.BootstrapServers, FailureBucket: bucket})
	}
	return nil
}

// localKafkaSettings adjusts a function's environment to the local
// broker, which takes no authentication: the template's SASL mechanism and
// SCRAM secret are dropped (unset is no authentication, as the relay's
// wiring reads KAFKA_SASL_MECHANISM).
func localKafkaSettings(env map[string]string) {
	if _, ok := env["KAFKA_BOOTSTRAP_SERVERS"]; ok {
		delete(env, "KAFKA_SASL_MECHANISM")
		delete(env, "KAFKA_SECRET_ARN")
	}
}

// kafkaDestination is the on-failure destination whose ARN a Kafka
// mapping names: a deployed bucket (S3) or queue (SQS). A Kafka topic
// (kafka://) would need a producer of its own; template-kafka.yaml uses
// none, and it is refused.
func (p *Pipeline) kafkaDestination(arn string, s3c *s3.Client, sqsc *sqs.Client) (localesm.KafkaOnFailureDestination, string, error) {
	ref, err := p.deployedByARN(arn)
	if err != nil {
		return nil, "", err
	}
	switch {
	case strings.HasPrefix(arn, "arn:aws:s3:::"):
		d, err := localesm.NewKafkaS3Destination(localesm.KafkaS3Config{Writer: s3Writer{s3c}, Bucket: ref})
		return d, ref, err
	case strings.HasPrefix(arn, "arn:aws:sqs:"):
		return localesm.KafkaSQSDestination{Client: sqsc, QueueURL: ref}, "", nil
	}
	return nil, "", fmt.Errorf("pipeline: on-failure destination %s is neither a bucket nor a queue", arn)
}

// s3Writer writes a Kafka mapping's on-failure objects with an S3 client.
type s3Writer struct{ client *s3.Client }

func (w s3Writer) WriteObject(ctx context.Context, bucket, key string, body []byte) error {
	_, err := w.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
		Body: bytes.NewReader(body), ContentType: aws.String("application/json")})
	return err
}

// KafkaMapping describes a Kafka mapping of the running pipeline.
type KafkaMapping struct {
	Function        string   // the function it invokes ("worker")
	Name            string   // its logical id in the template
	Topic           string   // the topic it reads
	ConsumerGroupID string   // its consumer group
	Brokers         []string // the local broker
	// FailureBucket is its on-failure destination's bucket, "" when that
	// is not a bucket.
	FailureBucket string
}

// KafkaMappings are the pipeline's Kafka mappings (none for template.yaml).
func (p *Pipeline) KafkaMappings() []KafkaMapping { return p.kafka }

// KafkaLag is each Kafka mapping's consumer group's lag, by group: over
// its topic's partitions, the end offset less the group's committed offset
// (the log's start where it has committed none). 0 when the group has
// committed past every record, each completed or given up to its
// on-failure destination.
func (p *Pipeline) KafkaLag(ctx context.Context) (map[string]int64, error) {
	lags := map[string]int64{}
	for _, m := range p.kafka {
		lag, err := groupLag(ctx, m)
		if err != nil {
			return nil, fmt.Errorf("pipeline: lag of %s: %w", m.ConsumerGroupID, err)
		}
		lags[m.ConsumerGroupID] = lag
	}
	return lags, nil
}

func groupLag(ctx context.Context, m KafkaMapping) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(m.Brokers...))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, m.Topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return 0, err
	}
	starts, err := adm.ListStartOffsets(ctx, m.Topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return 0, err
	}
	committed, err := adm.FetchOffsets(ctx, m.ConsumerGroupID)
	if err == nil {
		err = committed.Error()
	}
	if err != nil {
		return 0, err
	}
	var lag int64
	var errs []error
	ends.Each(func(end kadm.ListedOffset) {
		from := int64(0)
		if start, ok := starts.Lookup(end.Topic, end.Partition); ok {
			from = start.Offset
		}
		if c, ok := committed.Lookup(end.Topic, end.Partition); ok && c.At >= 0 {
			from = c.At
		}
		if from > end.Offset {
			errs = append(errs, fmt.Errorf("partition %d: committed %d past the end %d", end.Partition, from, end.Offset))
		}
		lag += end.Offset - from
	})
	return lag, errors.Join(errs...)
}

// TemplateTransport is the transport tpl's functions are built for: the
// TRANSPORT its Globals give every function ("kafka" in
// template-kafka.yaml), or "sqs" when it gives none (template.yaml).
func TemplateTransport(tpl *samtemplate.Template) string {
	return globalSetting(tpl, "TRANSPORT", "sqs")
}

// globalSetting is the literal value tpl's Globals give every function's
// variable name, or def when they give none.
func globalSetting(tpl *samtemplate.Template, name, def string) string {
	globals, _ := tpl.Globals["Function"].(map[string]any)
	env, _ := globals["Environment"].(map[string]any)
	vars, _ := env["Variables"].(map[string]any)
	if v, ok := vars[name].(string); ok && v != "" {
		return v
	}
	return def
}
