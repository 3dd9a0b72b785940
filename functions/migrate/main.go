//go:build postgres

// Command migrate is template-postgres.yaml's MigrateFunction, the
// provider of the DatabaseSchema custom resource: it applies the jobs',
// the projection's and the quarantine's PostgreSQL migrations on the
// stack's Create and Update, does nothing on Delete, and answers
// CloudFormation. Wired by internal/lambdawire.Migrate, which names its
// settings. It is PostgreSQL's alone: built with the postgres tag, as the
// template's other functions are, and nothing without it.
package main

import (
	"github.com/fifoworker/fifoworker/internal/lambdawire"
	"github.com/fifoworker/fifoworker/internal/lambdawire/pgopen"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

func main() { startup.Main(lambdawire.Migrate(pgopen.Open)) }
