package lambdawire

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/fifoworker/fifoworker/internal/base/pgcode"
	"github.com/fifoworker/fifoworker/internal/base/pgmigrate"
	"github.com/fifoworker/fifoworker/internal/lambdawire/pgschema"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

// The custom resource's answer, as CloudFormation's custom resource
// response objects page sets it out (checked 2026-12-02): a JSON body of
// at most 4,096 bytes PUT to the request's presigned ResponseURL, Status
// SUCCESS or FAILED (then with a Reason), a non-empty PhysicalResourceId
// (at most 1 KB) that stays the same for the resource, and StackId,
// RequestId and LogicalResourceId copied from the request. A different
// PhysicalResourceId on an update would read as a replacement, and
// CloudFormation would then send a delete for the old one.
const (
	// SchemaResourceID is DatabaseSchema's PhysicalResourceId when the
	// request carries none (a creation).
	SchemaResourceID = "fifoworker-schema"
	// maxReason bounds the Reason sent, so that the body stays far within
	// 4,096 bytes whatever the ids.
	maxReason = 1500
	// answerReserve is the time kept, before the invocation's deadline,
	// for the answer: the migrations stop that long before it, so that a
	// migration cut short is still answered FAILED, not left for
	// CloudFormation to wait an hour on.
	answerReserve = 10 * time.Second
	// firstRetry and maxRetry bound the wait between two tries of the
	// migrations that could not reach the database: it doubles from
	// firstRetry up to maxRetry, within the invocation's deadline.
	firstRetry = 500 * time.Millisecond
	maxRetry   = 10 * time.Second
)

// Migrate is template-postgres.yaml's MigrateFunction, the provider of the
// DatabaseSchema custom resource (Custom::FifoworkerSchema): on Create and
// Update it applies the jobs', the projection's and the quarantine's
// migrations (pgschema.Apply) to the database
// (OpenDB's settings), on Delete it does nothing (the data outlives the
// stack, as the cluster does), and it answers CloudFormation at the
// request's ResponseURL, FAILED with the reason when a migration fails.
// Settings: the database's and STORE "postgres". The handler's error is
// only a failed answer (Lambda then retries the invocation, which applies
// nothing twice).
//
// On a stack's first deployment RDS Proxy may still be registering its
// target when the schema is created: a try that cannot reach the database
// (no connection, or the server's connection, resource or start-up
// errors) is tried again, waiting firstRetry doubling to maxRetry, until
// the invocation's deadline less answerReserve (no retry without a
// deadline); an answer from the database that refuses the migrations is
// not retried.
//
// A rollback after a migration applied leaves the schema newer than the
// old code: its Update (pgmigrate's ErrNewer) is answered SUCCESS, the
// reason logged, since FAILED would leave the stack in
// UPDATE_ROLLBACK_FAILED; the migrations are additive, so the old code
// runs on the newer schema, which the next deployment of the newer code
// finds applied. A Create on a newer schema, and an applied migration
// whose file changed (ErrChanged), are still FAILED.
func Migrate(open OpenDB) startup.Builder[cfn.Event, struct{}] {
	return func(env *startup.Env, cfg aws.Config, log *slog.Logger) (func(context.Context, cfn.Event) (struct{}, error), error) {
		startup.CheckStore(env, startup.StorePostgres)
		db := open(env, cfg)
		if err := env.Err(); err != nil {
			return nil, err
		}
		m := &migrator{db: db, client: http.DefaultClient, log: log, firstRetry: firstRetry}
		return m.handle, nil
	}
}

// migrator answers the schema's custom resource requests.
type migrator struct {
	db     *sql.DB
	client *http.Client
	log    *slog.Logger
	// firstRetry is the first wait before the migrations are tried again
	// (the constant's value; tests shorten it).
	firstRetry time.Duration
}

// handle applies the migrations a request asks for and answers it.
func (m *migrator) handle(ctx context.Context, ev cfn.Event) (struct{}, error) {
	resp := cfn.NewResponse(&ev)
	resp.PhysicalResourceID = ev.PhysicalResourceID
	if resp.PhysicalResourceID == "" {
		resp.PhysicalResourceID = SchemaResourceID
	}
	resp.Status = cfn.StatusSuccess
	err := m.apply(ctx, ev.RequestType)
	if err != nil && ev.RequestType == cfn.RequestUpdate && errors.Is(err, pgmigrate.ErrNewer) {
		m.log.WarnContext(ctx, "migrate: the database's schema is newer than this code (a rollback?): nothing applied, answered SUCCESS",
			"logical_resource_id", ev.LogicalResourceID, "error", err)
		err = nil
	}
	if err != nil {
		resp.Status, resp.Reason = cfn.StatusFailed, reason(err)
	}
	m.log.InfoContext(ctx, "migrate: answering CloudFormation", "request_type", string(ev.RequestType),
		"logical_resource_id", ev.LogicalResourceID, "status", string(resp.Status), "reason", resp.Reason)
	if err := m.answer(ctx, ev.ResponseURL, resp); err != nil {
		m.log.ErrorContext(ctx, "migrate: the answer was not delivered; Lambda retries the request", "error", err)
		return struct{}{}, err
	}
	return struct{}{}, nil
}

// errUnknownRequest is a request type CloudFormation does not send.
var errUnknownRequest = errors.New("migrate: unknown request type")

// apply applies the migrations for a Create or an Update, nothing for a
// Delete, within the invocation's time less answerReserve.
func (m *migrator) apply(ctx context.Context, rt cfn.RequestType) error {
	switch rt {
	case cfn.RequestDelete:
		return nil
	case cfn.RequestCreate, cfn.RequestUpdate:
	default:
		return fmt.Errorf("%w %q (Create, Update or Delete)", errUnknownRequest, rt)
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		return pgschema.Apply(ctx, m.db)
	}
	ctx, cancel := context.WithDeadline(ctx, deadline.Add(-answerReserve))
	defer cancel()
	wait := m.firstRetry
	for try := 1; ; try++ {
		err := pgschema.Apply(ctx, m.db)
		if err == nil || !unreachableDB(err) {
			return err
		}
		m.log.WarnContext(ctx, "migrate: the database could not be reached; trying again", "try", try, "wait", wait, "error", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (tried %d times until the deadline)", err, try)
		case <-t.C:
		}
		wait = min(2*wait, maxRetry)
	}
}

// unreachableDB reports whether err is a try that did not reach the
// database, which a later one may: the network's failure (a refused or
// reset connection, a name not found yet, a stream cut short) or the
// server's connection exception class 08 (but 08P01, a protocol violation), insufficient resources 53,
// start-up and shutdown 57P01-57P03 or a session ended for idleness
// 57P05. Not an answer that refuses the
// migrations (pgmigrate's sentinels, any other SQL error), a cancellation,
// nor an error of the program's own (an argument it cannot send, a
// setting): tried again, those would fail the same way until the
// deadline. The SQLSTATE is read through the interface the driver's error
// has (pgcode), so that the wiring links no driver.
func unreachableDB(err error) bool {
	if errors.Is(err, pgmigrate.ErrNewer) || errors.Is(err, pgmigrate.ErrChanged) || errors.Is(err, context.Canceled) {
		return false
	}
	code, ok := pgcode.Of(err)
	if !ok {
		var netErr net.Error
		return errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
			errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
	}
	switch {
	case code == "08P01": // protocol_violation: the program's (or the driver's) fault, not the network's
		return false
	case strings.HasPrefix(code, "08"), strings.HasPrefix(code, "53"):
		return true
	}
	// 57P05: the session was ended for idleness (idle_session_timeout), a
	// pooled one found dead at its next use; a new connection is not.
	return code == "57P01" || code == "57P02" || code == "57P03" || code == "57P05"
}

// reason is err's message, cut to maxReason bytes.
func reason(err error) string {
	msg := err.Error()
	if len(msg) > maxReason {
		msg = msg[:maxReason] + "…"
	}
	return msg
}

// answer PUTs resp to url, the request's presigned S3 URL. It sends no
// Content-Type: the URL is signed for none.
func (m *migrator) answer(ctx context.Context, url string, resp *cfn.Response) error {
	body, err := json.Marshal(resp)
	if err != nil {
		return fmt.Errorf("migrate: encode the answer: %w", err)
	}
	// Its own bound: the migrations may have spent the invocation's time.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), answerReserve)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("migrate: the response URL: %w", err)
	}
	res, err := m.client.Do(req)
	if err != nil {
		return fmt.Errorf("migrate: answer: %w", err)
	}
	defer func() { _ = res.Body.Close() }()
	if res.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		return fmt.Errorf("migrate: answer: %s: %s", res.Status, bytes.TrimSpace(msg))
	}
	return nil
}
