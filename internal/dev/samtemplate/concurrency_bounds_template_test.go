package samtemplate_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
)

// The sweeper's reserved concurrency is at most 1, checked at its bound:
// 1 deploys and 2 is refused, as CloudFormation refuses a Number over its
// MaxValue. Two reserved executions would let a retried run overlap the
// next scheduled one, both moving the same cursors.
func TestTemplateTheSweeperNeverRunsTwiceAtOnce(t *testing.T) {
	t.Parallel()
	p := loadRepoTemplate(t).Parameters["SweeperReservedConcurrency"]
	require.Equal(t, 1, toInt(p.MaxValue))
	for v, ok := range map[string]bool{"0": true, "1": true, "2": false} {
		err := localdeploy.CheckParameter(p, v)
		if ok {
			require.NoError(t, err, v)
		} else {
			require.Error(t, err, v)
		}
	}
}

// The API's access log is the audit trail of the callers it refused
// (401, 403, 429), who reach no function: it outlives the stack, as the
// tables and the bucket do, and it is under /aws/vendedlogs/, where API
// Gateway's delivery needs one CloudWatch Logs resource policy statement
// for every group rather than one each.
func TestTemplateTheApiAccessLogIsKeptAndVended(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	group := getAttTarget(asMap(tpl.Resources["JobsApi"].Properties["AccessLogSettings"])["DestinationArn"])
	r := tpl.Resources[group]
	require.Equal(t, "Retain", r.Attributes["DeletionPolicy"], "%s: deleting the stack keeps the audit trail", group)
	require.Equal(t, "Retain", r.Attributes["UpdateReplacePolicy"], "%s: an update that replaces it keeps the old one", group)
	name, err := localdeploy.Resolve(tpl, &localdeploy.Result{}, "st", "eu-west-1", r.Properties["LogGroupName"])
	require.NoError(t, err)
	require.Equal(t, "/aws/vendedlogs/st-api-access", name)
}
