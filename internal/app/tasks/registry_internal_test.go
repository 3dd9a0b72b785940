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
	twice := []registration{{NameExport, checkExportSpec, as(NewExport)}, {"other", checkExportSpec, as(NewExport)}, {NameExport, checkExportSpec, as(NewExport)}}
	_, err := newRegistry(cfg, twice)
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.ErrorContains(t, err, "export is registered twice")
	_, err = newChecker(twice)
	require.ErrorIs(t, err, ErrInvalidConfig, "intake's checker too")
	require.ErrorContains(t, err, "export is registered twice")
	once := twice[:2]
	_, err = newRegistry(cfg, once)
	require.NoError(t, err)
	_, err = newChecker(once)
	require.NoError(t, err)
}
