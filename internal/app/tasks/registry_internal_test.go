package tasks

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"
)

// A name registered twice is refused: the list, unlike a map literal, does
// not make it a compile error.
func TestANameRegisteredTwiceIsRefused(t *testing.T) {
	t.Parallel()
	cfg := Config{Articles: dynamodb.New(dynamodb.Options{}), ArticlesTable: "articles"}
	_, err := newRegistry(cfg, []registration{{NameExport, as(NewExport)}, {"other", as(NewExport)}, {NameExport, as(NewExport)}})
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.ErrorContains(t, err, "export is registered twice")
	_, err = newRegistry(cfg, []registration{{NameExport, as(NewExport)}, {"other", as(NewExport)}})
	require.NoError(t, err)
}
