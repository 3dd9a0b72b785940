// Package candidate stores the result of one processing attempt as an
// immutable S3 object, the attempt's candidate. The job store later accepts
// one candidate by recording its key, SHA-256 and size in the job item;
// nothing is ever copied to, or overwritten at, a shared result path.
//
// A Store is built from a Config whose required fields are the Client and
// the Bucket; the zero value of every other field is its documented
// default. New refuses a Config that cannot work with an error wrapping
// ErrInvalidConfig that names the field; it never panics:
//
//	store, err := candidate.New(candidate.Config{
//		Client:      s3.NewFromConfig(awsCfg),
//		Bucket:      bucket,
//		MaxSize:     128 << 20,
//		SpoolBudget: 460 << 20, // what the function's ephemeral storage leaves for the spool
//	})
//	if err != nil {
//		return err
//	}
//
// Invariants:
//   - A candidate's key names its job, generation and attempt:
//     candidates/<job_id>/g<generation, 10 digits>/<attempt_id>.<ext>.
//     Ids are [A-Za-z0-9_-]{1,128}, so a key cannot leave its job's prefix,
//     and ParseKey accepts exactly the keys that Key.String builds.
//   - A key is written at most once: the upload carries If-None-Match: *,
//     so S3 refuses to replace an object that exists (ErrExists). The one
//     exception is our own earlier success: when the object at the key
//     already has the same SHA-256 and size, the write succeeds with
//     Result.AlreadyExisted set, because the content is exactly what this
//     write would have stored (an upload whose response was lost, retried).
//   - A write is spooled to a temporary file while the SHA-256 and size are
//     computed, and uploaded in one PutObject once the content is complete:
//     memory use does not grow with the object, and a half-written candidate
//     never becomes visible. The spool file is gone after Commit or Close,
//     whatever the outcome. The spool is a directory (Config.SpoolDir),
//     or any Spool (Config.Spool).
//   - Every object carries its job id, generation, attempt id and SHA-256 in
//     user metadata, and the SHA-256 also as S3's own checksum, which S3
//     verifies on upload. Head and Open refuse an object whose metadata does
//     not match its key.
//   - A Reader checks the content against the recorded SHA-256 and size in
//     the Read that completes the size, looking one byte further for a body
//     that goes on: a mismatch is an error from that Read (with no data),
//     never io.EOF, even for a caller that reads exactly Info().Size bytes
//     and stops. Close reports a mismatch again, and checks the end itself
//     when the whole size was read but the end was not seen. A Reader closed
//     before the whole size was read has checked nothing and reports
//     nothing: reading only the head of a candidate is legitimate, and
//     claiming corruption there would be a guess.
//   - A 409 ConditionalRequestConflict (a concurrent write to the same key)
//     is retried a bounded number of times with backoff; the retry then
//     normally meets the winner's object and returns ErrExists.
//   - With a spool budget (Config.SpoolBudget), the writers of a store never
//     hold more than the budget in the spool, so one candidate cannot take
//     the space another is being written into: every Writer first takes a
//     Reservation of the store's max size (Reserve; Create does it), writes
//     at most that much (a larger candidate is ErrTooLarge, for good), and
//     gives it back when it is closed. At most budget / max size writers
//     exist at once; the next waits, in order of arrival, until one is
//     closed or its context ends (ErrSpoolBusy, nothing taken).
//
// Why the budget cannot deadlock. A budget granted as writers write can:
// two writers of up to 1 GB in a 1.5 GB budget may each hold 0.75 GB and
// each wait for the other's room for ever (TestSpoolBudgetCannotDeadlockTwoWritersOfTheMaxSize
// is that scenario). Here a writer takes its whole maximum claim, the max
// size, in one step before it has any room, and never asks for more: no
// writer waits while holding room, so there is no hold-and-wait, and
// without it no cycle of writers waiting on each other can form. It is
// the banker's algorithm in the case where every grant is a whole claim: a
// grant leaves each holder able to finish without another grant, so every
// state is safe. A waiting writer waits only for holders, each of which
// can write all of its candidate without waiting and ends by its own
// context's deadline at the latest. The cost is concurrency: a writer holds
// its max size however little it writes, so a budget admits budget / max
// size writers, however small their candidates.
//
// Limits: a candidate is uploaded with a single PutObject, so it is at most
// 5 GiB (MaxSize), and the spool needs room for the budget in its directory
// (on Lambda, /tmp: 512 MB unless the function's ephemeral storage is
// raised, up to 10,240 MB). Multipart upload is not implemented; it would
// be needed only beyond 5 GiB.
package candidate
