package testenv

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/localstack"
)

// Stack reads back what localstack's Env writes (what `fifoworker local
// run` sets for its command), the PostgreSQL server included.
func TestStackReadsWhatEnvWrites(t *testing.T) {
	s := &localstack.State{Name: "x", Region: "eu-west-1", SQS: "http://127.0.0.1:1", DynamoDB: "http://127.0.0.1:2", S3: "http://127.0.0.1:3", Kafka: "127.0.0.1:4",
		Postgres: localstack.PostgresDSN(5), RIE: "/bin/rie"}
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Setenv("AWS_ENDPOINT_URL", "")
	require.Equal(t, s, Stack(t))
}

// recorder is a testing.TB that records a Fatalf instead of ending the
// test, to see what PostgresDSN says.
type recorder struct {
	testing.TB
	fatal   string
	skipped bool
}

func (r *recorder) Helper()                           {}
func (r *recorder) Fatalf(format string, args ...any) { r.fatal = fmt.Sprintf(format, args...) }
func (r *recorder) Skipf(string, ...any)              { r.skipped = true }
func (r *recorder) Skip(...any)                       { r.skipped = true }
func (r *recorder) SkipNow()                          { r.skipped = true }

// A test that needs the stack's PostgreSQL server fails without it, naming
// the variable; it never skips.
func TestPostgresDSNFailsWithoutTheServer(t *testing.T) {
	t.Setenv(localstack.PostgresDSNVar, "")
	r := &recorder{TB: t}
	PostgresDSN(r)
	require.Contains(t, r.fatal, localstack.PostgresDSNVar+" is not set")
	require.False(t, r.skipped)

	dsn := localstack.PostgresDSN(5)
	t.Setenv(localstack.PostgresDSNVar, dsn)
	r = &recorder{TB: t}
	require.Equal(t, dsn, PostgresDSN(r))
	require.Empty(t, r.fatal)
}
