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
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-sdk-go-v2/aws"

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
// A rollback after a migration applied leaves the schema newer than the
// old code: its Update then fails (pgmigrate's ErrNewer) and the rollback
// stops there, UPDATE_ROLLBACK_FAILED, for an operator to continue it
// skipping DatabaseSchema: code never runs on a schema it does not know.
func Migrate(open OpenDB) startup.Builder[cfn.Event, struct{}] {
	return func(env *startup.Env, cfg aws.Config, log *slog.Logger) (func(context.Context, cfn.Event) (struct{}, error), error) {
		startup.CheckStore(env, startup.StorePostgres)
		db := open(env, cfg)
		if err := env.Err(); err != nil {
			return nil, err
		}
		m := &migrator{db: db, client: http.DefaultClient, log: log}
		return m.handle, nil
	}
}

// migrator answers the schema's custom resource requests.
type migrator struct {
	db     *sql.DB
	client *http.Client
	log    *slog.Logger
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
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-answerReserve))
		defer cancel()
	}
	return pgschema.Apply(ctx, m.db)
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
