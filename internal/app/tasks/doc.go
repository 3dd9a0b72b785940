// Package tasks holds the tasks this service runs (pkg/task's contract),
// their registry, NewRegistry, from which the worker runs each job's task,
// and their spec checks, NewChecker, with which intake checks each spec
// without building a task. A job names its task in its spec ("task");
// without one it runs the export (Export: the tenant's articles as
// NDJSON). registry.go lists the tasks, one line each (name, the spec keys
// it reads, spec check, constructor), and each task's type documents what
// it does and its spec. The export refuses a key that another registered
// task reads and it does not (a spec that meant that task and left out its
// "task"), taking those keys from the other lines.
//
// Adding a task touches its own file, its test and that one line, and,
// for a task that needs a resource the worker is not given yet, the
// worker's Config, wiring and template for that resource: pkg/task's
// "Adding a task" says how, and wordcount.go (WordCount: the words of each
// of the tenant's articles) is the worked example.
//
// # The Articles table
//
// Both tasks read the Articles table (template.yaml's ArticlesTable),
// through the same page reader. An article is one item:
//
//	tenant      S   hash key: the article's owner
//	article_id  S   range key: unique within the tenant; the order articles are read in
//	...             any other attributes, of any type, none required: what the
//	                export writes as they are (Object), and what the word count
//	                reads by name (the spec's fields, default title and body,
//	                strings: an absent or NULL one holds no words)
//
// The service never writes it: articles are the tenant's data, put there
// by another system (the demo and the tests seed it: internal/dev/demo's
// SeedArticles writes a title and a number of words).
//
// Invariants, of every task here:
//   - A job reads its own tenant's articles and nothing else: the Query's
//     key condition is the job's tenant (from the job item, never from the
//     command), and an item of any other tenant fails the job
//     (ErrForeignItem) rather than reach the result, without naming the
//     other tenant.
//   - Articles are read in article id order, each exactly once per
//     attempt: pages follow DynamoDB's LastEvaluatedKey, strongly
//     consistent, so a job reads every article written before it started.
//   - Progress is the number of articles read so far, reported after
//     every page but the last; the accept records the final count.
//   - A spec the task cannot run (ErrInvalidSpec) and an article it cannot
//     write or count are permanent: the job fails (task_failed). Intake
//     refuses such a spec before a job exists, with the same check
//     (ValidateSpec). A failed query is retried with the command. A failed
//     write is passed on as it is: the worker fails the job for good when
//     the write was refused for the candidate's size (candidate.ErrTooLarge),
//     and retries it otherwise.
package tasks
