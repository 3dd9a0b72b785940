package jobs

import (
	"fmt"
	"strings"
)

// The one rule in this package for the key of an attempt's candidate,
// candidates/<job_id>/g<generation, 10 digits>/<attempt_id>.<ext>: the form
// candidate.Key.String writes (pkg/candidate, which this package must not
// import). A test in internal/app/worker holds the two to the same keys, so a change
// to either fails it.
const (
	resultKeyPrefix           = "candidates/"
	resultKeyGenerationDigits = 10
	maxResultKeyGeneration    = 9_999_999_999 // the largest generation 10 digits hold
	maxResultKeyExt           = 16            // the extension is [a-z0-9]{1,16}
)

// ValidateResultKey reports, wrapping ErrInvalid, why key is not the
// candidate key of attempt attemptID in generation g of job jobID. Accept
// refuses any other key: a job's result is always its own generation's,
// written by the attempt that holds the lease, so a worker's bug cannot
// point the job at another job's, generation's or attempt's object.
func ValidateResultKey(key, jobID string, g int64, attemptID string) error {
	if g < 1 || g > maxResultKeyGeneration {
		return fmt.Errorf("%w: result key %q: generation %d has no candidate key", ErrInvalid, key, g)
	}
	prefix := fmt.Sprintf("%s%s/g%0*d/%s.", resultKeyPrefix, jobID, resultKeyGenerationDigits, g, attemptID)
	ext, ok := strings.CutPrefix(key, prefix)
	if !ok {
		return fmt.Errorf("%w: result key %q is not the candidate of job %s g%d attempt %s (want %s<ext>)",
			ErrInvalid, key, jobID, g, attemptID, prefix)
	}
	if ext == "" || len(ext) > maxResultKeyExt || strings.IndexFunc(ext, func(c rune) bool {
		return (c < 'a' || c > 'z') && (c < '0' || c > '9')
	}) >= 0 {
		return fmt.Errorf("%w: result key %q: extension %q is not [a-z0-9]{1,%d}", ErrInvalid, key, ext, maxResultKeyExt)
	}
	return nil
}
