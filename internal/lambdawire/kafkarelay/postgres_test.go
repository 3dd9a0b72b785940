package kafkarelay_test

import (
	"log/slog"
	"maps"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/lambdawire/kafkarelay"
	"github.com/fifoworker/fifoworker/internal/lambdawire/pgopen"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

// The relay on PostgreSQL (template-kafka-postgres.yaml) reads the Kafka
// relay's settings and the database's, STORE "postgres", all at once and
// dialling nothing; the DynamoDB relay and it each refuse the other's
// STORE.
func TestRelayPostgresReadsTheKafkaRelaysAndTheDatabasesSettings(t *testing.T) {
	t.Parallel()
	pg := maps.Clone(full)
	pg["STORE"] = startup.StorePostgres
	pg["POSTGRES_HOST"], pg["POSTGRES_DATABASE"], pg["POSTGRES_USER"] = "proxy.example", "fifoworker", "fifoworker"
	buildPG := func(env map[string]string) error {
		_, err := kafkarelay.RelayPostgres(pgopen.Open)(startup.NewEnvFrom(env), withCredentials, slog.New(slog.DiscardHandler))
		return err
	}
	require.NoError(t, buildPG(pg))
	for _, k := range []string{"KAFKA_BOOTSTRAP_SERVERS", "COMMANDS_TOPIC", "EVENTS_TOPIC", "TOPIC_PARTITIONS", "POSTGRES_HOST", "POSTGRES_USER"} {
		without := maps.Clone(pg)
		delete(without, k)
		require.ErrorContains(t, buildPG(without), k+" is not set", k)
	}
	without := maps.Clone(pg)
	delete(without, "STORE")
	require.ErrorContains(t, buildPG(without), "build it without the postgres tag")
	require.ErrorContains(t, build(pg, withCredentials), "build it with the postgres tag")
}
