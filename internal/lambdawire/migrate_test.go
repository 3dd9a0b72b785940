package lambdawire

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/base/pgmigrate"
	"github.com/fifoworker/fifoworker/internal/base/pgwire"
	"github.com/fifoworker/fifoworker/internal/lambdawire/pgopen"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

// responseServer stands in for the presigned S3 URL CloudFormation gives a
// custom resource: it records each PUT and answers status.
type responseServer struct {
	*httptest.Server
	mu      sync.Mutex
	status  int
	answers []cfn.Response
	headers []http.Header
}

func newResponseServer(t *testing.T) *responseServer {
	t.Helper()
	rs := &responseServer{status: http.StatusOK}
	rs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rs.mu.Lock()
		defer rs.mu.Unlock()
		if r.Method != http.MethodPut || r.URL.Path != "/response" {
			http.Error(w, "not the presigned URL's method and path", http.StatusBadRequest)
			return
		}
		var resp cfn.Response
		if err := json.Unmarshal(body, &resp); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rs.answers = append(rs.answers, resp)
		rs.headers = append(rs.headers, r.Header.Clone())
		w.WriteHeader(rs.status)
	}))
	t.Cleanup(rs.Close)
	return rs
}

func (rs *responseServer) last(t *testing.T) (cfn.Response, http.Header) {
	t.Helper()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	require.NotEmpty(t, rs.answers, "no answer")
	return rs.answers[len(rs.answers)-1], rs.headers[len(rs.headers)-1]
}

// schemaEvent is CloudFormation's request for DatabaseSchema.
func schemaEvent(rt cfn.RequestType, url, physical string) cfn.Event {
	return cfn.Event{RequestType: rt, RequestID: "req-" + string(rt), ResponseURL: url + "/response",
		ResourceType: "Custom::FifoworkerSchema", PhysicalResourceID: physical, LogicalResourceID: "DatabaseSchema",
		StackID: "arn:aws:cloudformation:eu-west-1:123456789012:stack/fw/1", ResourceProperties: map[string]any{"MigrateVersion": "3"}}
}

// migrateOn is Migrate's handler on the database db.
func migrateOn(t *testing.T, db *sql.DB) func(context.Context, cfn.Event) (struct{}, error) {
	t.Helper()
	env := startup.NewEnvFrom(map[string]string{"STORE": startup.StorePostgres})
	h, err := Migrate(func(*startup.Env, aws.Config) *sql.DB { return db })(env, aws.Config{}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	return h
}

// unreachable is a pool on a port nothing listens on: any statement fails.
func unreachable(t *testing.T) *sql.DB {
	t.Helper()
	env := startup.NewEnvFrom(map[string]string{pgopen.DSNVar: "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=5"})
	db := pgopen.Open(env, aws.Config{})
	require.NoError(t, env.Err())
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// A Delete applies nothing and touches no database (this one is
// unreachable), and answers SUCCESS under the resource's own id, the
// request's ids copied, with no Content-Type (the presigned URL is signed
// for none).
func TestMigrateAnswersADeleteWithoutTouchingTheDatabase(t *testing.T) {
	t.Parallel()
	rs := newResponseServer(t)
	_, err := migrateOn(t, unreachable(t))(t.Context(), schemaEvent(cfn.RequestDelete, rs.URL, "fifoworker-schema"))
	require.NoError(t, err)
	got, header := rs.last(t)
	require.Equal(t, cfn.Response{Status: cfn.StatusSuccess, RequestID: "req-Delete", LogicalResourceID: "DatabaseSchema",
		StackID: "arn:aws:cloudformation:eu-west-1:123456789012:stack/fw/1", PhysicalResourceID: "fifoworker-schema"}, got)
	require.Empty(t, header.Get("Content-Type"))
}

// A Create whose migrations fail (the database cannot be reached) is
// answered FAILED, with the reason, under SchemaResourceID (a creation
// carries no id); the invocation itself succeeds, as its answer was
// delivered. An unknown request type is FAILED too.
func TestMigrateAnswersAFailedMigrationFailed(t *testing.T) {
	t.Parallel()
	rs := newResponseServer(t)
	h := migrateOn(t, unreachable(t))
	_, err := h(t.Context(), schemaEvent(cfn.RequestCreate, rs.URL, ""))
	require.NoError(t, err)
	got, _ := rs.last(t)
	require.Equal(t, cfn.StatusFailed, got.Status)
	require.Equal(t, SchemaResourceID, got.PhysicalResourceID)
	require.Contains(t, got.Reason, "migrate jobs: ")

	_, err = h(t.Context(), schemaEvent("Replace", rs.URL, "fifoworker-schema"))
	require.NoError(t, err)
	got, _ = rs.last(t)
	require.Equal(t, cfn.StatusFailed, got.Status)
	require.Contains(t, got.Reason, `unknown request type "Replace"`)
}

// An answer the response URL refuses is the invocation's error, so that
// Lambda retries it (a retried migration applies nothing twice).
func TestMigrateReturnsAnAnswerNotDelivered(t *testing.T) {
	t.Parallel()
	rs := newResponseServer(t)
	rs.status = http.StatusForbidden
	_, err := migrateOn(t, unreachable(t))(t.Context(), schemaEvent(cfn.RequestDelete, rs.URL, "fifoworker-schema"))
	require.ErrorContains(t, err, "403")
}

// The Reason is cut so that the answer stays far below the 4,096 bytes
// CloudFormation takes, whatever the error says.
func TestMigrateCutsALongReason(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 10_000)
	require.Len(t, reason(errString(long[:maxReason])), maxReason)
	require.Equal(t, long[:maxReason]+"…", reason(errString(long[:maxReason+1])))
}

type errString string

func (e errString) Error() string { return string(e) }

// sqlStateError is an error with a SQLSTATE, as the driver's Error.
type sqlStateError string

func (e sqlStateError) Error() string    { return "server: " + string(e) }
func (e sqlStateError) SQLState() string { return string(e) }

// A try is retried only when it did not reach the database: the network's
// failure, or the server's connection, resource or start-up errors; not
// pgmigrate's refusals, another SQL error, a cancellation or an error of
// the program's own (which, retried, would fail the same way for minutes).
func TestUnreachableDBTellsATryToRepeat(t *testing.T) {
	t.Parallel()
	for err, want := range map[error]bool{
		&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}:                                    true,
		fmt.Errorf("pgwire: connect to db:5432: %w", &net.DNSError{Err: "no such host", IsNotFound: true}): true,
		fmt.Errorf("pgwire: %w", io.ErrUnexpectedEOF):                                                      true,
		io.EOF: true,
		fmt.Errorf("read: %w", syscall.ECONNRESET):                    true,
		errString("pgwire: argument $1: type uint8 is not supported"): false,
		errString("an error of the program's own"):                    false,
		fmt.Errorf("migrate jobs: %w", sqlStateError("08006")):        true,
		sqlStateError("08P01"):                                        false,
		sqlStateError("53300"):                                        true,
		sqlStateError("57P03"):                                        true,
		// The server ended a pooled session left idle past its
		// idle_session_timeout: a new connection is what a retry takes.
		&pgwire.Error{Severity: "FATAL", Code: "57P05"}:                                                                       true,
		fmt.Errorf("pgwire: commit: %w: %w", pgwire.ErrBroken, &pgwire.Error{Severity: "FATAL", Code: "57P01"}):               true,
		fmt.Errorf("pgwire: connect to db:5432 as u: TLS: %w", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}): true,
		sqlStateError("57P04"):                               false,
		sqlStateError("57014"):                               false,
		sqlStateError("28000"):                               false,
		sqlStateError("42601"):                               false,
		fmt.Errorf("migrate jobs: %w", pgmigrate.ErrNewer):   false,
		fmt.Errorf("migrate jobs: %w", pgmigrate.ErrChanged): false,
		context.Canceled:                                     false,
	} {
		require.Equal(t, want, unreachableDB(err), err.Error())
	}
}
