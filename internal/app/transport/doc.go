// Package transport is the one form in which the consumers
// (internal/app/worker, internal/app/projection) take a message, whichever
// transport brought it: an SQS FIFO message (pkg/fifo) or a Kafka record
// (pkg/kafka). Each consumer's Handle (SQS) and HandleRecord (Kafka) turn
// their input into a Delivery and run the same code on it, so the two
// transports differ only in what this package says they carry:
//
//	                      SQS message                      Kafka record
//	ID (logs: message_id) the message id                   "<topic>-<partition>@<offset>"
//	Ref (in attempt ids)  the message id                   "<topic digest>-<partition>-<offset>"
//	Key (logs: group_id)  the MessageGroupId attribute     the record key
//	KeyRequired           no: a group is checked if given  yes: a null key is refused
//	Body                  the body                         the value
//	Count                 ApproximateReceiveCount (≥ 1)    0: none kept
//
// A Kafka record has no receive count: Lambda's KafkaEvent carries none,
// and a redelivered record is the same record at the same offset. Each
// consumer says what it does without one.
//
// The libraries (pkg/fifo, pkg/kafka) know nothing of this package: it
// belongs to the application, above them.
package transport
