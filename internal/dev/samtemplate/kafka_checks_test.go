package samtemplate_test

import (
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// The checks of template-kafka.yaml, each reading one deployment of it
// (kafkaDeployments) and returning what is wrong, so that a test can show
// each of them failing on a broken copy (kafka_template_test.go).

// The values the deployments give the parameters that have no default,
// and the cluster and secret they name.
const (
	testCluster     = "arn:aws:kafka:eu-west-1:123456789012:cluster/jobs/0a1b2c3d-1111-2222-3333-444455556666-7"
	testClusterPath = "jobs/0a1b2c3d-1111-2222-3333-444455556666-7"
	testSecret      = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:fifoworker-kafka-AbCdEf"
	testBrokers     = "b-1.jobs.abc.c2.kafka.eu-west-1.amazonaws.com:9098,b-2.jobs.abc.c2.kafka.eu-west-1.amazonaws.com:9098"
	mskIAMPort      = "9098" // MSK's port for IAM access control
)

// kafkaDeployment is a way to deploy template-kafka.yaml.
type kafkaDeployment struct {
	name      string
	msk       bool // KafkaSource msk, else self-managed
	endpoints bool // CreateVpcEndpoints "true"
	selfRule  bool // AddClusterSelfIngress "true"
}

// kafkaDeployments are the ways the checks deploy it: each source, with
// the stack's VPC endpoints and without (a NAT, or the VPC's own), and the
// cluster's self-referencing rule asked for.
var kafkaDeployments = []kafkaDeployment{
	{name: "msk", msk: true, endpoints: true},
	{name: "msk, no endpoints, self ingress", msk: true, selfRule: true},
	{name: "self-managed", endpoints: true},
	{name: "self-managed, no endpoints, self ingress asked", selfRule: true},
}

func (d kafkaDeployment) values() map[string]string {
	v := map[string]string{
		"VpcId": "vpc-0a", "SubnetIds": "subnet-0a,subnet-0b", "ClusterSecurityGroupId": "sg-0c",
		"KafkaBootstrapServers": testBrokers, "RouteTableIds": "rtb-0a,rtb-0b",
		"JwtIssuer": "https://issuer.example", "JwtAudience": "client",
		"CreateVpcEndpoints": fmt.Sprint(d.endpoints), "AddClusterSelfIngress": fmt.Sprint(d.selfRule),
	}
	if d.msk {
		v["KafkaSource"], v["MskClusterArn"] = "msk", testCluster
	} else {
		v["KafkaSource"], v["KafkaSecretArn"] = "self-managed", testSecret
	}
	return v
}

// kafkaConsumer is a function a Kafka mapping invokes.
type kafkaConsumer struct {
	function, role, mapping, topic string
	// threshold is the parameter of the attempt at which the consumer's
	// quarantine parks a record (QUARANTINE_AFTER_ATTEMPTS).
	threshold string
}

var kafkaConsumers = []kafkaConsumer{
	{"WorkerFunction", "WorkerRole", "WorkerCommandsMapping", "CommandsTopicName", "CommandsQuarantineAfterAttempts"},
	{"ProjectorFunction", "ProjectorRole", "ProjectorEventsMapping", "EventsTopicName", "EventsQuarantineAfterAttempts"},
}

// The network interface actions: a function in a VPC's (Lambda's
// AWSLambdaVPCAccessExecutionRole), and a Kafka mapping's pollers'
// (AWSLambdaMSKExecutionRole's EC2 actions, which SAM's SelfManagedKafka
// adds too). EC2's Describe actions take no resource: the only grants on
// "*" besides X-Ray's.
var (
	vpcFunctionActions = []string{"ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces", "ec2:DeleteNetworkInterface"}
	mappingENIActions  = []string{"ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces", "ec2:DescribeVpcs",
		"ec2:DeleteNetworkInterface", "ec2:DescribeSubnets", "ec2:DescribeSecurityGroups"}
	eniActions = []string{"ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces", "ec2:DescribeVpcs",
		"ec2:DeleteNetworkInterface", "ec2:DescribeSubnets", "ec2:DescribeSecurityGroups",
		"ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses"}
)

// samKafkaAuth are the authentications SAM's SelfManagedKafka event takes
// one of (its translator's SelfManagedKafka.AUTH_MECHANISM).
var samKafkaAuth = []string{"SASL_SCRAM_256_AUTH", "SASL_SCRAM_512_AUTH", "BASIC_AUTH", "CLIENT_CERTIFICATE_TLS_AUTH"}

// consumerGroupID is the pattern Lambda takes for a ConsumerGroupId.
var consumerGroupID = regexp.MustCompile(`^[a-zA-Z0-9-/*:_+=.@-]{1,200}$`)

// kafkaCheck reads one deployment of the template.
type kafkaCheck struct {
	d        kafkaDeployment
	raw      *samtemplate.Template // the template
	tpl      *samtemplate.Template // the deployment
	ev       evaluator
	problems []string
}

func (c *kafkaCheck) addf(format string, args ...any) {
	c.problems = append(c.problems, c.d.name+": "+fmt.Sprintf(format, args...))
}

// kafkaProblems runs every check on every deployment of tpl.
func kafkaProblems(tpl *samtemplate.Template) []string {
	var out []string
	for _, d := range kafkaDeployments {
		dep, err := kafkaDeploymentOf(tpl, d.values())
		if err != nil {
			out = append(out, d.name+": "+err.Error())
			continue
		}
		c := &kafkaCheck{d: d, raw: tpl, tpl: dep, ev: evaluator{tpl: tpl, values: d.values()}}
		c.functions()
		c.transportChecks()
		c.leastPrivilege()
		c.network()
		c.endpoints()
		out = append(out, c.problems...)
	}
	return append(out, kafkaRetryProblems(tpl)...)
}

// transportChecks are the checks of the Kafka side, which
// template-kafka-postgres.yaml's hold too (kafka_postgres_checks_test.go).
func (c *kafkaCheck) transportChecks() {
	c.mappings()
	c.relay()
	c.consumerRoles()
	c.quarantine()
	c.failedRecords()
	c.alarms()
}

// kafkaRetryProblems is kafkaRetryProblem of each consumer of tpl.
func kafkaRetryProblems(tpl *samtemplate.Template) []string {
	var out []string
	for _, k := range kafkaConsumers {
		if p := kafkaRetryProblem(tpl, k); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func (c *kafkaCheck) props(name string) map[string]any { return c.tpl.Resources[name].Properties }

func (c *kafkaCheck) str(v any) string {
	s, err := c.ev.str(v)
	if err != nil {
		c.addf("%v: %v", v, err)
	}
	return s
}

// topicARN and groupARN are what MSK IAM access control calls the
// cluster's topic and consumer group.
func topicARN(topic string) string {
	return "arn:aws:kafka:eu-west-1:123456789012:topic/" + testClusterPath + "/" + topic
}

func groupARN(group string) string {
	return "arn:aws:kafka:eu-west-1:123456789012:group/" + testClusterPath + "/" + group
}

// functions: the five functions of template.yaml, from the same
// directories, built the same way (their bootstraps with the kafka tag:
// Globals' TRANSPORT tells a bootstrap built otherwise), each under the
// code signing switch, with its own log group kept for a while.
func (c *kafkaCheck) functions() {
	if got := c.tpl.OfType("AWS::Serverless::Function"); !slices.Equal(got, sorted(slices.Collect(maps.Keys(functions)))) {
		c.addf("the functions are %v", got)
	}
	if env := asMap(asMap(asMap(c.tpl.Globals["Function"])["Environment"])["Variables"]); env["TRANSPORT"] != "kafka" {
		c.addf("Globals.Function's TRANSPORT is %v, not kafka", env["TRANSPORT"])
	}
	signing := c.raw.Resources["IntakeFunction"].Properties["CodeSigningConfigArn"]
	for fn, dir := range functions {
		r := c.raw.Resources[fn]
		if r.Properties["CodeUri"] != dir || r.Metadata["BuildMethod"] != "go1.x" || !reflect.DeepEqual(r.Properties["CodeSigningConfigArn"], signing) {
			c.addf("%s: CodeUri %v, BuildMethod %v, CodeSigningConfigArn %v", fn, r.Properties["CodeUri"], r.Metadata["BuildMethod"], r.Properties["CodeSigningConfigArn"])
		}
		group := asMap(asMap(c.props(fn)["LoggingConfig"])["LogGroup"])["Ref"]
		if group == nil || c.props(fmt.Sprint(group))["RetentionInDays"] == nil || c.props(fn)["Policies"] != nil {
			c.addf("%s: log group %v without a retention, or SAM policies", fn, group)
		}
	}
}

// mappings: each consumer is invoked by one Kafka mapping, in provisioned
// mode, with partial batch responses, from the earliest record, in a
// consumer group of its own, giving records up (after bounded retries,
// kafkaRetryProblem) only to the failed-records bucket; each mapping is
// what SAM's event of its source would make.
func (c *kafkaCheck) mappings() {
	var want []string
	groups := map[string]string{}
	for _, k := range kafkaConsumers {
		want = append(want, k.mapping)
		p := c.props(k.mapping)
		if p == nil {
			c.addf("%s: no such mapping", k.mapping)
			continue
		}
		expect := map[string]any{
			"FunctionName": ref(k.function), "Topics": []any{ref(k.topic)}, "StartingPosition": "TRIM_HORIZON",
			"FunctionResponseTypes": []any{"ReportBatchItemFailures"}, "BisectBatchOnFunctionError": true,
			"MaximumRecordAgeInSeconds": -1,
			"DestinationConfig":         map[string]any{"OnFailure": map[string]any{"Destination": getAtt("KafkaFailuresBucket", "Arn")}},
		}
		for key, v := range expect {
			if !reflect.DeepEqual(p[key], v) {
				c.addf("%s: %s is %v, not %v", k.mapping, key, p[key], v)
			}
		}
		pollers := asMap(p["ProvisionedPollerConfig"])
		if pollers == nil {
			c.addf("%s: no ProvisionedPollerConfig: Lambda takes partial batch responses and bounded retries for Kafka in provisioned mode only", k.mapping)
		} else if toInt(pollers["MinimumPollers"]) < 1 || !reflect.DeepEqual(pollers["MaximumPollers"], ref("TopicPartitions")) {
			c.addf("%s: ProvisionedPollerConfig %v: at least one poller, at most the partitions", k.mapping, pollers)
		}
		if b := toInt(p["BatchSize"]); b < 1 || b > 10000 || k.function == "WorkerFunction" && b != 10 {
			c.addf("%s: BatchSize %v (the worker's spool holds ten lanes)", k.mapping, p["BatchSize"])
		}
		if w, ok := p["MaximumBatchingWindowInSeconds"]; !ok || toInt(w) < 0 || toInt(w) > 300 {
			c.addf("%s: MaximumBatchingWindowInSeconds %v, not 0 to 300", k.mapping, w)
		}
		group := c.source(k, p)
		if other, dup := groups[group]; dup {
			c.addf("%s: consumer group %q is %s's too: a group id must be unique among Kafka mappings", k.mapping, group, other)
		}
		groups[group] = k.mapping
	}
	if got := c.tpl.OfType("AWS::Lambda::EventSourceMapping"); !slices.Equal(got, sorted(want)) {
		c.addf("the mappings are %v, not one per consumer %v", got, sorted(want))
	}
	for _, fn := range c.tpl.OfType("AWS::Serverless::Function") {
		for name, ev := range asMap(c.props(fn)["Events"]) {
			if typ := asMap(ev)["Type"]; typ == "SQS" || typ == "MSK" || typ == "SelfManagedKafka" {
				c.addf("%s.%s: a %v event (the mappings are declared as resources, one per consumer)", fn, name, typ)
			}
		}
	}
}

// source checks the mapping's source-specific properties, as SAM's MSK or
// SelfManagedKafka event makes them, and returns its consumer group.
func (c *kafkaCheck) source(k kafkaConsumer, p map[string]any) string {
	own, other := "SelfManagedKafkaEventSourceConfig", "AmazonManagedKafkaEventSourceConfig"
	if c.d.msk {
		own, other = other, own
		if !reflect.DeepEqual(p["EventSourceArn"], ref("MskClusterArn")) {
			c.addf("%s: EventSourceArn %v, not the cluster", k.mapping, p["EventSourceArn"])
		}
		for _, key := range []string{"SelfManagedEventSource", "SourceAccessConfigurations"} {
			if p[key] != nil {
				c.addf("%s: %s on MSK (IAM: the role authenticates)", k.mapping, key)
			}
		}
	} else {
		if p["EventSourceArn"] != nil {
			c.addf("%s: an EventSourceArn for a self-managed cluster", k.mapping)
		}
		brokers := map[string]any{"Endpoints": map[string]any{"KafkaBootstrapServers": ref("KafkaBootstrapServers")}}
		if !reflect.DeepEqual(p["SelfManagedEventSource"], brokers) {
			c.addf("%s: SelfManagedEventSource %v, not KafkaBootstrapServers", k.mapping, p["SelfManagedEventSource"])
		}
		c.sourceAccess(k, asList(p["SourceAccessConfigurations"]))
	}
	if p[other] != nil {
		c.addf("%s: %s on the other source", k.mapping, other)
	}
	group := c.str(asMap(p[own])["ConsumerGroupId"])
	if !consumerGroupID.MatchString(group) {
		c.addf("%s: consumer group %q in %s is not one Lambda takes", k.mapping, group, own)
	}
	return group
}

// sourceAccess holds a self-managed mapping's SourceAccessConfigurations
// to SAM's rules for its SelfManagedKafka event (VPC_SUBNET and
// VPC_SECURITY_GROUP together, one authentication) and to the stack's
// network: SubnetIds' subnets, the clients' security group, SCRAM with
// the given secret.
func (c *kafkaCheck) sourceAccess(k kafkaConsumer, confs []any) {
	subnets, _ := c.ev.list(ref("SubnetIds"))
	var gotSubnets, groups, auth []string
	for _, conf := range confs {
		m := asMap(conf)
		uri := c.str(m["URI"])
		switch typ := fmt.Sprint(m["Type"]); {
		case typ == "VPC_SUBNET":
			gotSubnets = append(gotSubnets, uri)
		case typ == "VPC_SECURITY_GROUP":
			groups = append(groups, uri)
		case slices.Contains(samKafkaAuth, typ):
			auth = append(auth, typ+" "+uri)
		default:
			c.addf("%s: SourceAccessConfigurations type %s, which SAM's SelfManagedKafka takes not", k.mapping, typ)
		}
	}
	if len(gotSubnets) < 2 || len(subnets) < 2 || !slices.Equal(gotSubnets, []string{"subnet:" + subnets[0], "subnet:" + subnets[1]}) {
		c.addf("%s: VPC subnets %v, not SubnetIds' first two %v", k.mapping, gotSubnets, subnets)
	}
	if !slices.Equal(groups, []string{"security_group:<KafkaClientSecurityGroup.GroupId>"}) {
		c.addf("%s: VPC security groups %v, not KafkaClientSecurityGroup", k.mapping, groups)
	}
	if !slices.Equal(auth, []string{"SASL_SCRAM_512_AUTH " + testSecret}) {
		c.addf("%s: authentication %v, not SCRAM-SHA-512 with KafkaSecretArn (SAM takes exactly one)", k.mapping, auth)
	}
}

// kafkaRetryProblem: a consumer's mapping retries a bounded number of
// times (not -1, Lambda's infinite), and at least as many as the
// consumer's quarantine threshold can be at its largest: the mapping
// invokes a record 1 + MaximumRetryAttempts times before it gives the
// record to the on-failure destination, and the quarantine parks the
// record at its threshold's attempt, which must come first, as
// template.yaml's thresholds sit below the queues' maxReceiveCount. The
// threshold is at least what the consumer's own recovery needs: the
// worker's MaxGenerations + 2, the projector's RecoverAfterAttempts + 1.
func kafkaRetryProblem(tpl *samtemplate.Template, k kafkaConsumer) string {
	fn, ok := tpl.Resources[k.function]
	mapping, ok2 := tpl.Resources[k.mapping]
	if !ok || !ok2 {
		return k.function + " or " + k.mapping + " is missing"
	}
	vars := asMap(asMap(fn.Properties["Environment"])["Variables"])
	if !reflect.DeepEqual(vars["QUARANTINE_AFTER_ATTEMPTS"], ref(k.threshold)) {
		return fmt.Sprintf("%s's QUARANTINE_AFTER_ATTEMPTS is not !Ref %s: %v", k.function, k.threshold, vars["QUARANTINE_AFTER_ATTEMPTS"])
	}
	p := tpl.Parameters[k.threshold]
	if p.MinValue == nil || p.MaxValue == nil {
		return k.threshold + " needs a MinValue and a MaxValue"
	}
	retries, ok := mapping.Properties["MaximumRetryAttempts"].(int)
	least := toInt(tpl.Parameters["RecoverAfterAttempts"].MaxValue) + 1
	if k.function == "WorkerFunction" {
		least = toInt(tpl.Parameters["MaxGenerations"].MaxValue) + 2
	}
	switch hi := toInt(p.MaxValue); {
	case !ok || retries < 0 || retries > 10000:
		return fmt.Sprintf("%s's MaximumRetryAttempts %v is not a bound of 0 to 10000 (-1 retries for ever, and a failing key would hold its partition for ever)", k.mapping, mapping.Properties["MaximumRetryAttempts"])
	case hi > retries:
		return fmt.Sprintf("%s may be %d, above %s's MaximumRetryAttempts %d: Lambda gives a record up after %d invocations, before the quarantine parks it", k.threshold, hi, k.mapping, retries, retries+1)
	case toInt(p.MinValue) < least:
		return fmt.Sprintf("%s may be %v, below %d: a record would be parked while its recovery still needs attempts", k.threshold, p.MinValue, least)
	}
	return ""
}

// relay: the relay produces to both topics, with the brokers, mechanism
// and (SCRAM) secret in its environment, from the cluster's VPC; it may
// connect, describe and write both topics as an idempotent producer
// (MSK IAM), or read the SCRAM secret; no function has a queue setting.
func (c *kafkaCheck) relay() {
	env := asMap(asMap(c.props("RelayFunction")["Environment"])["Variables"])
	mechanism, secret := "SCRAM-SHA-512", any(ref("KafkaSecretArn"))
	if c.d.msk {
		mechanism, secret = "AWS_MSK_IAM", nil
	}
	for key, want := range map[string]any{
		"KAFKA_SASL_MECHANISM": mechanism, "KAFKA_SECRET_ARN": secret,
		"COMMANDS_TOPIC": ref("CommandsTopicName"), "EVENTS_TOPIC": ref("EventsTopicName"),
	} {
		if !reflect.DeepEqual(env[key], want) {
			c.addf("RelayFunction: %s is %v, not %v", key, env[key], want)
		}
	}
	if got := c.str(env["KAFKA_BOOTSTRAP_SERVERS"]); got != testBrokers {
		c.addf("RelayFunction: KAFKA_BOOTSTRAP_SERVERS gives %q, not the brokers %q", got, testBrokers)
	}
	for _, fn := range c.tpl.OfType("AWS::Serverless::Function") {
		for key := range asMap(asMap(c.props(fn)["Environment"])["Variables"]) {
			if strings.Contains(key, "QUEUE") {
				c.addf("%s: %s, a queue's setting in the Kafka template", fn, key)
			}
		}
	}
	c.grantsAll("RelayFunction", "*", vpcFunctionActions...)
	if !c.d.msk {
		c.grantsAll("RelayFunction", testSecret, "secretsmanager:GetSecretValue")
		c.grantsNone("RelayFunction", "kafka-cluster:")
		return
	}
	c.grantsAll("RelayFunction", testCluster, "kafka-cluster:Connect", "kafka-cluster:WriteDataIdempotently")
	for _, topic := range []string{"fifoworker-commands", "fifoworker-events"} {
		c.grantsAll("RelayFunction", topicARN(topic), "kafka-cluster:DescribeTopic", "kafka-cluster:WriteData")
	}
	c.grantsNone("RelayFunction", "kafka-cluster:ReadData", "kafka-cluster:AlterGroup", "secretsmanager:")
}

// consumerRoles: each consumer's role carries what its mapping does with
// it (SAM adds these only to a role it makes): find the cluster, make the
// pollers' network interfaces, connect, read its own topic and commit its
// own group (MSK IAM), or read the SCRAM secret; and write the failed
// records. It writes to no topic.
func (c *kafkaCheck) consumerRoles() {
	for _, k := range kafkaConsumers {
		c.grantsAll(k.function, "*", mappingENIActions...)
		c.grantsAll(k.function, "<KafkaFailuresBucket.Arn>/*", "s3:PutObject")
		c.grantsAll(k.function, "<KafkaFailuresBucket.Arn>", "s3:ListBucket")
		c.grantsNone(k.function, "kafka-cluster:WriteData")
		if !c.d.msk {
			c.grantsAll(k.function, testSecret, "secretsmanager:GetSecretValue")
			c.grantsNone(k.function, "kafka-cluster:", "kafka:")
			continue
		}
		topic := c.str(ref(k.topic))
		group := c.str(asMap(c.props(k.mapping)["AmazonManagedKafkaEventSourceConfig"])["ConsumerGroupId"])
		c.grantsAll(k.function, testCluster, "kafka:DescribeClusterV2", "kafka:GetBootstrapBrokers",
			"kafka-cluster:Connect", "kafka-cluster:DescribeClusterDynamicConfiguration")
		c.grantsAll(k.function, topicARN(topic), "kafka-cluster:DescribeTopic", "kafka-cluster:ReadData")
		c.grantsAll(k.function, groupARN(group), "kafka-cluster:DescribeGroup", "kafka-cluster:AlterGroup")
		c.grantsNone(k.function, "secretsmanager:")
	}
}

// statements are the statements of fn's role, as deployed.
func (c *kafkaCheck) statements(fn string) []map[string]any {
	role := getAttTarget(c.props(fn)["Role"])
	var out []map[string]any
	for _, pol := range asList(c.props(role)["Policies"]) {
		for _, st := range asList(asMap(asMap(pol)["PolicyDocument"])["Statement"]) {
			out = append(out, asMap(st))
		}
	}
	return out
}

// grants returns the resources fn's role allows action on, evaluated.
func (c *kafkaCheck) grants(fn, action string) []string {
	var out []string
	for _, s := range c.statements(fn) {
		if s["Effect"] != "Allow" || !slices.Contains(asList(s["Action"]), any(action)) {
			continue
		}
		for _, r := range asList(s["Resource"]) {
			out = append(out, c.str(r))
		}
	}
	return out
}

func (c *kafkaCheck) grantsAll(fn, resource string, actions ...string) {
	for _, a := range actions {
		if !slices.Contains(c.grants(fn, a), resource) {
			c.addf("%s's role: no %s on %s", fn, a, resource)
		}
	}
}

// grantsNone: fn's role allows no action starting with any of prefixes.
func (c *kafkaCheck) grantsNone(fn string, prefixes ...string) {
	for _, s := range c.statements(fn) {
		for _, a := range asList(s["Action"]) {
			for _, p := range prefixes {
				if strings.HasPrefix(fmt.Sprint(a), p) {
					c.addf("%s's role: %v, which it has no use for", fn, a)
				}
			}
		}
	}
}

// leastPrivilege: as template.yaml's functions (functions_template_test.go),
// each function has a role of its own that allows only named actions on
// this stack's resources, its cluster's topics and groups, or its secret;
// "*" only for X-Ray (once per role) and the network interface actions.
func (c *kafkaCheck) leastPrivilege() {
	roles := map[string]string{}
	for _, fn := range c.tpl.OfType("AWS::Serverless::Function") {
		role := getAttTarget(c.props(fn)["Role"])
		if other, shared := roles[role]; shared || c.tpl.Resources[role].Type != "AWS::IAM::Role" {
			c.addf("%s: role %q (shared with %q, or not a role of its own)", fn, role, other)
		}
		roles[role] = fn
		xray := 0
		for _, s := range c.statements(fn) {
			if isXRayStatement(s) {
				xray++
				continue
			}
			c.statementPrivilege(fn, s)
		}
		if xray != 1 {
			c.addf("%s's role has %d X-Ray statements, not one", fn, xray)
		}
	}
}

func (c *kafkaCheck) statementPrivilege(fn string, s map[string]any) {
	actions := asList(s["Action"])
	if s["Effect"] != "Allow" {
		c.addf("%s's role: a %v statement", fn, s["Effect"])
	}
	for _, a := range actions {
		if strings.Contains(fmt.Sprint(a), "*") {
			c.addf("%s's role: action %v", fn, a)
		}
	}
	for _, r := range asList(s["Resource"]) {
		if r != "*" {
			if !refersToTemplate(r, c.tpl) && !c.kafkaResource(r) {
				c.addf("%s's role: resource %v is neither one of this stack's nor its cluster's or secret", fn, r)
			}
			continue
		}
		for _, a := range actions {
			if !slices.Contains(eniActions, fmt.Sprint(a)) {
				c.addf("%s's role: %v on \"*\"", fn, a)
			}
		}
	}
}

// kafkaResource reports whether r names the deployment's cluster, one of
// its topics or groups, or its Kafka secret.
func (c *kafkaCheck) kafkaResource(r any) bool {
	s, err := c.ev.str(r)
	if err != nil {
		return false
	}
	for _, kind := range []string{"topic", "group"} {
		if rest, ok := strings.CutPrefix(s, "arn:aws:kafka:eu-west-1:123456789012:"+kind+"/"+testClusterPath+"/"); ok && rest != "" && !strings.Contains(rest, "*") {
			return c.d.msk
		}
	}
	return s == testCluster && c.d.msk || s == testSecret && !c.d.msk
}

// network: the relay, and it alone, runs in the cluster's VPC, with the
// clients' security group, which may reach only the brokers' port and
// HTTPS; the brokers let that group in on their port (MSK IAM's 9098, or
// the self-managed port); the cluster's group lets itself in when asked
// (MSK only: an MSK mapping's pollers use it).
func (c *kafkaCheck) network() {
	vpc := map[string]any{"SubnetIds": ref("SubnetIds"), "SecurityGroupIds": []any{getAtt("KafkaClientSecurityGroup", "GroupId")}}
	for _, fn := range c.tpl.OfType("AWS::Serverless::Function") {
		got := c.props(fn)["VpcConfig"]
		switch {
		case fn == "RelayFunction" && !reflect.DeepEqual(got, vpc):
			c.addf("RelayFunction is not in the cluster's VPC with the clients' security group: VpcConfig %v", got)
		case fn != "RelayFunction" && got != nil:
			c.addf("%s is in a VPC, which it has no use for: its requests would need endpoints or a NAT", fn)
		}
	}
	c.clusterAccess()
}

// clusterAccess: the clients' security group may reach only the brokers'
// port and HTTPS; the brokers let it in on their port; the cluster's group
// lets itself in when asked (MSK only).
func (c *kafkaCheck) clusterAccess() {
	port := mskIAMPort
	if !c.d.msk {
		port = c.str(ref("SelfManagedKafkaPort"))
	}
	clients := c.props("KafkaClientSecurityGroup")
	if !reflect.DeepEqual(clients["VpcId"], ref("VpcId")) || clients["SecurityGroupIngress"] != nil {
		c.addf("KafkaClientSecurityGroup: VpcId %v, ingress %v", clients["VpcId"], clients["SecurityGroupIngress"])
	}
	var egress []string
	for _, rule := range asList(clients["SecurityGroupEgress"]) {
		r := asMap(rule)
		to := r["DestinationSecurityGroupId"]
		if to == nil {
			to = r["CidrIp"]
		}
		egress = append(egress, fmt.Sprintf("%v %s-%s %s", r["IpProtocol"], c.str(r["FromPort"]), c.str(r["ToPort"]), c.str(to)))
	}
	if want := []string{"tcp " + port + "-" + port + " sg-0c", "tcp 443-443 0.0.0.0/0"}; !slices.Equal(egress, want) {
		c.addf("KafkaClientSecurityGroup's egress %v, not %v", egress, want)
	}
	in := c.props("ClusterIngressFromClients")
	if got := fmt.Sprintf("%s %v %s-%s %s", c.str(in["GroupId"]), in["IpProtocol"], c.str(in["FromPort"]), c.str(in["ToPort"]), c.str(in["SourceSecurityGroupId"])); got != "sg-0c tcp "+port+"-"+port+" <KafkaClientSecurityGroup.GroupId>" {
		c.addf("ClusterIngressFromClients: %s, not the clients on port %s", got, port)
	}
	self, exists := c.tpl.Resources["ClusterSelfIngress"]
	if exists != (c.d.msk && c.d.selfRule) {
		c.addf("ClusterSelfIngress exists: %v (MSK %v, asked %v)", exists, c.d.msk, c.d.selfRule)
	}
	if p := self.Properties; exists && c.str(p["GroupId"])+" "+c.str(p["SourceSecurityGroupId"])+" "+c.str(p["FromPort"])+"-"+c.str(p["ToPort"]) != "sg-0c sg-0c "+mskIAMPort+"-"+mskIAMPort {
		c.addf("ClusterSelfIngress: %v, not the cluster's group to itself on %s", p, mskIAMPort)
	}
}

// endpoints: what is called from the VPC has a way out. The mappings'
// pollers put failed records to S3 from it; the relay reads the SCRAM
// secret (self-managed only). With CreateVpcEndpoints the stack makes an
// endpoint for each, in the VPC (S3's a gateway on RouteTableIds; Secrets
// Manager's an interface in SubnetIds, with private DNS, that the clients
// may reach on 443), and none other; without it none: the VPC's own, or a
// NAT, serve (the parameter says so).
func (c *kafkaCheck) endpoints() {
	want := map[string]string{"s3": "Gateway"}
	if !c.d.msk {
		want["secretsmanager"] = "Interface"
	}
	got := map[string]string{}
	for _, name := range c.tpl.OfType("AWS::EC2::VPCEndpoint") {
		p := c.props(name)
		svc := strings.TrimPrefix(c.str(p["ServiceName"]), "com.amazonaws.eu-west-1.")
		got[svc] = fmt.Sprint(p["VpcEndpointType"])
		if !reflect.DeepEqual(p["VpcId"], ref("VpcId")) {
			c.addf("%s: not in VpcId", name)
		}
		switch got[svc] {
		case "Gateway":
			if !reflect.DeepEqual(p["RouteTableIds"], ref("RouteTableIds")) {
				c.addf("%s: a gateway endpoint not on RouteTableIds", name)
			}
		case "Interface":
			c.interfaceEndpoint(name, p)
		}
	}
	if !c.d.endpoints {
		want = map[string]string{}
	}
	if !reflect.DeepEqual(got, want) {
		c.addf("VPC endpoints %v, not %v (CreateVpcEndpoints %v)", got, want, c.d.endpoints)
	}
}

func (c *kafkaCheck) interfaceEndpoint(name string, p map[string]any) {
	if !reflect.DeepEqual(p["SubnetIds"], ref("SubnetIds")) || p["PrivateDnsEnabled"] != true {
		c.addf("%s: an interface endpoint needs SubnetIds and private DNS (the SDK calls the service's own name)", name)
	}
	groups := asList(p["SecurityGroupIds"])
	if len(groups) != 1 {
		c.addf("%s: security groups %v", name, groups)
		return
	}
	for _, rule := range asList(c.props(getAttTarget(groups[0]))["SecurityGroupIngress"]) {
		r := asMap(rule)
		if c.str(r["FromPort"]) == "443" && c.str(r["ToPort"]) == "443" && reflect.DeepEqual(r["SourceSecurityGroupId"], getAtt("KafkaClientSecurityGroup", "GroupId")) {
			return
		}
	}
	c.addf("%s: the Kafka clients may not reach it on 443", name)
}

// quarantine: each consumer's quarantine is its topic's (its environment
// names the topic, its role's grants on the quarantine table and on
// parked bodies are held to the topic's keys and prefix), and the sweeper
// counts both topics' held keys.
func (c *kafkaCheck) quarantine() {
	sweeper := asMap(asMap(c.props("SweeperFunction")["Environment"])["Variables"])
	for _, k := range kafkaConsumers {
		variable := strings.ToUpper(strings.TrimSuffix(k.topic, "TopicName")) + "_TOPIC"
		env := asMap(asMap(c.props(k.function)["Environment"])["Variables"])
		if !reflect.DeepEqual(env[variable], ref(k.topic)) || !reflect.DeepEqual(sweeper[variable], ref(k.topic)) {
			c.addf("%s's and the sweeper's %s are %v and %v, not %s", k.function, variable, env[variable], sweeper[variable], k.topic)
		}
		scope := map[string]any{"ForAllValues:StringLike": map[string]any{
			"dynamodb:LeadingKeys": []any{map[string]any{"Fn::Sub": "${" + k.topic + "}#*"}},
		}}
		bodies := map[string]any{"Fn::Sub": "${CandidatesBucket.Arn}/quarantine/${" + k.topic + "}/*"}
		var table, parked int
		for _, s := range c.statements(k.function) {
			for _, r := range asList(s["Resource"]) {
				switch {
				case namesQuarantineTable(r):
					table++
					if !reflect.DeepEqual(s["Condition"], scope) {
						c.addf("%s's role: %v on the quarantine table, not held to %s's keys: %v", k.function, s["Action"], k.topic, s["Condition"])
					}
				case namesQuarantineBodies(r):
					parked++
					if !reflect.DeepEqual(r, bodies) {
						c.addf("%s's role: parked bodies %v, not %s's", k.function, r, k.topic)
					}
				}
			}
		}
		_, hasTable := c.tpl.Resources["QuarantineTable"] // none when the quarantine is in PostgreSQL
		if table == 0 && hasTable || parked == 0 {
			c.addf("%s's role: no grant on the quarantine table or on parked bodies", k.function)
		}
	}
}

// failedRecords: the mappings' on-failure bucket is kept, private,
// encrypted, reached over TLS only, written by the consumers' roles only,
// and counts its writes for KafkaFailuresAlarm.
func (c *kafkaCheck) failedRecords() {
	r := c.tpl.Resources["KafkaFailuresBucket"]
	p := r.Properties
	if r.Attributes["DeletionPolicy"] != "Retain" || p["BucketEncryption"] == nil || len(asList(p["MetricsConfigurations"])) != 1 {
		c.addf("KafkaFailuresBucket: DeletionPolicy %v, encryption %v, metrics %v", r.Attributes["DeletionPolicy"], p["BucketEncryption"], p["MetricsConfigurations"])
	}
	for k, v := range asMap(p["PublicAccessBlockConfiguration"]) {
		if v != true {
			c.addf("KafkaFailuresBucket: %s %v", k, v)
		}
	}
	var tls, writers bool
	for _, st := range asList(asMap(c.props("KafkaFailuresBucketPolicy")["PolicyDocument"])["Statement"]) {
		s := asMap(st)
		cond := asMap(s["Condition"])
		tls = tls || s["Effect"] == "Deny" && asMap(cond["Bool"])["aws:SecureTransport"] == "false"
		writers = writers || s["Effect"] == "Deny" && s["Action"] == "s3:PutObject" &&
			reflect.DeepEqual(asMap(cond["ArnNotEquals"])["aws:PrincipalArn"], []any{getAtt("WorkerRole", "Arn"), getAtt("ProjectorRole", "Arn")})
	}
	if !tls || !writers {
		c.addf("KafkaFailuresBucketPolicy: TLS only %v, only the consumers' roles write %v", tls, writers)
	}
	if enc := c.raw.Resources["KafkaFailuresBucket"].Properties["BucketEncryption"]; !reflect.DeepEqual(enc, c.raw.Resources["CandidatesBucket"].Properties["BucketEncryption"]) {
		c.addf("KafkaFailuresBucket's encryption %v is not the candidates' (SSE-S3, or DataKey with CustomerManagedKey)", enc)
	}
}

// alarms: the quarantine's held keys are watched under the topic names the
// sweeper is given; a write to the failed-records bucket (the quarantine's
// backstop) alarms; so does a consumer group that stays behind.
func (c *kafkaCheck) alarms() {
	for alarm, topic := range map[string]string{"CommandsHeldAlarm": "CommandsTopicName", "EventsHeldAlarm": "EventsTopicName"} {
		if dims := asList(c.props(alarm)["Dimensions"]); !reflect.DeepEqual(dims, []any{map[string]any{"Name": "Queue", "Value": ref(topic)}}) {
			c.addf("%s watches %v, not Queue=%s (the sweeper's COMMANDS_TOPIC or EVENTS_TOPIC)", alarm, dims, topic)
		}
	}
	id := asMap(asList(c.props("KafkaFailuresBucket")["MetricsConfigurations"])[0])["Id"]
	f := c.props("KafkaFailuresAlarm")
	if f["Namespace"] != "AWS/S3" || f["MetricName"] != "PutRequests" || toInt(f["Threshold"]) != 0 || f["ComparisonOperator"] != "GreaterThanThreshold" ||
		!reflect.DeepEqual(f["Dimensions"], []any{map[string]any{"Name": "BucketName", "Value": ref("KafkaFailuresBucket")}, map[string]any{"Name": "FilterId", "Value": id}}) {
		c.addf("KafkaFailuresAlarm does not fire on a write to KafkaFailuresBucket: %v", f)
	}
	for alarm, fn := range map[string]string{"CommandsLagAlarm": "WorkerFunction", "EventsLagAlarm": "ProjectorFunction"} {
		a := c.props(alarm)
		if a["MetricName"] != "OffsetLag" || !reflect.DeepEqual(a["Dimensions"], []any{map[string]any{"Name": "FunctionName", "Value": ref(fn)}}) {
			c.addf("%s does not watch %s's OffsetLag: %v", alarm, fn, a)
		}
	}
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
