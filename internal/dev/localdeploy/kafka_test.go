package localdeploy

import (
	"context"
	"maps"
	"testing"

	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fifoworker/fifoworker/internal/dev/kafkabroker"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// kafkaMappings is template-kafka.yaml with only its two Kafka mappings,
// what they refer to that the deployer makes (the failed-records bucket)
// and their functions reduced to their type: the part of the template
// whose deployment makes topics.
func kafkaMappings(t *testing.T) *samtemplate.Template {
	t.Helper()
	tpl, err := samtemplate.Load("../../../template-kafka.yaml")
	require.NoError(t, err)
	part := &samtemplate.Template{Parameters: maps.Clone(tpl.Parameters), Conditions: tpl.Conditions, Mappings: tpl.Mappings,
		Resources: map[string]samtemplate.Resource{}}
	for _, id := range []string{"WorkerCommandsMapping", "ProjectorEventsMapping", "KafkaFailuresBucket"} {
		part.Resources[id] = tpl.Resources[id]
	}
	for _, id := range []string{"WorkerFunction", "ProjectorFunction"} {
		part.Resources[id] = samtemplate.Resource{Type: tpl.Resources[id].Type, Properties: map[string]any{}}
	}
	return part
}

// localBroker runs a broker in the test's process, on 127.0.0.1, and an
// admin client of it.
func localBroker(t *testing.T) (string, *kadm.Client) {
	t.Helper()
	b, err := kafkabroker.New(kafkabroker.Config{})
	require.NoError(t, err)
	t.Cleanup(b.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return b.Addr(), kadm.NewClient(cl)
}

func deployKafka(t *testing.T, tpl *samtemplate.Template, brokers string) (*Result, error) {
	t.Helper()
	return Deploy(t.Context(), tpl, "st", "eu-west-1", Clients{S3: &fakeS3{headErr: &s3types.NotFound{}}, KafkaBootstrapServers: brokers})
}

// template-kafka.yaml's topics cannot be declared in it (CloudFormation
// has no topic resource): the local deployer creates each topic a Kafka
// mapping reads on the local broker, with docs/KAFKA.md's settings and
// TopicPartitions partitions, and converges them on a second deployment.
// The brokers are the template's KafkaBootstrapServers, and an MSK
// cluster ARN of the deployment's own stands for them.
func TestDeployCreatesTheTopicsTheKafkaMappingsRead(t *testing.T) {
	t.Parallel()
	addr, adm := localBroker(t)
	tpl := kafkaMappings(t)
	res, err := deployKafka(t, tpl, addr)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"fifoworker-commands", "fifoworker-events"}, res.Topics)
	require.Equal(t, map[string]string{
		"KafkaBootstrapServers": addr,
		"MskClusterArn":         "arn:aws:kafka:eu-west-1:000000000000:cluster/st/local",
	}, res.Parameters)
	brokers, err := res.KafkaCluster("arn:aws:kafka:eu-west-1:000000000000:cluster/st/local")
	require.NoError(t, err)
	require.Equal(t, []string{addr}, brokers)
	_, err = res.KafkaCluster("arn:aws:kafka:eu-west-1:000000000000:cluster/other/local")
	require.ErrorContains(t, err, "cluster/other/local")
	require.Contains(t, res.Skipped, "WorkerCommandsMapping (AWS::Lambda::EventSourceMapping): not deployed: run by pkg/localesm (internal/dev/pipeline) on the local broker")

	topics, err := adm.ListTopics(t.Context(), res.Topics...)
	require.NoError(t, err)
	for _, topic := range res.Topics {
		require.NoError(t, topics[topic].Err, topic)
		require.Len(t, topics[topic].Partitions, 6, "TopicPartitions' default")
	}
	want := map[string]string{"cleanup.policy": "delete", "retention.ms": "1209600000", "max.message.bytes": "262144", "min.insync.replicas": "1"}
	requireTopicConfigs(t, adm, res.Topics, want)

	// A setting changed by hand is set back; the topics are not made again.
	_, err = adm.AlterTopicConfigs(t.Context(), []kadm.AlterConfig{{Name: "max.message.bytes", Value: kadm.StringPtr("1048576")}}, "fifoworker-events")
	require.NoError(t, err)
	again, err := deployKafka(t, tpl, addr)
	require.NoError(t, err, "deploying twice is harmless")
	require.Equal(t, res.Topics, again.Topics)
	requireTopicConfigs(t, adm, res.Topics, want)

	// The template's values given as parameters are the deployment's.
	p := tpl.Parameters["TopicPartitions"]
	p.Default = 3
	tpl.Parameters["TopicPartitions"] = p
	p = tpl.Parameters["EventsTopicName"]
	p.Default = "st-events"
	tpl.Parameters["EventsTopicName"] = p
	_, err = deployKafka(t, tpl, addr)
	require.ErrorContains(t, err, `topic "fifoworker-commands" exists with 6 partitions, and the template says 3`)
	topics, err = adm.ListTopics(t.Context(), "st-events")
	require.NoError(t, err)
	require.Len(t, topics["st-events"].Partitions, 3, "the projector's mapping comes first (resources in name order)")
}

func requireTopicConfigs(t *testing.T, adm *kadm.Client, topics []string, want map[string]string) {
	t.Helper()
	configs, err := adm.DescribeTopicConfigs(t.Context(), topics...)
	require.NoError(t, err)
	for _, rc := range configs {
		require.NoError(t, rc.Err, rc.Name)
		got := map[string]string{}
		for _, c := range rc.Configs {
			if _, ok := want[c.Key]; ok {
				got[c.Key] = c.MaybeValue()
			}
		}
		require.Equal(t, want, got, rc.Name)
	}
}

// A template whose mappings read Kafka cannot be deployed without a
// broker to make its topics on, and nothing is made before that is known;
// a template with none never needs one.
func TestDeployOfAKafkaTemplateNeedsTheLocalBroker(t *testing.T) {
	t.Parallel()
	s3c := &fakeS3{headErr: &s3types.NotFound{}}
	_, err := Deploy(t.Context(), kafkaMappings(t), "st", "eu-west-1", Clients{S3: s3c})
	require.ErrorContains(t, err, "KafkaBootstrapServers")
	require.ErrorContains(t, err, "no broker")
	require.Empty(t, s3c.created, "the failed-records bucket comes before the mappings")

	tpl := &samtemplate.Template{Resources: map[string]samtemplate.Resource{"B": {Type: "AWS::S3::Bucket", Properties: map[string]any{}}}}
	_, err = Deploy(context.Background(), tpl, "st", "eu-west-1", Clients{S3: &fakeS3{headErr: &s3types.NotFound{}}})
	require.NoError(t, err)
}

// A list parameter (CommaDelimitedList) is a list where a Ref reads it,
// as CloudFormation gives it: Fn::Join joins it, a property takes it whole.
func TestAListParameterResolvesToAList(t *testing.T) {
	t.Parallel()
	tpl, err := samtemplate.Parse([]byte(`
Parameters:
  Brokers: {Type: CommaDelimitedList, Default: "a:1,b:2"}
  Subnets: {Type: "List<AWS::EC2::Subnet::Id>", Default: "s-1"}
  Name: {Type: String, Default: "x,y"}
Resources: {}
`))
	require.NoError(t, err)
	res := &Result{Resources: map[string]string{}, Attributes: map[string]map[string]string{}, Parameters: map[string]string{"Subnets": "s-2,s-3"}}
	for _, c := range []struct {
		v    any
		want any
	}{
		{map[string]any{"Ref": "Brokers"}, []any{"a:1", "b:2"}},
		{map[string]any{"Fn::Join": []any{";", map[string]any{"Ref": "Brokers"}}}, "a:1;b:2"},
		{map[string]any{"Ref": "Subnets"}, []any{"s-2", "s-3"}},
		{map[string]any{"Ref": "Name"}, "x,y"},
	} {
		got, err := Resolve(tpl, res, "st", "eu-west-1", c.v)
		require.NoError(t, err, "%v", c.v)
		require.Equal(t, c.want, got, "%v", c.v)
	}
}

// A mapping's Topics that is not what Lambda takes, one topic name (the
// schema's minItems and maxItems 1), is a clear error naming the mapping,
// not a deployment that makes no topic or a topic named after a Go value.
func TestDeployRefusesTopicsThatAreNotOneName(t *testing.T) {
	t.Parallel()
	addr, adm := localBroker(t)
	for name, topics := range map[string]string{
		"a name, not a list": `c-topic`,
		"no topic":           `[]`,
		"two topics":         `[c-one, c-two]`,
		"a list in the list": `[[c-inner]]`,
		"an object":          `[{Name: c-object}]`,
	} {
		tpl, err := samtemplate.Parse([]byte(`
Parameters:
  TopicPartitions: {Type: Number, Default: 2}
Resources:
  M:
    Type: AWS::Lambda::EventSourceMapping
    Properties: {FunctionName: f, StartingPosition: TRIM_HORIZON, Topics: ` + topics + `}
`))
		require.NoError(t, err, name)
		_, err = deployKafka(t, tpl, addr)
		require.ErrorContains(t, err, "M (AWS::Lambda::EventSourceMapping)", name)
		require.ErrorContains(t, err, "Topics", name)
		require.ErrorContains(t, err, "exactly one topic name", name)
	}
	listed, err := adm.ListTopics(t.Context())
	require.NoError(t, err)
	require.Empty(t, listed.Names(), "no topic made")
}

// A topic the broker says exists but cannot describe (a topic marked for
// deletion: a broker refuses to create it again and no longer lists it)
// is an error that says so, with the broker's reason, not one that counts
// its partitions as 0 and says to delete it.
func TestDeployOfATopicTheBrokerCannotDescribeSaysSo(t *testing.T) {
	t.Parallel()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	require.NoError(t, err)
	t.Cleanup(cluster.Close)
	cluster.ControlKey(kmsg.CreateTopics.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
		resp.Version = req.GetVersion()
		for _, topic := range req.(*kmsg.CreateTopicsRequest).Topics {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.ErrorCode = topic.Topic, kerr.TopicAlreadyExists.Code
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil, true
	})
	tpl, err := samtemplate.Parse([]byte(`
Parameters:
  TopicPartitions: {Type: Number, Default: 2}
Resources:
  M:
    Type: AWS::Lambda::EventSourceMapping
    Properties: {FunctionName: f, StartingPosition: TRIM_HORIZON, Topics: [c-deleted]}
`))
	require.NoError(t, err)
	_, err = deployKafka(t, tpl, cluster.ListenAddrs()[0])
	require.ErrorIs(t, err, kerr.UnknownTopicOrPartition)
	require.ErrorContains(t, err, `topic "c-deleted" exists but cannot be described`)
	require.NotContains(t, err.Error(), "0 partitions")
}

// TopicPartitions that is not a count of partitions (a template without
// template-kafka.yaml's MinValue 1) is an error naming it, before a topic
// is made; 1 is a count.
func TestDeployRefusesTopicPartitionsThatAreNotACount(t *testing.T) {
	t.Parallel()
	addr, adm := localBroker(t)
	for value, ok := range map[string]bool{"0": false, "-1": false, "two": false, "1": true} {
		tpl, err := samtemplate.Parse([]byte(`
Parameters:
  TopicPartitions: {Type: String, Default: "` + value + `"}
Resources:
  M:
    Type: AWS::Lambda::EventSourceMapping
    Properties: {FunctionName: f, StartingPosition: TRIM_HORIZON, Topics: [c-count]}
`))
		require.NoError(t, err, value)
		_, err = deployKafka(t, tpl, addr)
		if ok {
			require.NoError(t, err, value)
			continue
		}
		require.ErrorContains(t, err, `TopicPartitions "`+value+`" is not a number of partitions`, value)
	}
	listed, err := adm.ListTopics(t.Context(), "c-count")
	require.NoError(t, err)
	require.Len(t, listed["c-count"].Partitions, 1, "made once, by the count")
}
