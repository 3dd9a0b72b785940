package quarantinetest

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// Sends is a quarantine.Sender that keeps what a redrive sends, in order,
// instead of sending it: a test then delivers the copies itself, as the
// queue would. Read Inputs once the redrive has returned.
type Sends struct {
	mu     sync.Mutex
	Inputs []*sqs.SendMessageInput
}

var _ quarantine.Sender = (*Sends)(nil)

// SendMessage records in and answers as SQS does to a send it took.
func (s *Sends) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Inputs = append(s.Inputs, in)
	return &sqs.SendMessageOutput{}, nil
}
