package cfnschema_test

import (
	"testing"
)

// TestKafkaPostgresTemplateMatchesTheRegistrySchemas: template-kafka-postgres.yaml,
// the seed's own system (Kafka in, the arbiter on PostgreSQL), passes the
// check template-postgres.yaml passes (TestPostgresTemplateMatchesTheRegistrySchemas),
// its Kafka event source mappings checked too, each Fn::If branch (MSK or
// a self-managed cluster, a new database cluster or an existing one,
// endpoints made or not) included, and every reference; the schema's
// custom resource alone is skipped (no registry schema describes it).
func TestKafkaPostgresTemplateMatchesTheRegistrySchemas(t *testing.T) {
	t.Parallel()
	requirePostgresTemplateMatches(t, "template-kafka-postgres.yaml", "AWS::Lambda::EventSourceMapping")
}
