package localdeploy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// The parameters of template-kafka.yaml a local deployment reads or gives
// a value of its own.
const (
	// kafkaBootstrapParameter is the brokers (CommaDelimitedList): locally
	// the local stack's broker, whatever the template's value.
	kafkaBootstrapParameter = "KafkaBootstrapServers"
	// mskClusterParameter is the MSK cluster's ARN, which the template's
	// Rules require with KafkaSource msk (its default): with no value, a
	// deployment names the local broker with an ARN of its own
	// (LocalMSKClusterARN), which KafkaCluster maps back to the broker, as
	// a queue's ARN maps to its URL.
	mskClusterParameter = "MskClusterArn"
	// topicPartitionsParameter is the partitions each topic is created
	// with.
	topicPartitionsParameter = "TopicPartitions"
)

// topicConfigs are the topic settings docs/KAFKA.md ("Before the first
// deployment") creates the topics with, as one broker takes them: its
// replication factor 3 and min.insync.replicas 2 are 1 and 1 here, the
// local broker being the only replica (a minimum of 2 would refuse every
// write acknowledged by all in-sync replicas).
var topicConfigs = map[string]string{
	"cleanup.policy":      "delete",     // a job's records share its key: compaction would keep its last one only
	"retention.ms":        "1209600000", // 14 days, the queues' retention in template.yaml
	"max.message.bytes":   "262144",     // the queues' MaximumMessageSize: a parked record fits a quarantine item
	"min.insync.replicas": "1",
}

// LocalMSKClusterARN is the ARN a local deployment of stack in region
// gives the local broker when the template's MskClusterArn has no value.
func LocalMSKClusterARN(region, stack string) string {
	return fmt.Sprintf("arn:aws:kafka:%s:%s:cluster/%s/local", region, LocalAccountID, stack)
}

// localParameters are the values a deployment gives the parameters whose
// value cannot work locally: the brokers are the local stack's, and an
// MSK cluster ARN left empty names them.
func localParameters(tpl *samtemplate.Template, c Clients, stackName, region string) (map[string]string, error) {
	params := map[string]string{}
	if _, ok := tpl.Parameters[kafkaBootstrapParameter]; ok {
		if c.KafkaBootstrapServers == "" {
			return nil, fmt.Errorf("localdeploy: the template's brokers (its parameter %s) are the local broker's, and Clients.KafkaBootstrapServers names no broker: give the local stack's (localstack.State.Kafka)", kafkaBootstrapParameter)
		}
		params[kafkaBootstrapParameter] = c.KafkaBootstrapServers
	}
	if p, ok := tpl.Parameters[mskClusterParameter]; ok && (p.Default == nil || fmt.Sprint(p.Default) == "") {
		params[mskClusterParameter] = LocalMSKClusterARN(region, stackName)
	}
	return params, nil
}

// KafkaCluster returns the brokers of the MSK cluster whose ARN a Kafka
// mapping names (its EventSourceArn): locally the local broker, under the
// ARN the deployment gave it. Another ARN is an error.
func (r *Result) KafkaCluster(arn string) ([]string, error) {
	if arn == "" || arn != r.Parameters[mskClusterParameter] || r.Parameters[kafkaBootstrapParameter] == "" {
		return nil, fmt.Errorf("localdeploy: no Kafka cluster of this deployment has ARN %s (the local broker's is %q)", arn, r.Parameters[mskClusterParameter])
	}
	return strings.Split(r.Parameters[kafkaBootstrapParameter], ","), nil
}

// topicMaker creates topics on the local broker, which it dials at its
// first use: a template without Kafka never needs one.
type topicMaker struct {
	brokers string
	client  *kgo.Client
	adm     *kadm.Client
}

func (m *topicMaker) admin() (*kadm.Client, error) {
	if m.adm != nil {
		return m.adm, nil
	}
	if m.brokers == "" {
		return nil, fmt.Errorf("the template's mappings read Kafka topics, and Clients.KafkaBootstrapServers names no broker to create them on (the parameter %s)", kafkaBootstrapParameter)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(m.brokers, ",")...))
	if err != nil {
		return nil, fmt.Errorf("kafka client of %s: %w", m.brokers, err)
	}
	m.client, m.adm = cl, kadm.NewClient(cl)
	return m.adm, nil
}

func (m *topicMaker) close() {
	if m.client != nil {
		m.client.Close()
	}
}

// deployMapping creates the topics a Kafka mapping reads (its Topics) and
// returns them; the mapping itself runs under pkg/localesm
// (internal/dev/pipeline). A mapping without Topics is not emulated.
func deployMapping(ctx context.Context, r *resolver, rsc samtemplate.Resource, m *topicMaker) (topics, skipped []string, err error) {
	chosen, _, err := r.tpl.Choose(rsc.Properties, r.ref)
	if err != nil {
		return nil, nil, err
	}
	props, _ := chosen.(map[string]any)
	if _, ok := props["Topics"]; !ok {
		return nil, []string{"not emulated locally"}, nil
	}
	list, err := r.resolveChosen(props["Topics"])
	if err != nil {
		return nil, nil, fmt.Errorf("its topics: %w", err)
	}
	topic, err := oneTopic(list)
	if err != nil {
		return nil, nil, err
	}
	partitions, err := r.ref(topicPartitionsParameter)
	if err != nil {
		return nil, nil, fmt.Errorf("the partitions of its topics: %w", err)
	}
	n, err := strconv.ParseInt(partitions, 10, 32)
	if err != nil || n < 1 {
		return nil, nil, fmt.Errorf("%s %q is not a number of partitions", topicPartitionsParameter, partitions)
	}
	if err := m.ensure(ctx, topic, int32(n)); err != nil {
		return nil, nil, err
	}
	skipped = append([]string{"not deployed: run by pkg/localesm (internal/dev/pipeline) on the local broker",
		"its topics have replication factor 1 and min.insync.replicas 1 (docs/KAFKA.md: 3 and 2): the local broker is one broker"},
		skippedProps(props, "SourceAccessConfigurations", "ProvisionedPollerConfig")...)
	return []string{topic}, skipped, nil
}

// oneTopic is the topic of a mapping's resolved Topics, which Lambda
// takes as a list of exactly one name (AWS::Lambda::EventSourceMapping's
// schema: minItems and maxItems 1), as pkg/localesm's KafkaConfig does:
// anything else would make no topic, two, or one named after a Go value.
func oneTopic(list any) (string, error) {
	items, ok := list.([]any)
	if ok && len(items) == 1 {
		if topic, ok := items[0].(string); ok && topic != "" {
			return topic, nil
		}
	}
	return "", fmt.Errorf("its Topics %v is not a list of exactly one topic name, as Lambda takes", list)
}

// ensure creates topic with partitions and topicConfigs, or checks the
// one that exists: the same partitions (a topic's partitions cannot go
// down, and adding some moves keys), its settings set again.
func (m *topicMaker) ensure(ctx context.Context, topic string, partitions int32) error {
	adm, err := m.admin()
	if err != nil {
		return err
	}
	configs := map[string]*string{}
	for k, v := range topicConfigs {
		configs[k] = kadm.StringPtr(v)
	}
	_, err = adm.CreateTopic(ctx, partitions, -1, configs, topic)
	if err == nil || !errors.Is(err, kerr.TopicAlreadyExists) {
		if err != nil {
			return fmt.Errorf("create topic %q: %w", topic, err)
		}
		return nil
	}
	details, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return fmt.Errorf("topic %q: %w", topic, err)
	}
	// A topic marked for deletion is still there to CreateTopics and no
	// longer to Metadata: its partitions are unknown, not 0.
	if err := details[topic].Err; err != nil {
		return fmt.Errorf("topic %q exists but cannot be described (being deleted? wait and deploy again): %w", topic, err)
	}
	if got := len(details[topic].Partitions); got != int(partitions) {
		return fmt.Errorf("topic %q exists with %d partitions, and the template says %d: delete it or deploy under other topic names", topic, got, partitions)
	}
	keys := make([]string, 0, len(topicConfigs))
	for k := range topicConfigs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	set := make([]kadm.AlterConfig, len(keys))
	for i, k := range keys {
		set[i] = kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: configs[k]}
	}
	resps, err := adm.AlterTopicConfigs(ctx, set, topic)
	if err == nil {
		_, err = resps.On(topic, nil)
	}
	for _, r := range resps {
		err = errors.Join(err, r.Err)
	}
	if err != nil {
		return fmt.Errorf("topic %q: set its settings again: %w", topic, err)
	}
	return nil
}
