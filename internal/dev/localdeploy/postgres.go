package localdeploy

import (
	"context"
	"database/sql"
	"strings"

	"github.com/fifoworker/fifoworker/internal/lambdawire/pgschema"
)

// schemaType is template-postgres.yaml's database schema, a custom
// resource its MigrateFunction provides.
const schemaType = "Custom::FifoworkerSchema"

// deploySchema applies the schema's migrations (the jobs', the
// projection's and the quarantine's, pgschema.Apply, what the
// stack's MigrateFunction applies) to the local stack's database; without
// one it is skipped, and says why.
func deploySchema(ctx context.Context, db *sql.DB) ([]string, error) {
	if db == nil {
		return []string{"not applied: no local PostgreSQL given (Clients.Postgres)"}, nil
	}
	if err := pgschema.Apply(ctx, db); err != nil {
		return nil, err
	}
	return []string{"applied to the local stack's PostgreSQL by pgschema.Apply, not by MigrateFunction"}, nil
}

// notEmulated says why a resource of type typ is not created locally: the
// database's and the network's in words of their own (the local
// PostgreSQL, on 127.0.0.1 without TLS or IAM, stands in for the cluster
// and its proxy; the functions run on this machine, in no VPC).
func notEmulated(typ string) string {
	switch {
	case strings.HasPrefix(typ, "AWS::RDS::"):
		return "not created: the local stack's PostgreSQL (FIFOWORKER_POSTGRES_DSN) stands in for the Aurora cluster and its RDS Proxy"
	case strings.HasPrefix(typ, "AWS::EC2::"):
		return "not created: the functions run on this machine, in no VPC, and reach the local stack directly"
	}
	return "not emulated locally"
}
