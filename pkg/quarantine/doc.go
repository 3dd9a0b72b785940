// Package quarantine holds the FIFO groups whose messages cannot be
// processed, keeps their messages in order, and gives them back in that
// order when an operator redrives them. Quarantine is the fifo.Quarantine
// the processor consults (fifo.Config's Quarantine); Operator is what the
// CLI does with it; Store keeps the records, in memory (MemoryStore), in
// DynamoDB (DynamoStore) or in PostgreSQL (PostgresStore), all held to one
// conformance suite (quarantinetest) and all applying the same rules
// (rules.go).
//
// Each is built from its configuration: New(Config),
// NewOperator(OperatorConfig), NewDynamoStore(DynamoConfig),
// NewPostgresStore(PostgresConfig) and NewS3Bodies(S3BodiesConfig);
// NewMemoryStore has nothing to configure. A configuration that cannot
// work, a nil client, pool or an empty table name included, is an error
// wrapping ErrInvalidConfig that names the field.
//
// # Holds
//
// A group's hold is one record per queue and group. It is held when a
// message of the group failed permanently or was received as often as the
// threshold allows; draining while a redrive sends the parked messages
// back; released when none is left parked. Its Parked field counts the
// messages parked under it, exactly: every write that parks or unparks a
// message changes the count in the same atomic write, so a draining hold
// never counts nothing (the write that takes the last message off
// releases it), and a released hold counts nothing.
//
// # Parking
//
// The message that caused the hold, and every later message of its group,
// is parked: stored under its original SequenceNumber, written as a
// 40-digit key (SeqKey) that sorts as the 128-bit number does, with its
// body, attributes, message id, deduplication id, the MD5 of its body and
// a random nonce, and then acknowledged. When body and attributes together
// are larger than DefaultMaxInlineBody the body goes to a BodyStore
// (S3Bodies) under BodyKey, and the item keeps the key (template.yaml caps
// the queues' messages at 256 KiB, so attributes always fit an item).
// Parking is idempotent: a message already stored, whatever its status,
// is neither written again nor counted again, so a batch retried after a
// lost answer changes nothing; and a park with no new message never
// creates a hold (there would be nothing to redrive). A hold's From and
// Through are the first and the last sequence key parked under it.
//
// # Epochs and redrive
//
// A redrive (Operator.Redrive) first raises the hold's epoch and makes it
// draining (BeginRedrive), then sends the parked messages back to the
// queue, oldest first, one send at a time so that SQS keeps them in that
// order. Each copy carries its identity, the epoch, its parked message's
// nonce and its sequence key, in its MessageDeduplicationId
// ("fifoworker-redrive.<epoch>.<nonce>.<sequence key>", Copy): every FIFO
// message has a deduplication id and Lambda's event carries it, while a
// message may already use all ten message attributes SQS allows; and SQS
// drops a second send of the same copy within its deduplication window.
//
// Check trusts a copy only if its parked message is still parked, with the
// copy's nonce and body MD5. The nonce is the proof: a producer knows its
// message's body, sequence number and id (SendMessage returns them) and
// can guess an epoch, but never sees the nonce, so it cannot forge a copy
// that runs in a parked message's place; a message that claims to be a
// copy and matches nothing is an ordinary message. The processor runs a
// copy only while the group is draining under the copy's epoch, and only
// the copy of the oldest message still parked, which the hold names
// (HoldRecord.Next); it parks every other message of the group after the
// parked ones. A copy of the epoch that stands for a later message means
// the older one's copy was lost, dead-lettered by SQS while this store
// could not take it back: it holds the group again instead of passing
// that message, and the next redrive sends them all, oldest first. Done
// itself is conditional on Next. A copy that ran
// marks its parked message done (Done, which also releases the hold with
// the last one); a redrive begun while the copy ran does not stop that
// (Done lands under a later epoch too), so the later epoch's copy of the
// same message is dropped as done instead of running it a second time.
// Only a held group's messages can be discarded (Operator.Discard): while
// it drains, a copy past its batch's check could be running. A copy that
// fails again holds the group again under the same epoch, so the copies
// of that redrive still in flight are dropped on arrival and their parked
// messages stay parked for the next redrive, which raises the epoch
// again. An interrupted redrive is therefore resumed by running it again.
// The epoch carries over a release: a new hold of the group goes on from
// the released hold's epoch, so no copy of an earlier redrive can pass for
// one of the next.
//
// # Tombstones
//
// Nothing is deleted. A message done or discarded keeps its item, with
// its new status, and a released hold keeps its record, From and Through
// included, so that late duplicates are recognised: a copy of a message
// done or discarded is dropped, and so is a redelivery of an original
// message whose sequence lies in a released hold's range. On DynamoDB
// those tombstones carry a TTL, TombstoneTTL (15 days) after their last
// write: longer than SQS keeps any message (14 days at most), after which
// no duplicate can arrive. A hold that is held again loses its TTL and
// starts a new range. On PostgreSQL the rows carry the same expires_at,
// and PostgresStore.PurgeExpired, called on a schedule, deletes them
// (PostgreSQL has no TTL).
//
// # Kafka
//
// KafkaQuarantine (NewKafka) is the kafka.Quarantine of one topic, on the
// same Store and rules: the topic is the store's queue, a key of it (the
// processor's lane key, KafkaGroup: the key itself, or "sha256:" and its
// hash for one a DynamoDB string cannot hold) its group. A parked record's
// sequence key is KafkaSeq of its partition and offset: the partition in
// the high digits, so a hold's records (all of one partition: a park of
// another partition's records under a held or draining hold is refused,
// ErrOtherPartition) sort by offset, and a key's records in two partitions
// never share a key. Its item keeps the record's key, value and headers as
// binary (Parked.Kafka; the value in the BodyStore, under BodyKey, when the
// record is over the inline budget) with its value's MD5 and its nonce. A
// redriven copy carries its identity in its CopyHeader header, in the form
// the SQS copy's deduplication id carries it, and is trusted on the same
// proof: its parked record still parked, with the copy's nonce and value.
// A copy that matches nothing is an ordinary record.
//
// A Kafka record has no receive count. A key's hold counts the failed
// attempts of its most recent failing record instead (HoldRecord.Attempts:
// the record's sequence key, its failures, the last cause), written by
// Store.Failed: one conditional write, no read, because the processor
// passes the hold its one Check per batch read. A key that has failed
// without being held has a released hold that only counts (listed by no
// operator, with a TTL like any released hold); every other write keeps the
// count, a new hold of the key included.
//
// # The DynamoDB table
//
// One table (template.yaml's QuarantineTable) holds every queue's holds
// and messages; a group is one partition, KeyHold = "<queue>#<group>" (a
// queue name has no '#', so the key is unambiguous whatever the group id
// holds), sorted by KeySort:
//
//	item       sort key (sk)           attributes
//	hold       "hold"                  queue, group, state, epoch, parked, cause, from, through,
//	                                   next (the oldest sequence key still parked),
//	                                   held_at and updated_at (Unix ms), version;
//	                                   held_queue while not released; expires_at once released;
//	                                   fail_seq, fail_count, fail_cause once a Kafka record failed
//	message    "m#" + sequence key     queue, group, status, message_id, body or body_key, body_md5,
//	                                   body_size, attributes (a map of data_type, string_value,
//	                                   binary_value), deduplication_id, receive_count, cause,
//	                                   parked_at and updated_at (Unix ms);
//	                                   expires_at once done or discarded;
//	                                   for a Kafka record, kafka (true), record_key and value (B),
//	                                   headers (a list of name and value, each B)
//
// The hold's sort key sorts below every message's, so a Query above
// "m#" + after lists a group's messages in sequence order. HeldIndex is a
// sparse, keys-only global secondary index on held_queue and held_at: only
// holds that are not released carry held_queue, so the index lists exactly
// the holds an operator must see, and Holds reads the records themselves
// with a strongly consistent BatchGetItem (a hold released a moment ago
// may linger in the eventually consistent index; it is left out). Times
// are kept to the millisecond; expires_at is in Unix seconds, as TTL reads
// it.
//
// Every write is conditional. The hold record has a version, raised by
// each write and required by the next: Park reads the hold and the
// messages in one consistent BatchGetItem, computes the hold with the
// shared rules, and writes the new messages (each on the condition that
// it does not exist) with the hold (on the version read) in one
// TransactWriteItems. If the transaction is cancelled because some of the
// messages exist after all, they are dropped; if the hold changed, the
// record the refusal returns is taken; and it is tried again. Done and
// Discard are one transaction of the message (on the condition that it is
// parked) and the hold (on the version read, decremented or released as
// the count read says, its next moved on), after strongly consistent
// Queries (a page of one message first, larger ones after it) for the
// oldest message parked after the one unparked, when that one was next
// and not the last; BeginRedrive is
// one conditional PutItem (after such Queries from the hold's From when a
// record written before holds kept their next names none). A write
// whose answer was lost and that the SDK sent again is recognised, by the
// record it finds, as its own (DynamoDB's client request token covers a
// transaction's retry within ten minutes; the store checks beyond that).
// Read is one consistent BatchGetItem per 100 keys.
//
// # The PostgreSQL tables
//
// MigratePostgres creates them (component "quarantine" of pgmigrate: 0001
// the tables, 0002 their indexes); the store takes a *sql.DB and imports
// no driver. quarantine_holds has a row per queue and group (key queue,
// group_id), with the hold record's fields (seq_from, seq_through,
// seq_next; "" for none), its version and, once released, expires_at;
// quarantine_messages a row per message (key queue, group_id, seq), with
// the item's fields, attributes as jsonb and a Kafka record's key and
// value as bytea, its headers as jsonb (key and value in base64). Times
// are Unix milliseconds and expires_at Unix seconds, as on DynamoDB. A
// group and the producer's and handlers' strings (message id, body,
// deduplication id, causes) are bytea, kept byte for byte: a Kafka key may
// hold NUL, which text cannot, and a cause need not be UTF-8. A body is
// kept in its row whatever its size (a row holds the queues' 256 KiB, and
// a Park has no limit of messages); a Quarantine still sends bodies over
// its MaxInlineBody to its BodyStore, and the row then keeps the key. Two
// partial indexes stand for the sparse index and the Queries: the holds
// not released by queue and time held, the messages parked by group and
// sequence; two more index the tombstones by expiry.
//
// Every write is one statement, conditional on the hold's version as one
// read statement found it together with what the rule needs (which of the
// messages are stored, the oldest parked after a message, its status):
// the hold's UPDATE (or its INSERT ... ON CONFLICT DO NOTHING when there
// was none) comes first, and the messages' INSERT or UPDATE of the same
// statement runs only if that wrote a row. Under Read Committed an UPDATE
// that waited for another transaction on the hold's row evaluates the
// version again on the row that transaction left; every write of a
// message raises its hold's version in the same statement, so a version
// still current means the messages are as read. A refused write reads
// again and retries (at most 12 rounds); so does one that failed with a
// serialization error or a deadlock (under Repeatable Read, set as a
// database's default, a write that waited fails instead of re-checking). Park, Done, Discard and
// BeginRedrive are two round trips when nothing competes, Failed one (its
// condition is f.Seen, as on DynamoDB; three when that read was stale),
// Read, Hold, Messages and Holds one each. The store never sends a write
// twice; a write of Park, Done, Discard or BeginRedrive whose answer was
// lost with its connection (an error that is not the server's) is
// followed by one read of the hold, and when the hold is the one written,
// at the version after the one read, the write is recognised as made and
// the call succeeds, as on DynamoDB; otherwise the error stands. Failed's
// lost answer is the caller's error (its retry may count twice).
package quarantine
