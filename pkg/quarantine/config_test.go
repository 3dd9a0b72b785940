package quarantine_test

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// TestConstructorsRefuseAnInvalidConfig: each constructor refuses a
// configuration that cannot work with ErrInvalidConfig and the field's
// name, and takes one exactly at a bound.
func TestConstructorsRefuseAnInvalidConfig(t *testing.T) {
	t.Parallel()
	store := quarantine.NewMemoryStore()
	newQuarantine := func(c quarantine.Config) (any, error) { return quarantine.New(c) }
	newDynamo := func(c quarantine.DynamoConfig) (any, error) { return quarantine.NewDynamoStore(c) }
	newBodies := func(c quarantine.S3BodiesConfig) (any, error) { return quarantine.NewS3Bodies(c) }
	newOperator := func(c quarantine.OperatorConfig) (any, error) { return quarantine.NewOperator(c) }
	operator := quarantine.OperatorConfig{Store: store, Queue: "unit.fifo", QueueURL: "http://127.0.0.1:1/q/unit.fifo", Sender: &sqs.Client{}}
	for _, tc := range []struct {
		name  string
		build func() (any, error)
		field string // "" when the configuration is valid
	}{
		{"quarantine", func() (any, error) { return newQuarantine(quarantine.Config{Store: store, QueueARN: unitARN}) }, ""},
		{"quarantine without a store", func() (any, error) { return newQuarantine(quarantine.Config{QueueARN: unitARN}) }, "Store"},
		{"quarantine without a queue", func() (any, error) { return newQuarantine(quarantine.Config{Store: store}) }, "QueueARN"},
		{"quarantine on an ARN ending in a colon", func() (any, error) {
			return newQuarantine(quarantine.Config{Store: store, QueueARN: "arn:aws:sqs:eu-west-1:123456789012:"})
		}, "QueueARN"},
		{"quarantine keeping a negative inline body", func() (any, error) {
			return newQuarantine(quarantine.Config{Store: store, QueueARN: unitARN, MaxInlineBody: -1})
		}, "MaxInlineBody"},
		{"quarantine keeping one inline byte", func() (any, error) {
			return newQuarantine(quarantine.Config{Store: store, QueueARN: unitARN, MaxInlineBody: 1, Bodies: memBodies{}})
		}, ""},
		{"dynamo store", func() (any, error) {
			return newDynamo(quarantine.DynamoConfig{Client: &dynamodb.Client{}, Table: "quarantine"})
		}, ""},
		{"dynamo store without a client", func() (any, error) { return newDynamo(quarantine.DynamoConfig{Table: "quarantine"}) }, "Client"},
		{"dynamo store without a table", func() (any, error) { return newDynamo(quarantine.DynamoConfig{Client: &dynamodb.Client{}}) }, "Table"},
		{"s3 bodies", func() (any, error) {
			return newBodies(quarantine.S3BodiesConfig{Client: &s3.Client{}, Bucket: "bodies"})
		}, ""},
		{"s3 bodies without a client", func() (any, error) { return newBodies(quarantine.S3BodiesConfig{Bucket: "bodies"}) }, "Client"},
		{"s3 bodies without a bucket", func() (any, error) { return newBodies(quarantine.S3BodiesConfig{Client: &s3.Client{}}) }, "Bucket"},
		{"operator", func() (any, error) { return newOperator(operator) }, ""},
		{"operator that only reads", func() (any, error) { return newOperator(quarantine.OperatorConfig{Store: store, Queue: "unit.fifo"}) }, ""},
		{"operator without a store", func() (any, error) {
			c := operator
			c.Store = nil
			return newOperator(c)
		}, "Store"},
		{"operator without a queue", func() (any, error) {
			c := operator
			c.Queue = ""
			return newOperator(c)
		}, "Queue"},
		{"operator sending nowhere", func() (any, error) {
			c := operator
			c.QueueURL = ""
			return newOperator(c)
		}, "QueueURL"},
		{"operator without a sender", func() (any, error) {
			c := operator
			c.Sender = nil
			return newOperator(c)
		}, "Sender"},
		{"operator polling at a negative interval", func() (any, error) {
			c := operator
			c.Poll = -time.Nanosecond
			return newOperator(c)
		}, "Poll"},
		{"operator polling every nanosecond", func() (any, error) {
			c := operator
			c.Poll = time.Nanosecond
			return newOperator(c)
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := tc.build()
			if tc.field == "" {
				require.NoError(t, err)
				require.NotNil(t, got)
				return
			}
			require.ErrorIs(t, err, quarantine.ErrInvalidConfig)
			require.ErrorContains(t, err, tc.field)
			require.Nil(t, got)
		})
	}
}

// TestAReadingOperatorRefusesToRedrive: an operator built without a
// sender reads, and refuses a redrive with an error, not a panic.
func TestAReadingOperatorRefusesToRedrive(t *testing.T) {
	t.Parallel()
	op, err := quarantine.NewOperator(quarantine.OperatorConfig{Store: quarantine.NewMemoryStore(), Queue: "unit.fifo"})
	require.NoError(t, err)
	_, err = op.List(t.Context())
	require.NoError(t, err)
	_, err = op.Redrive(t.Context(), "g", false)
	require.ErrorContains(t, err, "redrive needs a Sender and a QueueURL")
	_, err = op.Hold(t.Context(), "g")
	require.ErrorIs(t, err, quarantine.ErrNoHold)
	require.ErrorContains(t, err, `queue "unit.fifo" has no hold on group "g"`)
}
