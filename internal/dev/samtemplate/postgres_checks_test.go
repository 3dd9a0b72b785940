package samtemplate_test

import (
	"cmp"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// The checks of template-postgres.yaml, each reading one deployment of it
// (postgresDeployments) and returning what is wrong, so that a test can
// show each of them failing on a broken copy (postgres_template_test.go).

// The values the deployments give, and what CloudFormation would give the
// proxy: its ARN ends in its resource id, which IAM authentication names.
const (
	testProxyARN    = "arn:aws:rds:eu-west-1:123456789012:db-proxy:prx-0123456789abcdef0"
	testProxyUser   = "arn:aws:rds-db:eu-west-1:123456789012:dbuser:prx-0123456789abcdef0/fifoworker"
	testDBSecret    = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:fifoworker-db-AbCdEf"
	testDBCluster   = "jobs-db"
	testDBGroup     = "sg-0db"
	postgresPort    = "5432"
	relayFunction   = "RelayFunction"
	migrateFunction = "MigrateFunction"
)

// postgresFunctions are template-postgres.yaml's functions: template.yaml's
// five, from the same directories, and the migration's.
//
// functions/migrate/ is written by the migration's own helper of issue 18
// (its main_postgres.go, built with the postgres tag); the template names
// it already, and TestPostgresFunctionsAreBuiltFromTheirDirectories holds
// the directory to exist once anything is in it.
var postgresFunctions = func() map[string]string {
	m := maps.Clone(functions)
	m[migrateFunction] = "functions/migrate/"
	return m
}()

// writers are the functions that write jobs' transitions, and so outbox
// rows: each nudges the relay after a commit.
var writers = []string{"IntakeFunction", "WorkerFunction", "SweeperFunction"}

// postgresDeployment is a way to deploy template-postgres.yaml.
type postgresDeployment struct {
	name      string
	existing  bool // ExistingDBClusterIdentifier given, else a new cluster
	endpoints bool // CreateVpcEndpoints "true"
	cmk       bool // CustomerManagedKey "true"
}

var postgresDeployments = []postgresDeployment{
	{name: "new cluster", endpoints: true},
	{name: "new cluster, no endpoints, customer managed key", cmk: true},
	{name: "existing cluster", existing: true, endpoints: true},
	{name: "existing cluster, no endpoints", existing: true},
}

func (d postgresDeployment) values() map[string]string {
	v := map[string]string{
		"VpcId": "vpc-0a", "SubnetIds": "subnet-0a,subnet-0b", "RouteTableIds": "rtb-0a,rtb-0b",
		"JwtIssuer": "https://issuer.example", "JwtAudience": "client", "OperatorRoleArn": "arn:aws:iam::123456789012:role/operator",
		"CreateVpcEndpoints": fmt.Sprint(d.endpoints), "CustomerManagedKey": fmt.Sprint(d.cmk),
	}
	if d.existing {
		v["ExistingDBClusterIdentifier"], v["ExistingDBSecretArn"], v["ExistingDBSecurityGroupId"] = testDBCluster, testDBSecret, testDBGroup
	}
	return v
}

// postgresCheck reads one deployment of the template: kafkaCheck's reading
// (its props, str, statements and problems), for a PostgreSQL deployment.
type postgresCheck struct {
	*kafkaCheck
	pd postgresDeployment
	// kafka: the template is template-kafka-postgres.yaml, whose Kafka
	// side (the mappings, the relay's secret's ARN, the cluster's grants)
	// the Kafka template's checks hold instead (kafka_postgres_checks_test.go).
	kafka bool
}

// postgresProblems runs every check on every deployment of tpl.
func postgresProblems(tpl *samtemplate.Template) []string {
	var out []string
	for _, d := range postgresDeployments {
		dep, err := kafkaDeploymentOf(tpl, d.values())
		if err != nil {
			out = append(out, d.name+": "+err.Error())
			continue
		}
		c := &postgresCheck{pd: d, kafkaCheck: &kafkaCheck{d: kafkaDeployment{name: d.name}, raw: tpl, tpl: dep, ev: evaluator{tpl: tpl, values: d.values()}}}
		c.storeChecks()
		c.network()
		c.endpoints()
		out = append(out, c.problems...)
	}
	return out
}

// storeChecks are the checks of the database side, which
// template-kafka-postgres.yaml's hold too (kafka_postgres_checks_test.go).
func (c *postgresCheck) storeChecks() {
	c.functions()
	c.environment()
	c.noDynamoArbiter()
	c.cluster()
	c.proxy()
	c.connect()
	c.nudges()
	c.leastPrivilege()
	c.relay()
	c.schema()
}

// fnProp is a function's property as deployed, Globals' when it has none.
func (c *postgresCheck) fnProp(fn, key string) any { return fnProp(c.tpl, fn, key) }

// env is a function's environment as deployed: Globals' and its own.
func (c *postgresCheck) env(fn string) map[string]any {
	out := maps.Clone(asMap(asMap(asMap(c.tpl.Globals["Function"])["Environment"])["Variables"]))
	if out == nil {
		out = map[string]any{}
	}
	maps.Copy(out, asMap(asMap(c.props(fn)["Environment"])["Variables"]))
	return out
}

// functions: the six functions, from their directories, built the same way
// (their bootstraps with the postgres tag: Globals' STORE tells a
// bootstrap built otherwise), each under the code signing switch, with its
// own log group kept for a while and no SAM policies.
func (c *postgresCheck) functions() {
	if got := c.tpl.OfType("AWS::Serverless::Function"); !slices.Equal(got, slices.Sorted(maps.Keys(postgresFunctions))) {
		c.addf("the functions are %v", got)
	}
	signing := c.raw.Resources["IntakeFunction"].Properties["CodeSigningConfigArn"]
	for _, fn := range slices.Sorted(maps.Keys(postgresFunctions)) {
		r, p := c.raw.Resources[fn], c.props(fn)
		group := fmt.Sprint(asMap(asMap(p["LoggingConfig"])["LogGroup"])["Ref"])
		got := fmt.Sprintf("%v %v signed:%v retention:%v policies:%v", r.Properties["CodeUri"], r.Metadata["BuildMethod"],
			reflect.DeepEqual(r.Properties["CodeSigningConfigArn"], signing), c.props(group)["RetentionInDays"] != nil, p["Policies"] != nil)
		if want := postgresFunctions[fn] + " go1.x signed:true retention:true policies:false"; got != want {
			c.addf("%s: %s, not %s", fn, got, want)
		}
	}
}

// secretish are the environment names and the values no function's
// environment may have: a password, a secret, a connection string, or
// what resolves to one.
var (
	secretishName  = regexp.MustCompile(`(?i)PASSWORD|SECRET|DSN|TOKEN|CREDENTIAL`)
	secretishValue = regexp.MustCompile(`(?i)MasterUserSecret|ExistingDBSecretArn|secretsmanager|\{\{resolve:|postgres(ql)?://`)
)

// environment: every function opens the database through the proxy, as
// DatabaseUser, to the fifoworker database, on 5432, with a bounded pool,
// and no secret sits in any environment; none names a table the database
// replaced.
func (c *postgresCheck) environment() {
	want := map[string]any{
		"STORE": "postgres", "POSTGRES_HOST": getAtt("DatabaseProxy", "Endpoint"), "POSTGRES_PORT": postgresPort,
		"POSTGRES_DATABASE": "fifoworker", "POSTGRES_USER": ref("DatabaseUser"), "POSTGRES_MAX_CONNS": ref("PostgresMaxConns"),
	}
	for _, fn := range c.tpl.OfType("AWS::Serverless::Function") {
		env := c.env(fn)
		for k, v := range want {
			if !reflect.DeepEqual(env[k], v) {
				c.addf("%s: %s is %v, not %v", fn, k, env[k], v)
			}
		}
		for k, v := range env {
			kafkaSecret := c.kafka && fn == relayFunction && k == "KAFKA_SECRET_ARN" && reflect.DeepEqual(v, ref("KafkaSecretArn")) // the SCRAM secret's ARN, which the relay's role reads
			if !kafkaSecret && (secretishName.MatchString(k) || secretishValue.MatchString(fmt.Sprint(v))) {
				c.addf("%s: %s=%v: a secret in the environment", fn, k, v)
			}
			if slices.Contains([]string{"JOBS_TABLE", "VIEWS_TABLE", "TOTALS_TABLE", "QUARANTINE_TABLE"}, k) {
				c.addf("%s: %s, a table the database replaced", fn, k)
			}
		}
	}
	if def := fmt.Sprint(c.tpl.Parameters["PostgresMaxConns"].Default); def != "4" {
		c.addf("PostgresMaxConns defaults to %s, not 4", def)
	}
}

// noDynamoArbiter: of DynamoDB, only the articles table stays, and no
// function is invoked by a DynamoDB stream.
func (c *postgresCheck) noDynamoArbiter() {
	if got := c.tpl.OfType("AWS::DynamoDB::Table"); !slices.Equal(got, []string{"ArticlesTable"}) {
		c.addf("DynamoDB tables %v, not the articles table alone", got)
	}
	for _, fn := range c.tpl.OfType("AWS::Serverless::Function") {
		for name, e := range asMap(c.props(fn)["Events"]) {
			if typ := asMap(e)["Type"]; typ == "DynamoDB" || typ == "Kinesis" {
				c.addf("%s: a %v stream event %s", fn, typ, name)
			}
		}
	}
	if got := c.tpl.OfType("AWS::Lambda::EventSourceMapping"); len(got) > 0 && !c.kafka {
		c.addf("event source mappings %v outside the functions' SQS events", got)
	}
}

// cluster: a new cluster is Aurora PostgreSQL 18 Serverless v2 (one
// db.serverless writer, the capacity between the parameters), its master
// password managed by RDS (never in the template), encrypted (with DataKey
// when asked), protected from deletion and kept with the stack's data; an
// existing cluster gets none of these resources.
func (c *postgresCheck) cluster() {
	created := []string{"DatabaseCluster", "DatabaseSecurityGroup", "DatabaseSubnetGroup", "DatabaseWriter"}
	var have []string
	for _, name := range created {
		if _, ok := c.tpl.Resources[name]; ok {
			have = append(have, name)
		}
	}
	if c.pd.existing {
		if len(have) > 0 {
			c.addf("an existing cluster, yet the stack makes %v", have)
		}
		return
	}
	if !slices.Equal(have, created) {
		c.addf("a new cluster needs %v, the stack makes %v", created, have)
		return
	}
	p := c.props("DatabaseCluster")
	key := any(nil)
	if c.pd.cmk {
		key = getAtt("DataKey", "Arn")
	}
	scaling := map[string]any{"MinCapacity": ref("DatabaseMinCapacity"), "MaxCapacity": ref("DatabaseMaxCapacity")}
	switch {
	case p["Engine"] != "aurora-postgresql" || !regexp.MustCompile(`^18\.\d+$`).MatchString(c.str(p["EngineVersion"])):
		c.addf("DatabaseCluster: engine %v %s, not aurora-postgresql 18.x", p["Engine"], c.str(p["EngineVersion"]))
	case p["ManageMasterUserPassword"] != true || p["MasterUserPassword"] != nil || !reflect.DeepEqual(p["MasterUsername"], ref("DatabaseUser")):
		c.addf("DatabaseCluster: the master password is not RDS's to manage, or the user is not DatabaseUser")
	case p["StorageEncrypted"] != true || !reflect.DeepEqual(p["KmsKeyId"], key) || !reflect.DeepEqual(asMap(p["MasterUserSecret"])["KmsKeyId"], key):
		c.addf("DatabaseCluster: storage encrypted %v with %v, secret with %v; the key should be %v", p["StorageEncrypted"], p["KmsKeyId"], p["MasterUserSecret"], key)
	case !reflect.DeepEqual(p["DeletionProtection"], ref("DatabaseDeletionProtection")) || c.tpl.Resources["DatabaseCluster"].Attributes["DeletionPolicy"] != "Retain":
		c.addf("DatabaseCluster: deletion protection %v, DeletionPolicy %v", p["DeletionProtection"], c.tpl.Resources["DatabaseCluster"].Attributes["DeletionPolicy"])
	case !reflect.DeepEqual(p["ServerlessV2ScalingConfiguration"], scaling) || p["DatabaseName"] != "fifoworker":
		c.addf("DatabaseCluster: scaling %v, database %v", p["ServerlessV2ScalingConfiguration"], p["DatabaseName"])
	}
	w := c.props("DatabaseWriter")
	if w["DBInstanceClass"] != "db.serverless" || !reflect.DeepEqual(w["DBClusterIdentifier"], ref("DatabaseCluster")) || w["PubliclyAccessible"] != false {
		c.addf("DatabaseWriter: %v", w)
	}
}

// secret is the secret the proxy logs in with: the new cluster's, or the
// one ExistingDBSecretArn names.
func (c *postgresCheck) secret() any {
	if c.pd.existing {
		return ref("ExistingDBSecretArn")
	}
	return getAtt("DatabaseCluster", "MasterUserSecret.SecretArn")
}

// proxy: RDS Proxy for PostgreSQL, TLS only, IAM authentication required
// from its clients, logging in to the database with the secret, which its
// role alone may read; its target the cluster, its pool a share of it.
func (c *postgresCheck) proxy() {
	p := c.props("DatabaseProxy")
	auth := []any{map[string]any{"AuthScheme": "SECRETS", "IAMAuth": "REQUIRED", "SecretArn": c.secret()}}
	if p["EngineFamily"] != "POSTGRESQL" || p["RequireTLS"] != true {
		c.addf("DatabaseProxy: engine family %v, RequireTLS %v", p["EngineFamily"], p["RequireTLS"])
	}
	if !reflect.DeepEqual(p["Auth"], auth) {
		c.addf("DatabaseProxy: Auth %v, not %v", p["Auth"], auth)
	}
	if !reflect.DeepEqual(p["VpcSubnetIds"], ref("SubnetIds")) || !reflect.DeepEqual(p["VpcSecurityGroupIds"], []any{getAtt("ProxySecurityGroup", "GroupId")}) {
		c.addf("DatabaseProxy: subnets %v, security groups %v", p["VpcSubnetIds"], p["VpcSecurityGroupIds"])
	}
	role := getAttTarget(p["RoleArn"])
	var grants []string
	for _, pol := range asList(c.props(role)["Policies"]) {
		for _, st := range asList(asMap(asMap(pol)["PolicyDocument"])["Statement"]) {
			s := asMap(st)
			grants = append(grants, fmt.Sprintf("%v %v on %v", s["Effect"], s["Action"], s["Resource"]))
		}
	}
	if want := []string{fmt.Sprintf("Allow [secretsmanager:GetSecretValue] on %v", c.secret())}; !slices.Equal(grants, want) {
		c.addf("the proxy's role %s: %v, not %v", role, grants, want)
	}
	target := ref("DatabaseCluster")
	if c.pd.existing {
		target = ref("ExistingDBClusterIdentifier")
	}
	tg := c.props("DatabaseProxyTargetGroup")
	if !reflect.DeepEqual(tg["DBProxyName"], ref("DatabaseProxy")) || !reflect.DeepEqual(tg["DBClusterIdentifiers"], []any{target}) || tg["TargetGroupName"] != "default" ||
		!reflect.DeepEqual(asMap(tg["ConnectionPoolConfigurationInfo"])["MaxConnectionsPercent"], ref("ProxyMaxConnectionsPercent")) {
		c.addf("DatabaseProxyTargetGroup: %v, not the proxy's default group on %v", tg, target)
	}
}

// grants returns the resources fn's role allows action on, evaluated.
func (c *postgresCheck) grants(fn, action string) []string {
	var out []string
	for _, s := range c.statements(fn) {
		if s["Effect"] != "Allow" || !slices.Contains(asList(s["Action"]), any(action)) {
			continue
		}
		for _, r := range asList(s["Resource"]) {
			out = append(out, c.arn(r))
		}
	}
	return out
}

// arn is the ARN r gives, the proxy's ARN standing as CloudFormation would
// give it.
func (c *postgresCheck) arn(r any) string {
	return c.str(withValue(r, getAtt("DatabaseProxy", "DBProxyArn"), testProxyARN))
}

// withValue is v with every part equal to from replaced by to.
func withValue(v, from, to any) any {
	if reflect.DeepEqual(v, from) {
		return to
	}
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = withValue(e, from, to)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = withValue(e, from, to)
		}
		return out
	}
	return v
}

// connect: every function may connect to the database as DatabaseUser
// through this stack's proxy, and in no other way: rds-db:connect on that
// user of the proxy's resource id alone.
func (c *postgresCheck) connect() {
	for _, fn := range c.tpl.OfType("AWS::Serverless::Function") {
		if got := c.grants(fn, "rds-db:connect"); !slices.Equal(got, []string{testProxyUser}) {
			c.addf("%s's role: rds-db:connect on %v, not %s alone", fn, got, testProxyUser)
		}
	}
}

// nudges: the writers, and they alone, know the relay and may invoke it.
func (c *postgresCheck) nudges() {
	arn := fmt.Sprintf("<%s.Arn>", relayFunction)
	for _, fn := range c.tpl.OfType("AWS::Serverless::Function") {
		writes := slices.Contains(writers, fn)
		got := c.grants(fn, "lambda:InvokeFunction")
		name := c.env(fn)["RELAY_FUNCTION_NAME"]
		if writes && (!slices.Equal(got, []string{arn}) || !reflect.DeepEqual(name, ref(relayFunction))) {
			c.addf("%s writes jobs: lambda:InvokeFunction on %v and RELAY_FUNCTION_NAME %v, not the relay's", fn, got, name)
		}
		if !writes && (len(got) > 0 || name != nil) {
			c.addf("%s writes no job, yet may invoke %v (RELAY_FUNCTION_NAME %v)", fn, got, name)
		}
	}
}

// leastPrivilege: as template.yaml's functions (functions_template_test.go),
// each function has a role of its own that allows only named actions on
// this stack's resources or its proxy's user; "*" only for X-Ray (once per
// role) and the network interface actions; of DynamoDB, only the worker's
// Query of the articles.
func (c *postgresCheck) leastPrivilege() {
	owner := map[string]string{}
	for _, fn := range c.tpl.OfType("AWS::Serverless::Function") {
		role := getAttTarget(c.props(fn)["Role"])
		if other, taken := owner[role]; taken || c.tpl.Resources[role].Type != "AWS::IAM::Role" {
			c.addf("%s: role %q (shared with %q, or not a role of its own)", fn, role, other)
		}
		owner[role] = fn
		statements := c.statements(fn)
		granted := slices.DeleteFunc(slices.Clone(statements), isXRayStatement)
		if xray := len(statements) - len(granted); xray != 1 {
			c.addf("%s's role has %d X-Ray statements, not one", fn, xray)
		}
		for _, s := range granted {
			for _, p := range c.grantProblems(s) {
				c.addf("%s's role: %s", fn, p)
			}
		}
		for _, a := range []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query", "dynamodb:BatchGetItem", "dynamodb:GetRecords"} {
			got := c.grants(fn, a)
			articles := fn == "WorkerFunction" && a == "dynamodb:Query" && slices.Equal(got, []string{"<ArticlesTable.Arn>"})
			if len(got) > 0 && !articles {
				c.addf("%s's role: %s on %v, which the database replaced", fn, a, got)
			}
		}
	}
}

// grantProblems says what a statement allows beyond named actions on this
// stack's resources or its proxy's user, and "*" for other than the
// network interface actions.
func (c *postgresCheck) grantProblems(s map[string]any) []string {
	var out []string
	if s["Effect"] != "Allow" {
		out = append(out, fmt.Sprintf("a %v statement", s["Effect"]))
	}
	for _, a := range asList(s["Action"]) {
		action := fmt.Sprint(a)
		for _, r := range asList(s["Resource"]) {
			switch {
			case strings.Contains(action, "*"):
				out = append(out, "action "+action)
			case r == "*" && !slices.Contains(eniActions, action):
				out = append(out, fmt.Sprintf("%s on \"*\"", action))
			case r != "*" && !refersToTemplate(r, c.tpl) && c.arn(r) != testProxyUser && (!c.kafka || !c.kafkaResource(r)):
				out = append(out, fmt.Sprintf("resource %v is neither one of this stack's nor its proxy's user (nor its Kafka cluster's)", r))
			}
		}
	}
	return out
}

// rules lists a security group's rules (its own, or the rule resources
// naming it as GroupId) as "tcp FROM-TO PEER".
func (c *postgresCheck) rules(list any) []string {
	if list == nil {
		return nil
	}
	var out []string
	for _, rule := range asList(list) {
		r := asMap(rule)
		peer := r["DestinationSecurityGroupId"]
		for _, k := range []string{"SourceSecurityGroupId", "CidrIp"} {
			if peer == nil {
				peer = r[k]
			}
		}
		out = append(out, fmt.Sprintf("%v %s-%s %s", r["IpProtocol"], c.str(r["FromPort"]), c.str(r["ToPort"]), c.str(peer)))
	}
	return out
}

// ingress is every ingress rule of the group with that id, evaluated.
func (c *postgresCheck) ingress(group string) []string {
	var out []string
	for _, name := range c.tpl.OfType("AWS::EC2::SecurityGroup") {
		if c.str(getAtt(name, "GroupId")) == group {
			out = append(out, c.rules(c.props(name)["SecurityGroupIngress"])...)
		}
	}
	for _, name := range c.tpl.OfType("AWS::EC2::SecurityGroupIngress") {
		if p := c.props(name); c.str(p["GroupId"]) == group {
			out = append(out, c.rules(p)...)
		}
	}
	return out
}

// network: every function runs in SubnetIds with the functions' group;
// and databaseGroups.
func (c *postgresCheck) network() {
	vpc := map[string]any{"SubnetIds": ref("SubnetIds"), "SecurityGroupIds": []any{getAtt("FunctionsSecurityGroup", "GroupId")}}
	for _, fn := range c.tpl.OfType("AWS::Serverless::Function") {
		if got := c.fnProp(fn, "VpcConfig"); !reflect.DeepEqual(got, vpc) {
			c.addf("%s is not in SubnetIds with the functions' security group: VpcConfig %v", fn, got)
		}
	}
	c.databaseGroups()
}

// databaseGroups: the functions' group may reach only the proxy's port
// and HTTPS; the proxy lets only the functions in and may reach only the
// database's port; the database lets only the proxy in.
func (c *postgresCheck) databaseGroups() {
	functions, proxy, database := "<FunctionsSecurityGroup.GroupId>", "<ProxySecurityGroup.GroupId>", "<DatabaseSecurityGroup.GroupId>"
	if c.pd.existing {
		database = testDBGroup
	}
	for _, g := range []struct {
		name, id      string
		egress, ingre []string
	}{
		{"FunctionsSecurityGroup", functions, []string{"tcp 5432-5432 " + proxy, "tcp 443-443 0.0.0.0/0"}, nil},
		{"ProxySecurityGroup", proxy, []string{"tcp 5432-5432 " + database}, []string{"tcp 5432-5432 " + functions}},
		{"database", database, nil, []string{"tcp 5432-5432 " + proxy}},
	} {
		if p, ok := c.tpl.Resources[g.name]; ok {
			if got := c.rules(p.Properties["SecurityGroupEgress"]); !slices.Equal(got, g.egress) || !reflect.DeepEqual(p.Properties["VpcId"], ref("VpcId")) {
				c.addf("%s: egress %v, not %v (or not in VpcId)", g.name, got, g.egress)
			}
		}
		if got := c.ingress(g.id); !slices.Equal(got, g.ingre) {
			c.addf("%s: ingress %v, not %v", g.name, got, g.ingre)
		}
	}
}

// endpoints: what the functions call from the VPC has a way out. With
// CreateVpcEndpoints the stack makes an endpoint for each (S3's and
// DynamoDB's gateways on RouteTableIds; SQS's and Lambda's interfaces in
// SubnetIds, with private DNS, that the functions may reach on 443), and
// none other; without it none: the VPC's own, or a NAT, serve.
func (c *postgresCheck) endpoints() {
	c.vpcEndpoints(map[string]string{"s3": "Gateway", "dynamodb": "Gateway", "sqs": "Interface", "lambda": "Interface"}, nil)
}

// vpcEndpoints: with CreateVpcEndpoints the stack makes the endpoints
// made (service: type) and none other, without it none; an interface
// endpoint lets in on 443 only the group clients names for its service,
// the functions' by default.
func (c *postgresCheck) vpcEndpoints(made, clients map[string]string) {
	want := map[string]string{}
	if c.pd.endpoints {
		want = made
	}
	got := map[string]string{}
	for _, name := range c.tpl.OfType("AWS::EC2::VPCEndpoint") {
		p := c.props(name)
		svc := strings.TrimPrefix(c.str(p["ServiceName"]), "com.amazonaws.eu-west-1.")
		got[svc] = fmt.Sprint(p["VpcEndpointType"])
		switch {
		case !reflect.DeepEqual(p["VpcId"], ref("VpcId")):
			c.addf("%s: not in VpcId", name)
		case got[svc] == "Gateway" && !reflect.DeepEqual(p["RouteTableIds"], ref("RouteTableIds")):
			c.addf("%s: a gateway endpoint not on RouteTableIds", name)
		case got[svc] == "Interface" && (!reflect.DeepEqual(p["SubnetIds"], ref("SubnetIds")) || p["PrivateDnsEnabled"] != true):
			c.addf("%s: an interface endpoint needs SubnetIds and private DNS (the SDK calls the service's own name)", name)
		case got[svc] == "Interface":
			groups := asList(p["SecurityGroupIds"])
			from := cmp.Or(clients[svc], "<FunctionsSecurityGroup.GroupId>")
			if len(groups) != 1 || !slices.Equal(c.ingress(c.str(groups[0])), []string{"tcp 443-443 " + from}) {
				c.addf("%s: the functions may not reach it on 443 alone (groups %v)", name, groups)
			}
		}
	}
	if !reflect.DeepEqual(got, want) {
		c.addf("VPC endpoints %v, not %v (CreateVpcEndpoints %v)", got, want, c.pd.endpoints)
	}
}

// relay: no stream invokes the relay; the writers' nudges and a schedule
// every minute do, with a bounded concurrency (2 by default).
func (c *postgresCheck) relay() {
	if events := c.props(relayFunction)["Events"]; events != nil {
		c.addf("RelayFunction has events %v: its schedule is RelaySchedule, nothing else invokes it but the writers", events)
	}
	reserved := c.props(relayFunction)["ReservedConcurrentExecutions"]
	if !reflect.DeepEqual(reserved, ref("RelayReservedConcurrency")) || fmt.Sprint(c.tpl.Parameters["RelayReservedConcurrency"].Default) != "2" {
		c.addf("RelayFunction: reserved concurrency %v (default %v), not RelayReservedConcurrency, 2", reserved, c.tpl.Parameters["RelayReservedConcurrency"].Default)
	}
	var rules []string
	for _, name := range c.tpl.OfType("AWS::Events::Rule") {
		p := c.props(name)
		targets := asList(p["Targets"])
		if len(targets) == 1 && reflect.DeepEqual(asMap(targets[0])["Arn"], getAtt(relayFunction, "Arn")) {
			rules = append(rules, fmt.Sprintf("%s %v %v", name, p["ScheduleExpression"], p["State"]))
		}
	}
	if want := []string{"RelaySchedule rate(1 minute) ENABLED"}; !slices.Equal(rules, want) {
		c.addf("the relay's schedules %v, not %v", rules, want)
	}
	perm := c.props("RelaySchedulePermission")
	if !reflect.DeepEqual(perm["FunctionName"], ref(relayFunction)) || perm["Principal"] != "events.amazonaws.com" ||
		perm["Action"] != "lambda:InvokeFunction" || !reflect.DeepEqual(perm["SourceArn"], getAtt("RelaySchedule", "Arn")) {
		c.addf("RelaySchedulePermission: %v", perm)
	}
}

// dependsOn lists a resource's DependsOn.
func (c *postgresCheck) dependsOn(name string) []string {
	var out []string
	for _, d := range asList(c.tpl.Resources[name].Attributes["DependsOn"]) {
		if d != nil {
			out = append(out, fmt.Sprint(d))
		}
	}
	return out
}

// schema: the custom resource runs the migration function, whenever its
// code (and so the migrations it embeds) changes; it waits for the proxy's
// targets (and a new cluster's writer); every other function, and so their
// SQS mappings and schedules, and the relay's schedule wait for it.
func (c *postgresCheck) schema() {
	r := c.tpl.Resources["DatabaseSchema"]
	p := r.Properties
	if r.Type != "Custom::FifoworkerSchema" || !reflect.DeepEqual(p["ServiceToken"], getAtt(migrateFunction, "Arn")) ||
		!reflect.DeepEqual(p["MigrateVersion"], ref(migrateFunction+".Version")) || c.props(migrateFunction)["AutoPublishAlias"] == nil {
		c.addf("DatabaseSchema: %s %v, not run by each new version of MigrateFunction", r.Type, p)
	}
	writer := any(nil)
	if !c.pd.existing {
		writer = ref("DatabaseWriter")
	}
	if !slices.Contains(c.dependsOn("DatabaseSchema"), "DatabaseProxyTargetGroup") || !reflect.DeepEqual(p["Writer"], writer) {
		c.addf("DatabaseSchema: depends on %v, writer %v: not after the proxy's targets and the writer %v", c.dependsOn("DatabaseSchema"), p["Writer"], writer)
	}
	for _, name := range append(c.tpl.OfType("AWS::Serverless::Function"), "RelaySchedule") {
		if name != migrateFunction && !slices.Contains(c.dependsOn(name), "DatabaseSchema") {
			c.addf("%s does not depend on DatabaseSchema: it (its mappings, its schedule) could run before the schema exists", name)
		}
	}
}
