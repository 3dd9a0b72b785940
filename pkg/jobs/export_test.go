package jobs

import "context"

// DeleteItem deletes the item at key (a job id, or an intent's IntentKey),
// as DynamoDB's TTL deletes an expired item: the memory store's
// jobstest.ItemDeleter, for the suite's tests of expired intents. It is
// defined in a test file so that only tests can delete.
func (s *MemoryStore) DeleteItem(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.jobs, key)
	delete(s.markers, key)
	return nil
}

// MaxInFlight is how many requests a listing or a GetMany has in flight at
// most, for the tests that count them.
const MaxInFlight = maxInFlight
