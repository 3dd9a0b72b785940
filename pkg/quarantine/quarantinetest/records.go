package quarantinetest

import (
	"context"
	"sync"

	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// Records is a quarantine.RecordSender that keeps what a Kafka redrive
// sends, in order, instead of producing it: a test then delivers the
// copies itself, as the topic would. Fail, when set, is called first with
// each copy, and its error is the send's. Read Sent once the redrive has
// returned.
type Records struct {
	Fail func(quarantine.KafkaCopy) error

	mu   sync.Mutex
	Sent []quarantine.KafkaCopy
}

var _ quarantine.RecordSender = (*Records)(nil)

// SendRecord records c, as the brokers' acknowledgement of it.
func (r *Records) SendRecord(_ context.Context, c quarantine.KafkaCopy) error {
	if r.Fail != nil {
		if err := r.Fail(c); err != nil {
			return err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Sent = append(r.Sent, c)
	return nil
}
