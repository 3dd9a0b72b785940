//go:build integration

package test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/internal/dev/testenv"
	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
	"github.com/fifoworker/fifoworker/pkg/quarantine/quarantinetest"
)

// quarantineActions records the IAM actions a DynamoDB client's requests
// make on the quarantine table (testenv.IAMRecorder's), each with the
// resource it names: "table", or "index/NAME".
type quarantineActions struct {
	*testenv.IAMRecorder
	arn string // the table's
}

func newQuarantineActions(t *testing.T, table string) quarantineActions {
	t.Helper()
	arn := "arn:aws:dynamodb:eu-west-1:123456789012:table/" + table
	rec, err := testenv.NewIAMRecorder(testenv.IAMRecorderConfig{Names: testenv.IAMNames{Tables: map[string]testenv.IAMTable{
		table: {ARN: arn, Hash: quarantine.KeyHold, Indexes: map[string]string{quarantine.HeldIndex: quarantine.AttrHeldQueue}},
	}}})
	require.NoError(t, err)
	return quarantineActions{IAMRecorder: rec, arn: arn}
}

// take returns the actions recorded since the last take, sorted.
func (r quarantineActions) take() []string {
	seen := map[string]bool{}
	for _, q := range r.Requests() {
		resource := q.Resource // an unknown one as it is, to fail the comparison
		if resource == r.arn {
			resource = "table"
		} else if index, ok := strings.CutPrefix(resource, r.arn+"/"); ok {
			resource = index
		}
		seen[q.Action+" "+resource] = true
	}
	r.Reset()
	return slices.Sorted(maps.Keys(seen))
}

// roleQuarantineActions returns the actions fn's role allows on the
// quarantine table and its indexes, in iamActions's form.
func roleQuarantineActions(t *testing.T, tpl *samtemplate.Template, fn string) []string {
	t.Helper()
	ga, _ := tpl.Resources[fn].Properties["Role"].(map[string]any)["Fn::GetAtt"].([]any)
	require.Len(t, ga, 2, "%s: a role of its own", fn)
	role, _ := ga[0].(string)
	out := map[string]bool{}
	policies, _ := tpl.Resources[role].Properties["Policies"].([]any)
	for _, p := range policies {
		doc, _ := p.(map[string]any)["PolicyDocument"].(map[string]any)
		statements, _ := doc["Statement"].([]any)
		for _, st := range statements {
			s, _ := st.(map[string]any)
			for _, r := range list(s["Resource"]) {
				res := quarantineResource(r)
				if res == "" {
					continue
				}
				for _, a := range list(s["Action"]) {
					out[fmt.Sprint(a)+" "+res] = true
				}
			}
		}
	}
	return slices.Sorted(maps.Keys(out))
}

func list(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}

// quarantineResource is "table" for the quarantine table's ARN, "index/X"
// for one of its indexes, "" for anything else.
func quarantineResource(r any) string {
	m, _ := r.(map[string]any)
	if ga, ok := m["Fn::GetAtt"].([]any); ok && len(ga) == 2 && ga[0] == "QuarantineTable" && ga[1] == "Arn" {
		return "table"
	}
	if sub, ok := m["Fn::Sub"].(string); ok {
		if idx, ok := strings.CutPrefix(sub, "${QuarantineTable.Arn}/"); ok {
			return idx
		}
	}
	return ""
}

// TestTheFunctionsRolesAllowExactlyWhatTheQuarantineCalls runs every call
// the worker's and the projector's quarantine make (the batch's check, a
// park that holds, a park while held, the redriven copies' dones, the
// first of which reads the message parked next, the last releasing, and a
// re-hold) and the sweeper's held-groups gauge, on DynamoDB Local, and
// holds template.yaml's roles to exactly the IAM actions those requests
// need on the quarantine table: the emulators enforce no IAM, so a
// missing action would first show on AWS, as AccessDenied on a redrive.
func TestTheFunctionsRolesAllowExactlyWhatTheQuarantineCalls(t *testing.T) {
	t.Parallel()
	b := newQuarantineTable(t)
	rec := newQuarantineActions(t, b.table)
	procDB := dynamodb.NewFromConfig(awstest.Config(t), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, rec.Install)
		o.DisableValidateResponseChecksum = true
	})
	store, err := quarantine.NewDynamoStore(quarantine.DynamoConfig{Client: procDB, Table: b.table})
	require.NoError(t, err)
	q, err := quarantine.New(quarantine.Config{Store: store, QueueARN: unitARN})
	require.NoError(t, err)
	failing := map[string]bool{"one": true, "again": true}
	var mu sync.Mutex
	p, err := fifo.New(fifo.Config{Handler: func(_ context.Context, m events.SQSMessage) error {
		mu.Lock()
		defer mu.Unlock()
		if failing[m.Body] {
			return fifo.Permanent(errors.New("not yet"))
		}
		return nil
	}, Quarantine: q, QuarantineThreshold: 3})
	require.NoError(t, err)
	process := func(msgs ...events.SQSMessage) {
		t.Helper()
		resp, err := p.Process(t.Context(), events.SQSEvent{Records: msgs})
		require.NoError(t, err)
		require.Empty(t, resp.BatchItemFailures)
	}
	process(unitMsg("g", 1, "one"), unitMsg("g", 2, "two")) // held, both parked
	process(unitMsg("g", 3, "three"))                       // parked while held

	// The sweeper's gauge, on a client of its own, while the group is held.
	gaugeRec := newQuarantineActions(t, b.table)
	gaugeDB := dynamodb.NewFromConfig(awstest.Config(t), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, gaugeRec.Install)
		o.DisableValidateResponseChecksum = true
	})
	gaugeStore, err := quarantine.NewDynamoStore(quarantine.DynamoConfig{Client: gaugeDB, Table: b.table})
	require.NoError(t, err)
	held, err := gaugeStore.Holds(t.Context(), "unit.fifo")
	require.NoError(t, err)
	require.Len(t, held, 1)
	gauge := gaugeRec.take()

	out := &quarantinetest.Sends{}
	opStore, err := quarantine.NewDynamoStore(quarantine.DynamoConfig{Client: b.client, Table: b.table})
	require.NoError(t, err)
	op, err := quarantine.NewOperator(quarantine.OperatorConfig{Store: opStore, Queue: "unit.fifo", QueueURL: "http://127.0.0.1:1/q/unit.fifo", Sender: out})
	require.NoError(t, err)
	redrive := func() []events.SQSMessage {
		t.Helper()
		from := len(out.Inputs)
		_, err := op.Redrive(t.Context(), "g", false)
		require.NoError(t, err)
		var copies []events.SQSMessage
		for i, in := range out.Inputs[from:] {
			copies = append(copies, asCopy(in, fmt.Sprintf("copy-%d-%d", from, i), 5000+from+i))
		}
		return copies
	}
	copies := redrive()
	require.Len(t, copies, 3)
	mu.Lock()
	failing["one"] = false
	failing["two"] = true // the second copy fails again: a re-hold
	mu.Unlock()
	process(copies...)
	mu.Lock()
	failing["two"] = false
	mu.Unlock()
	process(redrive()...) // the rest run; the last releases the hold
	h, err := op.Hold(t.Context(), "g")
	require.NoError(t, err)
	require.Equal(t, quarantine.StateReleased, h.State)
	processor := rec.take()
	require.Equal(t, []string{
		"dynamodb:BatchGetItem table", // the batch's holds; a park's read
		"dynamodb:GetItem table",      // a done's read of the hold
		"dynamodb:PutItem table",      // parked messages, holds
		"dynamodb:Query table",        // a done's read of the message parked next
		"dynamodb:UpdateItem table",   // a message done
	}, processor, "what this test exercised")

	tpl, err := samtemplate.Load("../template.yaml")
	require.NoError(t, err)
	for _, fn := range []string{"WorkerFunction", "ProjectorFunction"} {
		require.Equal(t, processor, roleQuarantineActions(t, tpl, fn), "%s's role on the quarantine table", fn)
	}
	require.Equal(t, gauge, roleQuarantineActions(t, tpl, "SweeperFunction"), "the sweeper's role on the quarantine table")
}

// quarantineTable is a table of quarantine.Table's shape (template.yaml's
// QuarantineTable is held to it) with its TTL, unique to the test, and a
// client for the test's own reads and writes.
type quarantineTable struct {
	client *dynamodb.Client
	table  string
}

func newQuarantineTable(t *testing.T) quarantineTable {
	t.Helper()
	client := awstest.DynamoDB(t, func(o *dynamodb.Options) {
		o.DisableValidateResponseChecksum = true // DynamoDB Local sends no X-Amz-Crc32 with errors
	})
	return quarantineTable{client: client, table: awstest.Table(t, client, quarantine.Table(awstest.Name(t, "quarantine")), quarantine.AttrExpiresAt)}
}

// unitARN is the queue the quarantine in
// TestTheFunctionsRolesAllowExactlyWhatTheQuarantineCalls holds groups of;
// no such queue exists: the test delivers its messages itself.
const unitARN = "arn:aws:sqs:eu-west-1:123456789012:unit.fifo"

// unitMsg is message n of group g, with SequenceNumber 1000+n.
func unitMsg(g string, n int, body string) events.SQSMessage {
	return unitDelivery(fmt.Sprintf("%s-%d", g, n), g, body, "d-"+strconv.Itoa(1000+n), 1000+n)
}

// asCopy is what the queue delivers for a sent copy: a new message of the
// group, with the copy's deduplication id and a new sequence number.
func asCopy(in *sqs.SendMessageInput, id string, seq int) events.SQSMessage {
	return unitDelivery(id, aws.ToString(in.MessageGroupId), aws.ToString(in.MessageBody), aws.ToString(in.MessageDeduplicationId), seq)
}

func unitDelivery(id, group, body, dedup string, seq int) events.SQSMessage {
	return events.SQSMessage{
		MessageId: id, Body: body, EventSourceARN: unitARN,
		Attributes: map[string]string{
			"MessageGroupId": group, "SequenceNumber": strconv.Itoa(seq), "MessageDeduplicationId": dedup, "ApproximateReceiveCount": "1",
		},
	}
}
