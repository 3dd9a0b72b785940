package startup

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// STORE unset or empty is DynamoDB's; each builder accepts its own store
// only, and names the build to make for the other; an unknown STORE is one
// problem whichever builder reads it.
func TestCheckStoreAcceptsOnlyTheBuiltStore(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		store, built, want string
	}{
		{"", StoreDynamoDB, ""},
		{"dynamodb", StoreDynamoDB, ""},
		{"postgres", StorePostgres, ""},
		{"", StorePostgres, `STORE: "dynamodb", but this bootstrap's wiring is PostgreSQL's: build it without the postgres tag`},
		{"dynamodb", StorePostgres, `STORE: "dynamodb", but this bootstrap's wiring is PostgreSQL's: build it without the postgres tag`},
		{"postgres", StoreDynamoDB, `STORE: "postgres", but this bootstrap's wiring is DynamoDB's: build it with the postgres tag (-tags lambda.norpc,nethttpomithttp2,postgres and the -gcflags of make bootstraps STORE=postgres)`},
		{"aurora", StoreDynamoDB, `STORE: "aurora" is neither dynamodb nor postgres`},
		{"aurora", StorePostgres, `STORE: "aurora" is neither dynamodb nor postgres`},
	} {
		e := NewEnvFrom(map[string]string{"STORE": tc.store})
		CheckStore(e, tc.built)
		if tc.want == "" {
			require.NoError(t, e.Err(), tc)
			continue
		}
		require.EqualError(t, e.Err(), "lambdawire: misconfigured function: "+tc.want, tc)
	}
}
