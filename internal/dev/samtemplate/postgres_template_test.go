package samtemplate_test

import (
	"fmt"
	"go/build/constraint"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// template-postgres.yaml is the PostgreSQL variant of the deployment;
// Aurora and RDS Proxy cannot be reached from here, so these checks, with
// internal/dev/cfnschema's TestPostgresTemplateMatchesTheRegistrySchemas,
// are its acceptance. What it shares with template.yaml is held to be the
// same (postgres_shared_template_test.go), so template.yaml's own checks
// hold for it; what it changes or adds is checked here
// (postgres_checks_test.go), for each way to deploy it
// (postgresDeployments).

const postgresTemplatePath = "../../../template-postgres.yaml"

// postgresTemplate is template-postgres.yaml, parsed once; tests only read it.
var postgresTemplate, postgresTemplateErr = samtemplate.Load(postgresTemplatePath)

func loadPostgresTemplate(t *testing.T) *samtemplate.Template {
	t.Helper()
	require.NoError(t, postgresTemplateErr)
	return postgresTemplate
}

func TestPostgresTemplateHoldsToItsChecks(t *testing.T) {
	t.Parallel()
	require.Empty(t, postgresProblems(loadPostgresTemplate(t)))
}

// Each check can fail: each case breaks template-postgres.yaml in one
// place, and the checks name it.
func TestPostgresChecksCatchEachBreak(t *testing.T) {
	t.Parallel()
	const connect = `Resource: !Sub ["arn:${AWS::Partition}:rds-db:${AWS::Region}:${AWS::AccountId}:dbuser:${ProxyId}/${DatabaseUser}", { ProxyId: !Select [6, !Split [":", !GetAtt DatabaseProxy.DBProxyArn]] }]
              - Sid: VpcNetworkInterfaces # Lambda attaches the function to SubnetIds with this role (AWSLambdaVPCAccessExecutionRole's actions); EC2's Describe actions take no resource-level permission
                Effect: Allow
                Action: [ec2:CreateNetworkInterface, ec2:DescribeNetworkInterfaces, ec2:DescribeSubnets, ec2:DeleteNetworkInterface, ec2:AssignPrivateIpAddresses, ec2:UnassignPrivateIpAddresses]
                Resource: "*"
              - Sid: Publish`
	requireEachBreakNamed(t, postgresTemplatePath, postgresProblems, []breakCase{
		{"a password in the environment", "        POSTGRES_MAX_CONNS: !Ref PostgresMaxConns\n", "        POSTGRES_MAX_CONNS: !Ref PostgresMaxConns\n        POSTGRES_PASSWORD: '{{resolve:secretsmanager:db}}'\n",
			"POSTGRES_PASSWORD={{resolve:secretsmanager:db}}: a secret in the environment"},
		{"the secret's ARN in the environment", "          COMMANDS_QUEUE_URL: !Ref CommandsQueue\n", "          COMMANDS_QUEUE_URL: !Ref CommandsQueue\n          DB_LOGIN: !GetAtt DatabaseCluster.MasterUserSecret.SecretArn\n",
			"RelayFunction: DB_LOGIN=map[Fn::GetAtt:[DatabaseCluster MasterUserSecret.SecretArn]]: a secret in the environment"},
		{"the cluster's endpoint, not the proxy's", "        POSTGRES_HOST: !GetAtt DatabaseProxy.Endpoint", "        POSTGRES_HOST: !GetAtt DatabaseCluster.Endpoint.Address",
			"POSTGRES_HOST is map[Fn::GetAtt:[DatabaseCluster Endpoint.Address]]"},
		{"TLS not required", "      RequireTLS: true", "      RequireTLS: false", "DatabaseProxy: engine family POSTGRESQL, RequireTLS false"},
		{"IAM authentication optional", "          IAMAuth: REQUIRED", "          IAMAuth: DISABLED", "DatabaseProxy: Auth [map[AuthScheme:SECRETS IAMAuth:DISABLED"},
		{"connect on every user", "dbuser:${ProxyId}/${DatabaseUser}\", { ProxyId: !Select [6, !Split [\":\", !GetAtt DatabaseProxy.DBProxyArn]] }]\n              - Sid: VpcNetworkInterfaces # Lambda attaches the function to SubnetIds with this role (AWSLambdaVPCAccessExecutionRole's actions); EC2's Describe actions take no resource-level permission\n                Effect: Allow\n                Action: [ec2:CreateNetworkInterface, ec2:DescribeNetworkInterfaces, ec2:DescribeSubnets, ec2:DeleteNetworkInterface, ec2:AssignPrivateIpAddresses, ec2:UnassignPrivateIpAddresses]\n                Resource: \"*\"\n              - Sid: Publish",
			"dbuser:${ProxyId}/*\", { ProxyId: !Select [6, !Split [\":\", !GetAtt DatabaseProxy.DBProxyArn]] }]\n              - Sid: VpcNetworkInterfaces # Lambda attaches the function to SubnetIds with this role (AWSLambdaVPCAccessExecutionRole's actions); EC2's Describe actions take no resource-level permission\n                Effect: Allow\n                Action: [ec2:CreateNetworkInterface, ec2:DescribeNetworkInterfaces, ec2:DescribeSubnets, ec2:DeleteNetworkInterface, ec2:AssignPrivateIpAddresses, ec2:UnassignPrivateIpAddresses]\n                Resource: \"*\"\n              - Sid: Publish",
			"RelayFunction's role: rds-db:connect on [arn:aws:rds-db:eu-west-1:123456789012:dbuser:prx-0123456789abcdef0/*]"},
		{"connect through the cluster, not the proxy", connect, strings.Replace(connect, "!GetAtt DatabaseProxy.DBProxyArn", "!GetAtt DatabaseCluster.DBClusterArn", 1),
			"RelayFunction's role: rds-db:connect on [arn:aws:rds-db:eu-west-1:123456789012:dbuser:/fifoworker]"},
		{"the proxy's resource id from the wrong field", connect, strings.Replace(connect, "!Select [6,", "!Select [5,", 1),
			"RelayFunction's role: rds-db:connect on [arn:aws:rds-db:eu-west-1:123456789012:dbuser:db-proxy/fifoworker]"},
		{"a function outside the VPC", "    VpcConfig:\n      SubnetIds: !Ref SubnetIds\n      SecurityGroupIds: [!GetAtt FunctionsSecurityGroup.GroupId]\n", "",
			"IntakeFunction is not in SubnetIds with the functions' security group"},
		{"a function with another security group", "    VpcConfig:\n      SubnetIds: !Ref SubnetIds\n      SecurityGroupIds: [!GetAtt FunctionsSecurityGroup.GroupId]\n",
			"    VpcConfig:\n      SubnetIds: !Ref SubnetIds\n      SecurityGroupIds: [!GetAtt ProxySecurityGroup.GroupId]\n", "WorkerFunction is not in SubnetIds with the functions' security group"},
		{"the functions reach the database directly", "          DestinationSecurityGroupId: !GetAtt ProxySecurityGroup.GroupId", "          DestinationSecurityGroupId: !GetAtt DatabaseSecurityGroup.GroupId",
			"new cluster: FunctionsSecurityGroup: egress [tcp 5432-5432 <DatabaseSecurityGroup.GroupId> tcp 443-443 0.0.0.0/0]"},
		{"the database open to the functions", "      SourceSecurityGroupId: !GetAtt ProxySecurityGroup.GroupId", "      SourceSecurityGroupId: !GetAtt FunctionsSecurityGroup.GroupId",
			"database: ingress [tcp 5432-5432 <FunctionsSecurityGroup.GroupId>], not [tcp 5432-5432 <ProxySecurityGroup.GroupId>]"},
		{"the existing cluster's group left shut", "      GroupId: !If [CreateCluster, !GetAtt DatabaseSecurityGroup.GroupId, !Ref ExistingDBSecurityGroupId]", "      GroupId: !GetAtt DatabaseSecurityGroup.GroupId",
			"existing cluster: database: ingress [], not [tcp 5432-5432 <ProxySecurityGroup.GroupId>]"},
		{"no Lambda endpoint", `ServiceName: !Sub "com.amazonaws.${AWS::Region}.lambda"`, `ServiceName: !Sub "com.amazonaws.${AWS::Region}.sts"`,
			"new cluster: VPC endpoints map[dynamodb:Gateway s3:Gateway sqs:Interface sts:Interface], not map[dynamodb:Gateway lambda:Interface s3:Gateway sqs:Interface]"},
		{"an endpoint made when told not to", "  DynamoDBGatewayEndpoint:\n    Type: AWS::EC2::VPCEndpoint\n    Condition: MakeVpcEndpoints\n", "  DynamoDBGatewayEndpoint:\n    Type: AWS::EC2::VPCEndpoint\n",
			"existing cluster, no endpoints: VPC endpoints map[dynamodb:Gateway], not map[]"},
		{"no private DNS", "      ServiceName: !Sub \"com.amazonaws.${AWS::Region}.sqs\"\n      SubnetIds: !Ref SubnetIds\n      SecurityGroupIds: [!GetAtt EndpointsSecurityGroup.GroupId]\n      PrivateDnsEnabled: true",
			"      ServiceName: !Sub \"com.amazonaws.${AWS::Region}.sqs\"\n      SubnetIds: !Ref SubnetIds\n      SecurityGroupIds: [!GetAtt EndpointsSecurityGroup.GroupId]\n      PrivateDnsEnabled: false",
			"SqsEndpoint: an interface endpoint needs SubnetIds and private DNS"},
		{"the relay on the stream again", "          EVENTS_QUEUE_URL: !Ref EventsQueue\n", "          EVENTS_QUEUE_URL: !Ref EventsQueue\n      Events:\n        JobsStream:\n          Type: DynamoDB\n          Properties:\n            Stream: arn:aws:dynamodb:eu-west-1:123456789012:table/jobs/stream/x\n            StartingPosition: TRIM_HORIZON\n",
			"RelayFunction: a DynamoDB stream event JobsStream"},
		{"the relay's backstop every hour", "      ScheduleExpression: rate(1 minute)", "      ScheduleExpression: rate(1 hour)", "the relay's schedules [RelaySchedule rate(1 hour) ENABLED]"},
		{"the relay's backstop before the schema", "  RelaySchedule:\n    Type: AWS::Events::Rule\n    DependsOn: DatabaseSchema\n", "  RelaySchedule:\n    Type: AWS::Events::Rule\n",
			"RelaySchedule does not depend on DatabaseSchema"},
		{"the worker's mapping before the schema", "    DependsOn: DatabaseSchema # and so does its commands mapping", "    # and so does its commands mapping",
			"WorkerFunction does not depend on DatabaseSchema"},
		{"a reader that nudges", "              - Sid: Consume\n                Effect: Allow\n                Action: [sqs:ReceiveMessage, sqs:DeleteMessage, sqs:GetQueueAttributes] # what Lambda's event source mapping needs (AWS's SQS guide); a failed message waits out its visibility, nothing changes it\n                Resource: !GetAtt EventsQueue.Arn\n",
			"              - Sid: Consume\n                Effect: Allow\n                Action: [sqs:ReceiveMessage, sqs:DeleteMessage, sqs:GetQueueAttributes] # what Lambda's event source mapping needs (AWS's SQS guide); a failed message waits out its visibility, nothing changes it\n                Resource: !GetAtt EventsQueue.Arn\n              - Sid: Nudge\n                Effect: Allow\n                Action: [lambda:InvokeFunction]\n                Resource: !GetAtt RelayFunction.Arn\n",
			"ProjectorFunction writes no job, yet may invoke [<RelayFunction.Arn>]"},
		{"a writer that cannot nudge", "          RELAY_FUNCTION_NAME: !Ref RelayFunction # a nudge's", "          RELAY_NAME: !Ref RelayFunction # a nudge's",
			"SweeperFunction writes jobs: lambda:InvokeFunction on [<RelayFunction.Arn>] and RELAY_FUNCTION_NAME <nil>"},
		{"a table kept for the jobs", "  ArticlesTable:\n", "  JobsTable:\n    Type: AWS::DynamoDB::Table\n  ArticlesTable:\n", "DynamoDB tables [ArticlesTable JobsTable]"},
		{"a wildcard action", "Action: [rds-db:connect]\n                Resource: !Sub [\"arn:${AWS::Partition}:rds-db:${AWS::Region}:${AWS::AccountId}:dbuser:${ProxyId}/${DatabaseUser}\", { ProxyId: !Select [6, !Split [\":\", !GetAtt DatabaseProxy.DBProxyArn]] }]\n              - Sid: VpcNetworkInterfaces # Lambda attaches the function to SubnetIds with this role (AWSLambdaVPCAccessExecutionRole's actions); EC2's Describe actions take no resource-level permission\n                Effect: Allow\n                Action: [ec2:CreateNetworkInterface, ec2:DescribeNetworkInterfaces, ec2:DescribeSubnets, ec2:DeleteNetworkInterface, ec2:AssignPrivateIpAddresses, ec2:UnassignPrivateIpAddresses]\n                Resource: \"*\"\n              - Sid: Publish",
			"Action: [rds-db:*]\n                Resource: !Sub [\"arn:${AWS::Partition}:rds-db:${AWS::Region}:${AWS::AccountId}:dbuser:${ProxyId}/${DatabaseUser}\", { ProxyId: !Select [6, !Split [\":\", !GetAtt DatabaseProxy.DBProxyArn]] }]\n              - Sid: VpcNetworkInterfaces # Lambda attaches the function to SubnetIds with this role (AWSLambdaVPCAccessExecutionRole's actions); EC2's Describe actions take no resource-level permission\n                Effect: Allow\n                Action: [ec2:CreateNetworkInterface, ec2:DescribeNetworkInterfaces, ec2:DescribeSubnets, ec2:DeleteNetworkInterface, ec2:AssignPrivateIpAddresses, ec2:UnassignPrivateIpAddresses]\n                Resource: \"*\"\n              - Sid: Publish",
			"RelayFunction's role: action rds-db:*"},
		{"a grant on another's resource", "                Resource: [!GetAtt CommandsQueue.Arn, !GetAtt EventsQueue.Arn]", "                Resource: [\"" + testSecret + "\"]",
			"RelayFunction's role: resource " + testSecret + " is neither one of this stack's nor its proxy's user"},
		{"a password in the template", "      ManageMasterUserPassword: true\n", "      MasterUserPassword: hunter22\n", "DatabaseCluster: the master password is not RDS's to manage"},
		{"PostgreSQL 17", "    Default: \"18.4\"", "    Default: \"17.6\"", "DatabaseCluster: engine aurora-postgresql 17.6, not aurora-postgresql 18.x"},
		{"the cluster unencrypted under the stack's key", "      KmsKeyId: !If [UseCustomerManagedKey, !GetAtt DataKey.Arn, !Ref AWS::NoValue]\n      DeletionProtection", "      DeletionProtection",
			"new cluster, no endpoints, customer managed key: DatabaseCluster: storage encrypted true with <nil>"},
		{"the proxy reading another secret", "                Resource: !If [CreateCluster, !GetAtt DatabaseCluster.MasterUserSecret.SecretArn, !Ref ExistingDBSecretArn]", "                Resource: \"*\"",
			"the proxy's role DatabaseProxyRole: [Allow [secretsmanager:GetSecretValue] on *]"},
		{"the schema run once for all", "      MigrateVersion: !Ref MigrateFunction.Version\n", "", "DatabaseSchema: Custom::FifoworkerSchema"},
		{"the schema before the proxy's targets", "    Type: Custom::FifoworkerSchema\n    DependsOn: DatabaseProxyTargetGroup\n", "    Type: Custom::FifoworkerSchema\n",
			"DatabaseSchema: depends on [], writer"},
	})
}

// breakCase is one edit of a template (its text old, which must occur
// once, made new) and what a check must then say (want).
type breakCase struct{ name, old, new, want string }

// requireEachBreakNamed makes each case's edit of the template at path
// and requires problems to say the case's want of the broken copy.
func requireEachBreakNamed(t *testing.T, path string, problems func(*samtemplate.Template) []string, cases []breakCase) {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, 1, strings.Count(string(raw), c.old), "the case's text must occur once")
			broken, err := samtemplate.Parse([]byte(strings.Replace(string(raw), c.old, c.new, 1)))
			require.NoError(t, err)
			require.Contains(t, strings.Join(problems(broken), "\n"), c.want)
		})
	}
}

// A deployment on an existing cluster that names no secret for the proxy
// or no security group to let it in, or one asking for the VPC endpoints
// without the route tables the gateway endpoints are made on, is refused
// by the template's Rules before anything is created.
func TestPostgresTemplateRefusesAnExistingClusterWithoutItsSecret(t *testing.T) {
	t.Parallel()
	tpl := loadPostgresTemplate(t)
	for _, d := range postgresDeployments {
		_, err := kafkaDeploymentOf(tpl, d.values())
		require.NoError(t, err, d.name)
	}
	for _, missing := range []string{"ExistingDBSecretArn", "ExistingDBSecurityGroupId"} {
		existing := postgresDeployments[2].values()
		delete(existing, missing)
		_, err := kafkaDeploymentOf(tpl, existing)
		require.ErrorContains(t, err, `"ExistingClusterNeedsItsSecretAndGroup"`, missing)
	}
	for _, tables := range []string{"", "rtb-0a,", "rtb-0a, "} {
		noTables := postgresDeployments[0].values()
		noTables["RouteTableIds"] = tables
		_, err := kafkaDeploymentOf(tpl, noTables)
		require.ErrorContains(t, err, `"EndpointsNeedRouteTables"`, "RouteTableIds %q", tables)
		noTables["CreateVpcEndpoints"] = "false"
		_, err = kafkaDeploymentOf(tpl, noTables)
		require.NoError(t, err, "no endpoints made, RouteTableIds %q", tables)
	}
}

// The parameters' patterns take what AWS takes and refuse what it would
// refuse at deployment: a cluster identifier (a letter, then letters,
// digits and single hyphens, not ending in one; its length of at most 63
// is RDS's to check), a database
// user (PostgreSQL's unquoted identifier, at most 63), an engine version
// of PostgreSQL 18 only (the stores use 18's RETURNING old/new); empty
// where empty means "a new cluster".
func TestPostgresParametersTakeWhatAWSTakes(t *testing.T) {
	t.Parallel()
	tpl := loadPostgresTemplate(t)
	for param, cases := range map[string]map[string]bool{
		"ExistingDBClusterIdentifier": {"": true, "jobs-db": true, "a": true, strings.Repeat("a", 63): true, "1db": false, "jobs--db": false, "jobs-": false, "jobs_db": false},
		"DatabaseUser":                {"fifoworker": true, "f": true, "f_1": true, strings.Repeat("u", 63): true, strings.Repeat("u", 64): false, "1user": false, "a-b": false, "": false},
		"DatabaseEngineVersion":       {"18.4": true, "18.10": true, "17.6": false, "18": false, "18.4.1": false},
		"ExistingDBSecurityGroupId":   {"": true, "sg-0db": true, "sg-": false, "0db": false},
		"ExistingDBSecretArn":         {"": true, testDBSecret: true, "arn:aws:ssm:eu-west-1:123456789012:parameter/x": false},
	} {
		p := tpl.Parameters[param]
		pattern := regexp.MustCompile(p.AllowedPattern)
		require.True(t, pattern.MatchString(p.Default.(string)), "%s's default %q", param, p.Default)
		for s, ok := range cases {
			require.Equal(t, ok, pattern.MatchString(s), "%s: %q", param, s)
		}
	}
	// ACUs: 0.5 is Serverless v2's least without auto-pause, 128 the most
	// the registry schema gives; the minimum's range within the maximum's.
	lo, hi := tpl.Parameters["DatabaseMinCapacity"], tpl.Parameters["DatabaseMaxCapacity"]
	require.Equal(t, []any{0.5, 128, 1, 128}, []any{lo.MinValue, lo.MaxValue, hi.MinValue, hi.MaxValue})
}

// The functions are built from their directories. template.yaml's five
// run their PostgreSQL wiring from main_postgres.go, built with the
// postgres tag; functions/migrate/ is PostgreSQL's alone, a main package
// whatever its files' names. Both are the wiring's (issue 18), written
// beside this template: until a file is there, its check waits for it
// (logged); once it is, the file must be what the template builds.
func TestPostgresFunctionsAreBuiltFromTheirDirectories(t *testing.T) {
	t.Parallel()
	require.Empty(t, bootstrapProblems(t, filepath.Join("..", "..", ".."), postgresFunctions, "main_postgres.go", "postgres"))
	// A main_postgres.go built without the tag, and a migrate directory
	// with no main package, are named.
	root := t.TempDir()
	for dir, file := range map[string]string{
		"functions/worker/main_postgres.go": "//go:build !kafka\n\npackage main\n",
		"functions/migrate/doc.go":          "// Package migrate.\npackage migrate\n",
	} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, filepath.Dir(dir)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, dir), []byte(file), 0o600))
	}
	problems := strings.Join(bootstrapProblems(t, root, postgresFunctions, "main_postgres.go", "postgres"), "\n")
	require.Contains(t, problems, "WorkerFunction: no file of "+filepath.Join(root, "functions/worker/main_postgres.go"))
	require.Contains(t, problems, "MigrateFunction: no file of "+filepath.Join(root, "functions/migrate/*.go"))
}

// bootstrapProblems names each function of a template whose files under
// root are there but are not the main package the template builds with
// tags: a function's file (the migration's: any of its files) is package
// main under a //go:build line the tags satisfy and, but for the
// migration's (built the same whatever the transport), that any one of
// them left out fails.
func bootstrapProblems(t *testing.T, root string, fns map[string]string, file string, tags ...string) []string {
	t.Helper()
	var out []string
	for _, fn := range slices.Sorted(maps.Keys(fns)) {
		pattern := filepath.Join(root, fns[fn], file)
		if fn == migrateFunction {
			pattern = filepath.Join(root, fns[fn], "*.go")
		}
		files, err := filepath.Glob(pattern)
		require.NoError(t, err)
		if len(files) == 0 {
			t.Logf("%s: nothing at %s yet (the wiring's)", fn, pattern)
			continue
		}
		if !slices.ContainsFunc(files, func(f string) bool {
			raw, err := os.ReadFile(f)
			require.NoError(t, err)
			with, only := builtWith(raw, tags)
			return regexp.MustCompile(`(?m)^package main$`).Match(raw) && with && (only || fn == migrateFunction)
		}) {
			out = append(out, fmt.Sprintf("%s: no file of %s is package main built with %v alone", fn, pattern, tags))
		}
	}
	return out
}

// builtWith reports whether src's //go:build line (none: every build) is
// satisfied by tags, and whether it is by them only: not with any one left
// out.
func builtWith(src []byte, tags []string) (with, only bool) {
	for _, line := range strings.Split(string(src), "\n") {
		if !constraint.IsGoBuild(line) {
			continue
		}
		expr, err := constraint.Parse(line)
		if err != nil {
			return false, false
		}
		eval := func(without string) bool {
			return expr.Eval(func(tag string) bool { return tag != without && slices.Contains(tags, tag) })
		}
		only = true
		for _, tag := range tags {
			only = only && !eval(tag)
		}
		return eval(""), only
	}
	return true, false
}
