// Package articles is the reference task of internal/app/worker: Export writes a
// tenant's articles from the Articles table (hash key tenant, range key
// article_id) as newline-delimited JSON, one object per article.
//
// Invariants:
//   - A job exports its own tenant's articles and nothing else: the Query's
//     key condition is the job's tenant (from the job item, never from the
//     command), and an item of any other tenant fails the job rather than
//     reach the candidate.
//   - Articles are written in article id order, each exactly once per
//     attempt: pages follow DynamoDB's LastEvaluatedKey, strongly
//     consistent.
//   - Progress is the number of articles written so far, reported after
//     every page but the last; the accept records the final count.
//   - A spec it cannot run (page_size outside 1 to 1000) and an article it
//     cannot write are permanent: the job fails. A failed query is
//     retried with the command. A failed write is passed on as it is: the
//     worker fails the job for good when the write was refused for the
//     candidate's size (candidate.ErrTooLarge), and retries it otherwise.
package tasks
