package samtemplate_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// The proxy's borrow timeout (how long a statement waits for a database
// connection) is set, and shorter than every function's timeout whose
// number the template gives: a statement waiting on a saturated database
// gets the proxy's error while its invocation can still answer, not the
// invocation's timeout (RDS Proxy's default is 120 s).
func TestThePostgresTemplatesBorrowTimeoutIsShorterThanEveryFunctions(t *testing.T) {
	t.Parallel()
	for name, tmpl := range map[string]*samtemplate.Template{
		"template-postgres.yaml": loadPostgresTemplate(t), "template-kafka-postgres.yaml": loadKafkaPostgresTemplate(t),
	} {
		require.Empty(t, borrowProblems(tmpl), name)
	}
	broken := *loadPostgresTemplate(t)
	broken.Resources = map[string]samtemplate.Resource{}
	for k, r := range loadPostgresTemplate(t).Resources {
		broken.Resources[k] = r
	}
	tg := broken.Resources["DatabaseProxyTargetGroup"]
	props := map[string]any{}
	for k, v := range tg.Properties {
		props[k] = v
	}
	props["ConnectionPoolConfigurationInfo"] = map[string]any{"MaxConnectionsPercent": 90, "ConnectionBorrowTimeout": 10}
	tg.Properties = props
	broken.Resources["DatabaseProxyTargetGroup"] = tg
	require.Contains(t, fmt.Sprint(borrowProblems(&broken)), "IntakeFunction", "a borrow timeout equal to intake's timeout")
	props["ConnectionPoolConfigurationInfo"] = map[string]any{"MaxConnectionsPercent": 90}
	require.Contains(t, fmt.Sprint(borrowProblems(&broken)), "no ConnectionBorrowTimeout")
}

func borrowProblems(tmpl *samtemplate.Template) []string {
	pool, _ := tmpl.Resources["DatabaseProxyTargetGroup"].Properties["ConnectionPoolConfigurationInfo"].(map[string]any)
	borrow, ok := pool["ConnectionBorrowTimeout"].(int)
	if !ok {
		return []string{"DatabaseProxyTargetGroup: no ConnectionBorrowTimeout (the default is 120 s)"}
	}
	var out []string
	for name, r := range tmpl.Resources {
		if r.Type != "AWS::Serverless::Function" {
			continue
		}
		if timeout, ok := r.Properties["Timeout"].(int); ok && borrow >= timeout {
			out = append(out, fmt.Sprintf("%s: timeout %d s, not longer than the proxy's borrow timeout %d s", name, timeout, borrow))
		}
	}
	return out
}
