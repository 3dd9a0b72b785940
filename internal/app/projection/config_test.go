package projection_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/projection"
)

// TestConstructorsRefuseAnInvalidConfig: each constructor refuses a
// configuration that cannot work with ErrInvalidConfig and the field's
// name, and takes a threshold exactly at either bound.
func TestConstructorsRefuseAnInvalidConfig(t *testing.T) {
	t.Parallel()
	store := projection.NewMemoryStore()
	projector := func(c projection.ProjectorConfig) func() (any, error) {
		return func() (any, error) { return projection.NewProjector(c) }
	}
	dynamo := func(c projection.DynamoConfig) func() (any, error) {
		return func() (any, error) { return projection.NewDynamoStore(c) }
	}
	tables := projection.Tables{Views: "views", Totals: "totals"}
	for _, tc := range []struct {
		name  string
		build func() (any, error)
		field string // "" when the configuration is valid
	}{
		{"projector", projector(projection.ProjectorConfig{Store: store, Source: &fakeJobs{}}), ""},
		{"projector without a store", projector(projection.ProjectorConfig{Source: &fakeJobs{}}), "Store"},
		{"projector without a source", projector(projection.ProjectorConfig{Store: store}), "Source"},
		{"negative RecoverAfter", projector(projection.ProjectorConfig{Store: store, Source: &fakeJobs{}, RecoverAfter: -1}), "RecoverAfter"},
		{"RecoverAfter 1", projector(projection.ProjectorConfig{Store: store, Source: &fakeJobs{}, RecoverAfter: 1}), ""},
		{"RecoverAfter at MaxRecoverAfter", projector(projection.ProjectorConfig{Store: store, Source: &fakeJobs{}, RecoverAfter: projection.MaxRecoverAfter}), ""},
		{"RecoverAfter beyond MaxRecoverAfter", projector(projection.ProjectorConfig{Store: store, Source: &fakeJobs{}, RecoverAfter: projection.MaxRecoverAfter + 1}), "RecoverAfter"},
		{"dynamo store", dynamo(projection.DynamoConfig{Client: &dynamodb.Client{}, Tables: tables}), ""},
		{"dynamo store without a client", dynamo(projection.DynamoConfig{Tables: tables}), "Client"},
		{"dynamo store without a views table", dynamo(projection.DynamoConfig{Client: &dynamodb.Client{}, Tables: projection.Tables{Totals: "totals"}}), "Tables.Views"},
		{"dynamo store without a totals table", dynamo(projection.DynamoConfig{Client: &dynamodb.Client{}, Tables: projection.Tables{Views: "views"}}), "Tables.Totals"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := tc.build()
			if tc.field == "" {
				require.NoError(t, err)
				require.NotNil(t, got)
				return
			}
			require.ErrorIs(t, err, projection.ErrInvalidConfig)
			require.ErrorContains(t, err, tc.field)
			require.Nil(t, got)
		})
	}
}
