package kafkaout

import "github.com/twmb/franz-go/pkg/kgo"

// DefaultRedriveClientID is NewRedriveProducer's client id when its
// ProducerConfig names none.
const DefaultRedriveClientID = "fifoworker-redrive"

// NewRedriveProducer returns the client that produces the quarantine's
// redriven copies of parked Kafka records (the CLI's quarantine.RecordSender
// wraps it): NewProducer's settings (idempotent, acks from all in-sync
// replicas, no linger, the same authentications), but each record goes to
// the partition it names (kgo's ManualPartitioner, whose records are failed
// at once when the partition does not exist), its hold's, rather than to
// the one its key hashes to: a copy runs only in its parked record's
// partition. Its client id defaults to DefaultRedriveClientID. The caller
// closes it.
func NewRedriveProducer(cfg ProducerConfig) (*kgo.Client, error) {
	return newClient(cfg, DefaultRedriveClientID, kgo.RecordPartitioner(kgo.ManualPartitioner()))
}
