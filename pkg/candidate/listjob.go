package candidate

import "context"

// ListJob returns every candidate of one job, one per attempt, in key
// order (by generation, then attempt id): a ListObjectsV2 under
// JobPrefix(jobID), following S3's continuation for any number of them.
// Objects under the prefix whose keys ParseKey refuses are no candidates
// and are left out. It fails with ErrInvalidKey when jobID is not a valid
// job id.
//
// It is List under the name the operator's console reads candidates by
// (internal/app/console's Candidates): the same requests and answer.
func (s *Store) ListJob(ctx context.Context, jobID string) ([]Entry, error) {
	return s.List(ctx, jobID)
}
