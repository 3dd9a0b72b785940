package startup

import "fmt"

// The stores a bootstrap is built for: STORE's values.
const (
	StoreDynamoDB = "dynamodb"
	StorePostgres = "postgres"
)

// CheckStore records a problem unless STORE names built, the arbiter's
// store of the builder calling it. template-postgres.yaml sets STORE to
// "postgres" for every function; template.yaml and template-kafka.yaml set
// none, which is "dynamodb". A bootstrap is built for one store
// (functions/<name>'s main_postgres.go by the postgres build tag, main.go
// or main_kafka.go without it), so one deployed with the other store's
// template refuses to start and names the build to make, instead of
// failing on the first missing table or connection setting.
func CheckStore(env *Env, built string) {
	got := env.StringOr("STORE", StoreDynamoDB)
	switch {
	case got == built:
	case got != StoreDynamoDB && got != StorePostgres:
		env.Problem("STORE", fmt.Errorf("%q is neither %s nor %s", got, StoreDynamoDB, StorePostgres))
	case built == StoreDynamoDB:
		env.Problem("STORE", fmt.Errorf("%q, but this bootstrap's wiring is DynamoDB's: build it with the postgres tag (-tags lambda.norpc,nethttpomithttp2,postgres and the -gcflags of make bootstraps STORE=postgres)", got))
	default:
		env.Problem("STORE", fmt.Errorf("%q, but this bootstrap's wiring is PostgreSQL's: build it without the postgres tag", got))
	}
}
