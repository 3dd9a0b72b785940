// Command projector is the Lambda function that consumes the events queue
// into the job views and tenant totals (internal/app/projection), one lane per job
// (pkg/fifo): wired by internal/lambdawire.Projector, which names its
// settings.
package main

import "github.com/fifoworker/fifoworker/internal/lambdawire"

func main() { lambdawire.Main(lambdawire.Projector) }
