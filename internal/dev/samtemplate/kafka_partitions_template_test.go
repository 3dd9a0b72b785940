package samtemplate_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// Every function that produces to or consumes a topic is told the topics'
// partition count, the same parameter for all: the relay stamps each
// record with it and produces only while the brokers show it (kafkaout's
// Config.PartitionCount), and the worker and the projector hold a record
// stamped with another (kafka.Config.PartitionCount). One count out of
// step would hold every record, or let a moved key's record run early.
// template-kafka-postgres.yaml's functions too.
func TestKafkaFunctionsAreToldTheTopicsPartitionCount(t *testing.T) {
	t.Parallel()
	for _, tpl := range []*samtemplate.Template{loadKafkaTemplate(t), loadKafkaPostgresTemplate(t)} {
		for _, fn := range []string{"RelayFunction", "WorkerFunction", "ProjectorFunction"} {
			env := asMap(asMap(tpl.Resources[fn].Properties["Environment"])["Variables"])
			require.Equal(t, ref("TopicPartitions"), env["TOPIC_PARTITIONS"], fn)
		}
	}
}
