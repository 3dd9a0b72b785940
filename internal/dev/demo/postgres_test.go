package demo

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/faultproxy"
)

// The jobs store's accept statement answers one row (written, image): a
// late accept is refused when written is false, in either format.
func TestAcceptRefusedReadsTheStatementsWrittenColumn(t *testing.T) {
	row := func(written string) faultproxy.PostgresReleased {
		return faultproxy.PostgresReleased{Tags: []string{"SELECT 1"}, Rows: [][][]byte{{[]byte(written), []byte(`{}`)}}}
	}
	require.True(t, acceptRefused(row("\x00")), "binary false")
	require.True(t, acceptRefused(row("f")), "text false")
	require.False(t, acceptRefused(row("\x01")), "written")
	require.False(t, acceptRefused(row("t")), "written")
	require.False(t, acceptRefused(faultproxy.PostgresReleased{Tags: []string{"SELECT 0"}}), "no job: not the fence")
	failed := row("\x00")
	failed.Err = errors.New("the server: gone")
	require.False(t, acceptRefused(failed), "an error is no refusal")
}
