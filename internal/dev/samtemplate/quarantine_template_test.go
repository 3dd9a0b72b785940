package samtemplate_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// The Quarantine table is the one quarantine.DynamoStore works on: its key
// schema, sparse index and TTL attribute are read here from the package's
// exported names, so that neither side can change alone.
func TestTemplateQuarantineTableIsWhatDynamoStoreUses(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	res, ok := tpl.Resources["QuarantineTable"]
	require.True(t, ok, "template.yaml declares no QuarantineTable")
	require.Equal(t, "AWS::DynamoDB::Table", res.Type)
	p := res.Properties

	require.Equal(t, "PAY_PER_REQUEST", p["BillingMode"])
	require.Equal(t, []any{
		map[string]any{"AttributeName": quarantine.KeyHold, "KeyType": "HASH"},
		map[string]any{"AttributeName": quarantine.KeySort, "KeyType": "RANGE"},
	}, p["KeySchema"])
	require.ElementsMatch(t, []any{
		map[string]any{"AttributeName": quarantine.KeyHold, "AttributeType": "S"},
		map[string]any{"AttributeName": quarantine.KeySort, "AttributeType": "S"},
		map[string]any{"AttributeName": quarantine.AttrHeldQueue, "AttributeType": "S"},
		map[string]any{"AttributeName": quarantine.AttrHeldAt, "AttributeType": "N"}, // Unix milliseconds
	}, p["AttributeDefinitions"], "the keys of the table and of its index, typed as DynamoStore writes them")
	require.Equal(t, []any{map[string]any{
		"IndexName": quarantine.HeldIndex,
		"KeySchema": []any{
			map[string]any{"AttributeName": quarantine.AttrHeldQueue, "KeyType": "HASH"},
			map[string]any{"AttributeName": quarantine.AttrHeldAt, "KeyType": "RANGE"},
		},
		// Holds reads the holds themselves, consistently, by the keys.
		"Projection": map[string]any{"ProjectionType": "KEYS_ONLY"},
	}}, p["GlobalSecondaryIndexes"])
	require.Equal(t, map[string]any{"AttributeName": quarantine.AttrExpiresAt, "Enabled": true}, p["TimeToLiveSpecification"])
	require.Equal(t, map[string]any{"SSEEnabled": true}, chosen(t, tpl, nil, p["SSESpecification"]), "unless CustomerManagedKey")
	require.Equal(t, map[string]any{"PointInTimeRecoveryEnabled": true}, p["PointInTimeRecoverySpecification"])
	_, hasStream := p["StreamSpecification"]
	require.False(t, hasStream, "nothing reads a stream of the quarantine")

	require.Equal(t, map[string]any{"Value": map[string]any{"Ref": "QuarantineTable"}}, tpl.Outputs["QuarantineTableName"])
}

// A tombstone (a released hold, a message done or discarded) must outlive
// every copy of its message SQS may still hold: the TTL exceeds the
// longest retention of the template's FIFO queues.
func TestTemplateQuarantineTombstonesOutliveTheQueuesRetention(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	var fifo int
	for _, name := range tpl.OfType("AWS::SQS::Queue") {
		p := tpl.Resources[name].Properties
		if p["FifoQueue"] != true {
			continue
		}
		fifo++
		retention := 4 * 24 * time.Hour // SQS's default
		if v, ok := p["MessageRetentionPeriod"]; ok {
			retention = time.Duration(asInt(t, v)) * time.Second
		}
		require.Greater(t, quarantine.TombstoneTTL, retention, "%s keeps messages %v", name, retention)
	}
	require.NotZero(t, fifo, "template.yaml has no FIFO queue")
	require.Greater(t, quarantine.TombstoneTTL, 14*24*time.Hour, "SQS's longest retention is 14 days")
}
