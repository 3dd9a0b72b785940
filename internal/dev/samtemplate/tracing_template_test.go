package samtemplate_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// xrayActions are what a function's role needs for Lambda's active
// tracing (AWSXRayDaemonWriteAccess's write actions, which Lambda's
// documentation names for an execution role): Lambda sends the function's
// segments with the function's credentials. X-Ray takes no resource-level
// permission for them, so their resource is "*".
var xrayActions = []any{"xray:PutTraceSegments", "xray:PutTelemetryRecords"}

// isXRayStatement reports whether an IAM statement is the X-Ray grant
// tracing needs, exactly: those two actions on "*", the one statement a
// role may have on "*". (The functions' least-privilege test exempts it.)
func isXRayStatement(s map[string]any) bool {
	return s["Effect"] == "Allow" && s["Resource"] == "*" && slices.Equal(asList(s["Action"]), xrayActions) && s["Condition"] == nil
}

// roleStatements returns the statements of a function's role's policies.
func roleStatements(t *testing.T, tpl *samtemplate.Template, fn string) []map[string]any {
	t.Helper()
	role := getAttTarget(tpl.Resources[fn].Properties["Role"])
	require.NotEmpty(t, role, "%s: a role of its own", fn)
	var out []map[string]any
	for _, pol := range asList(tpl.Resources[role].Properties["Policies"]) {
		for _, st := range asList(asMap(asMap(pol)["PolicyDocument"])["Statement"]) {
			out = append(out, asMap(st))
		}
	}
	return out
}

// Every function is traced actively, so a job's path shows in X-Ray from
// the API to the projection (the relay passes its trace on to the queues:
// internal/app/outbox), and every function's role has the X-Ray grant active
// tracing needs; no role has more on "*".
func TestTemplateTracesEveryFunction(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	require.Len(t, functions, 5)
	for fn := range functions {
		require.Equal(t, "Active", fnProp(tpl, fn, "Tracing"), "%s: active tracing", fn)
		var xray int
		for _, s := range roleStatements(t, tpl, fn) {
			if isXRayStatement(s) {
				xray++
				continue
			}
			for _, a := range asList(s["Action"]) {
				require.NotContains(t, a, "xray:", "%s: X-Ray actions belong in the one X-Ray statement", fn)
			}
		}
		require.Equal(t, 1, xray, "%s: its role has the X-Ray statement, once", fn)
	}
}

func TestIsXRayStatementTakesExactlyTheTracingGrant(t *testing.T) {
	t.Parallel()
	ok := map[string]any{"Effect": "Allow", "Action": []any{"xray:PutTraceSegments", "xray:PutTelemetryRecords"}, "Resource": "*"}
	require.True(t, isXRayStatement(ok))
	for name, change := range map[string]func(s map[string]any){
		"deny":           func(s map[string]any) { s["Effect"] = "Deny" },
		"another action": func(s map[string]any) { s["Action"] = []any{"xray:PutTraceSegments", "s3:GetObject"} },
		"one more":       func(s map[string]any) { s["Action"] = append(asList(s["Action"]), "xray:GetSamplingRules") },
		"a wildcard":     func(s map[string]any) { s["Action"] = "xray:*" },
		"a resource":     func(s map[string]any) { s["Resource"] = []any{"*"} },
		"a condition":    func(s map[string]any) { s["Condition"] = map[string]any{} },
	} {
		s := map[string]any{"Effect": ok["Effect"], "Action": slices.Clone(asList(ok["Action"])), "Resource": ok["Resource"]}
		change(s)
		require.False(t, isXRayStatement(s), name)
	}
}
