package cfnschema_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/cfnschema"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// postgresTemplate is the PostgreSQL variant of the deployment; Aurora and
// RDS Proxy cannot be reached from here, so this check and
// internal/dev/samtemplate's postgres_template_test.go are its acceptance.
const postgresTemplate = "template-postgres.yaml"

// TestPostgresTemplateMatchesTheRegistrySchemas: template-postgres.yaml
// passes the check template.yaml passes (TestRepoTemplateMatchesTheRegistrySchemas)
// on its plain resources (the Aurora cluster, its writer and subnet group,
// the proxy, its target group and role, the security groups and their
// rules, the VPC endpoints, the relay's schedule and its permission) and
// its SAM functions, each Fn::If branch (a new cluster or an existing one,
// endpoints made or not) included, and every reference. The schema's
// custom resource alone is skipped: no registry schema describes a custom
// resource (its references are still checked).
func TestPostgresTemplateMatchesTheRegistrySchemas(t *testing.T) {
	t.Parallel()
	requirePostgresTemplateMatches(t, postgresTemplate)
}

// postgresTypes are the resource types of the PostgreSQL deployment the
// check must have checked (each at least once).
var postgresTypes = []string{"AWS::RDS::DBCluster", "AWS::RDS::DBInstance", "AWS::RDS::DBSubnetGroup", "AWS::RDS::DBProxy",
	"AWS::RDS::DBProxyTargetGroup", "AWS::EC2::SecurityGroup", "AWS::EC2::SecurityGroupIngress", "AWS::EC2::VPCEndpoint",
	"AWS::Events::Rule", "AWS::Lambda::Permission"}

// requirePostgresTemplateMatches: the template at file passes the registry
// check on every resource but the schema's custom resource, those of each
// of postgresTypes and of types among them.
func requirePostgresTemplateMatches(t *testing.T, file string, types ...string) {
	t.Helper()
	tpl := loadTemplate(t, file)
	res := cfnschema.Check(tpl, registrySchemas(t))
	for _, err := range res.Problems {
		t.Error(err)
	}
	require.Empty(t, postgresCoverageProblems(tpl, res))
	for _, typ := range append(types, postgresTypes...) {
		require.NotEmpty(t, tpl.OfType(typ), typ)
		for _, name := range tpl.OfType(typ) {
			require.Contains(t, res.Checked, name)
		}
	}
}

// postgresCoverageProblems says what of tpl the check left out beyond
// SAM's own resources and the one custom resource, DatabaseSchema.
func postgresCoverageProblems(tpl *samtemplate.Template, res cfnschema.Result) []string {
	var out []string
	for name, r := range tpl.Resources {
		skipped := slices.ContainsFunc(res.Skipped, func(s string) bool { return strings.HasPrefix(s, name+" (") })
		switch {
		case strings.HasPrefix(r.Type, "AWS::Serverless::") && r.Type != "AWS::Serverless::Function":
			if !skipped {
				out = append(out, name+": a SAM resource, not reported skipped")
			}
		case name == "DatabaseSchema" && r.Type == "Custom::FifoworkerSchema":
			if !skipped {
				out = append(out, name+": the custom resource, not reported skipped")
			}
		case skipped || !slices.Contains(res.Checked, name):
			out = append(out, name+" ("+r.Type+") was not checked")
		}
	}
	slices.Sort(out)
	return out
}

// The coverage check fails on a second custom resource: only the schema's
// may go unchecked.
func TestPostgresRegistryCheckCoversEveryResourceButTheSchemas(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../../" + postgresTemplate)
	require.NoError(t, err)
	const old = "  RelaySchedulePermission:\n    Type: AWS::Lambda::Permission\n"
	require.Equal(t, 1, strings.Count(string(raw), old))
	broken, err := samtemplate.Parse([]byte(strings.Replace(string(raw), old,
		"  Other:\n    Type: Custom::Other\n    Properties: { ServiceToken: !GetAtt MigrateFunction.Arn }\n"+old, 1)))
	require.NoError(t, err)
	res := cfnschema.Check(broken, registrySchemas(t))
	require.Equal(t, []string{"Other (Custom::Other) was not checked"}, postgresCoverageProblems(broken, res))
}
