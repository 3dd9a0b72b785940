//go:build !postgres

// Command intake is the jobs API's function behind API Gateway's HTTP API
// (payload format 2.0, JWT authorizer): internal/app/intake, wired by
// internal/lambdawire.Intake, which also names its settings.
package main

import (
	"github.com/fifoworker/fifoworker/internal/lambdawire"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

func main() { startup.Main(lambdawire.Intake) }
