package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// The poison job: two run commands for a job that does not exist yet
// reach the commands queue (as when commands are replayed from a backup
// before their jobs are restored). The worker refuses the first for good
// (no such job), so the quarantine holds the job's group and parks it; the
// second, and then the job's own command once the job is created, are
// parked behind it, in order, instead of running. The demo then fixes the
// cause (it creates the job through the API) and redrives the group: the
// three messages run in their original order, the first runs the job, the
// two others find it completed, and the hold is released. On Kafka the same
// with records: produced to the commands topic keyed by the job's id, held
// under that key (quarantine.KafkaGroup), and redriven as copies to the
// key's partition (poisonKafka).
const poisonIntent = "export-intent-poison"

// poisonSource is what the poison job asks of its transport: the
// quarantine's name of the commands queue or topic and of the job's group
// or key, a command sent straight to it (dedup: the copy's id, SQS's
// deduplication id or Kafka's outbox-id header), and the operator that
// redrives a group there.
type poisonSource struct {
	queue, group string
	send         func(ctx context.Context, body []byte, dedup string) error
	operator     func(store quarantine.Store) (*quarantine.Operator, error)
	close        func()
}

// poisonSQS is the commands queue's.
func (d *demoRun) poisonSQS(id string) (poisonSource, error) {
	queueURL := d.res.Resources["CommandsQueue"]
	queue, err := quarantine.QueueName(queueURL)
	if err != nil {
		return poisonSource{}, err
	}
	client := d.state.SQSClient()
	return poisonSource{queue: queue, group: id, close: func() {},
		send: func(ctx context.Context, body []byte, dedup string) error {
			_, err := client.SendMessage(ctx, &sqs.SendMessageInput{
				QueueUrl: aws.String(queueURL), MessageBody: aws.String(string(body)),
				MessageGroupId: aws.String(id), MessageDeduplicationId: aws.String(dedup),
			})
			return err
		},
		operator: func(store quarantine.Store) (*quarantine.Operator, error) {
			return quarantine.NewOperator(quarantine.OperatorConfig{Store: store, Queue: queue, QueueURL: queueURL, Sender: client, Poll: 200 * time.Millisecond})
		},
	}, nil
}

func (d *demoRun) poison(ctx context.Context, articles map[string]int) error {
	id := jobs.DeriveJobID("t-1", poisonIntent)
	source, err := d.poisonSQS(id)
	if d.kafka() {
		source, err = d.poisonKafka(id)
	}
	if err != nil {
		return err
	}
	defer source.close()
	queue, group := source.queue, source.group
	store, err := d.quarantineStore()
	if err != nil {
		return err
	}
	for i, dedup := range []string{id + "/early-1", id + "/early-2"} {
		body, err := json.Marshal(outbox.Command{
			Type: jobs.MessageRun, CommandID: jobs.OutboxID(id, 0), JobID: id, IntentID: poisonIntent, Tenant: "t-1",
			IssuedAt: time.Now().UTC().Truncate(time.Second),
		})
		if err != nil {
			return err
		}
		if err := source.send(ctx, body, dedup); err != nil {
			return fmt.Errorf("demo: send the poison command: %w", err)
		}
		want := int64(i + 1)
		h, err := d.waitHold(ctx, store, queue, group, func(h quarantine.HoldRecord) bool { return h.State == quarantine.StateHeld && h.Parked == want })
		if err != nil {
			return err
		}
		if i == 0 {
			d.say("poison: a command for job %s, which does not exist yet, failed for good → its group is held, the command parked: %s", id, h.Cause)
		} else {
			d.say("poison: the next command of the group is parked behind it without running: %d parked", h.Parked)
		}
	}
	d.sum.GroupsHeld++

	// The fix: the job is created. Its own command is parked behind the two.
	got, status, err := d.post(ctx, "t-1", poisonIntent, 25, true)
	if err != nil || status != http.StatusAccepted || got != id {
		return answerErr("the poison job's creation (job "+got+")", status, err)
	}
	d.submitted = append(d.submitted, demoJob{id: id, tenant: "t-1", intent: poisonIntent, role: "poison: held, parked, redriven", articles: articles["t-1"]})
	d.sum.Jobs = len(d.submitted)
	h, err := d.waitHold(ctx, store, queue, group, func(h quarantine.HoldRecord) bool { return h.Parked == 3 })
	if err != nil {
		return err
	}
	d.sum.Parked = int(h.Parked)
	d.say("poison: fixed (POST /jobs created %s); its own command is parked too: %d parked", id, h.Parked)

	op, err := source.operator(store)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	rep, err := op.Redrive(rctx, group, true)
	if err != nil {
		return fmt.Errorf("demo: redrive %s: %w", id, err)
	}
	d.sum.Redriven = rep.Sent
	d.say("poison: redrive of %s: %d sent in order under epoch %d → %s", id, rep.Sent, rep.Epoch, rep.State)
	if rep.State != quarantine.StateReleased {
		return fmt.Errorf("demo: the redrive of %s ended %s: %s", id, rep.State, rep.Cause)
	}
	// Order kept: the copies were processed in their original order, each
	// after the one before it had been recorded done.
	items, err := store.Messages(ctx, queue, group, "", "", 0)
	if err != nil {
		return err
	}
	d.sum.OrderKept = len(items) == 3
	for i, p := range items {
		if p.Status != quarantine.StatusDone || (i > 0 && p.UpdatedAt.Before(items[i-1].UpdatedAt)) {
			d.sum.OrderKept = false
		}
	}
	return nil
}

// waitHold waits until the group's hold satisfies ok.
func (d *demoRun) waitHold(ctx context.Context, store quarantine.Store, queue, group string, ok func(quarantine.HoldRecord) bool) (quarantine.HoldRecord, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		h, err := store.Hold(ctx, queue, group)
		if err == nil && ok(h) {
			return h, nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return h, fmt.Errorf("demo: group %s's hold did not come: %w", group, err)
			}
			return h, fmt.Errorf("demo: group %s's hold did not come (last: %+v)", group, h)
		}
		select {
		case <-ctx.Done():
			return h, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
