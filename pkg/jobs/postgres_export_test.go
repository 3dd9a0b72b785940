package jobs

// SpecSHA256 is the digest of a spec an intent's row holds, for a test that
// writes one by hand.
var SpecSHA256 = specHash

// PostgresQueries are the statements of the listings and the purge, with
// arguments of their types and the indexes each must read, for a test of
// their plans.
var PostgresQueries = map[string]struct {
	SQL     string
	Args    []any
	Indexes []string
}{
	"live":     {liveSQL, []any{int64(10), int64(0), "", 5}, []string{"jobs_live"}},
	"finished": {finishedSQL, []any{"", "9", 5}, []string{"jobs_finished"}},
	"purge":    {purgeSQL, []any{int64(10), 5}, []string{"jobs_expiry", "job_intents_expiry"}},
}
