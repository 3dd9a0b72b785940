package candidate

import "github.com/fifoworker/fifoworker/pkg/jobs"

var _ = jobs.ErrFinal
