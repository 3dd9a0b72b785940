// Package console is fifoworker's web console for operators: the overview,
// the jobs, one job with its history drawn as a timeline, and the held
// groups of each queue with their redrive and discard. It is served by
// `fifoworker console` on loopback, and reads and acts through the same
// operator logic as the CLI (source.go names each part it calls).
package console
