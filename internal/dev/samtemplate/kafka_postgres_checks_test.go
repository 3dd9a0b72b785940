package samtemplate_test

import (
	"maps"
	"reflect"
	"slices"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// The checks of template-kafka-postgres.yaml: the Kafka template's checks
// of its Kafka side (kafka_checks_test.go) and the PostgreSQL template's
// of its database side (postgres_checks_test.go), run on each deployment
// of it (kafkaPostgresDeployments), and what is its own: where its
// functions run (kafkaPostgresCheck.vpc) and the endpoints they need.

// kafkaPostgresDeployment is a way to deploy template-kafka-postgres.yaml:
// a Kafka source and a database, with the same CreateVpcEndpoints.
type kafkaPostgresDeployment struct {
	kafka kafkaDeployment
	pg    postgresDeployment
}

var kafkaPostgresDeployments = []kafkaPostgresDeployment{
	{kafkaDeployment{name: "msk, new cluster", msk: true, endpoints: true}, postgresDeployment{endpoints: true}},
	{kafkaDeployment{name: "msk, no endpoints, self ingress, existing cluster", msk: true, selfRule: true}, postgresDeployment{existing: true}},
	{kafkaDeployment{name: "self-managed, new cluster, customer managed key", endpoints: true}, postgresDeployment{endpoints: true, cmk: true}},
	{kafkaDeployment{name: "self-managed, no endpoints, existing cluster", selfRule: true}, postgresDeployment{existing: true}},
}

// values are both deployments' values, but OperatorRoleArn, a queue's
// parameter the template has not.
func (d kafkaPostgresDeployment) values() map[string]string {
	v := d.pg.values()
	maps.Copy(v, d.kafka.values())
	delete(v, "OperatorRoleArn")
	return v
}

// kafkaPostgresCheck reads one deployment of the template.
type kafkaPostgresCheck struct{ *postgresCheck }

// kafkaPostgresProblems runs every check on every deployment of tpl.
func kafkaPostgresProblems(tpl *samtemplate.Template) []string {
	var out []string
	for _, d := range kafkaPostgresDeployments {
		dep, err := kafkaDeploymentOf(tpl, d.values())
		if err != nil {
			out = append(out, d.kafka.name+": "+err.Error())
			continue
		}
		k := &kafkaCheck{d: d.kafka, raw: tpl, tpl: dep, ev: evaluator{tpl: tpl, values: d.values()}}
		c := kafkaPostgresCheck{&postgresCheck{kafkaCheck: k, pd: d.pg, kafka: true}}
		k.transportChecks() // the Kafka side, as template-kafka.yaml's
		k.clusterAccess()
		c.storeChecks() // the database side, as template-postgres.yaml's
		c.databaseGroups()
		c.transport() // its own
		c.vpc()
		c.endpoints()
		out = append(out, k.problems...)
	}
	return append(out, kafkaRetryProblems(tpl)...)
}

// transport: every function is told its bootstrap is built for Kafka
// (environment holds STORE to postgres).
func (c kafkaPostgresCheck) transport() {
	for _, fn := range c.tpl.OfType("AWS::Serverless::Function") {
		if env := c.env(fn); env["TRANSPORT"] != "kafka" {
			c.addf("%s: TRANSPORT is %v, not kafka", fn, env["TRANSPORT"])
		}
	}
}

// deployedVPC is fn's VpcConfig as SAM deploys it: its own merged into
// Globals', its security groups after Globals' (SAM's Globals
// documentation: maps are merged, lists are additive, Globals' first; an
// intrinsic is a value, the function's own winning).
func (c kafkaPostgresCheck) deployedVPC(fn string) map[string]any {
	global := asMap(asMap(c.tpl.Globals["Function"])["VpcConfig"])
	own := asMap(c.props(fn)["VpcConfig"])
	out := map[string]any{}
	maps.Copy(out, global)
	maps.Copy(out, own)
	if groups, ok := own["SecurityGroupIds"].([]any); ok {
		out["SecurityGroupIds"] = slices.Concat(asList(global["SecurityGroupIds"]), groups)
	}
	return out
}

// vpc: every function runs in SubnetIds with the functions' group (the
// proxy); the relay, the one that connects to the brokers, with the Kafka
// clients' group as well, and no other function has it.
func (c kafkaPostgresCheck) vpc() {
	functions, clients := getAtt("FunctionsSecurityGroup", "GroupId"), getAtt("KafkaClientSecurityGroup", "GroupId")
	for _, fn := range c.tpl.OfType("AWS::Serverless::Function") {
		groups := []any{functions}
		if fn == relayFunction {
			groups = append(groups, clients)
		}
		want := map[string]any{"SubnetIds": ref("SubnetIds"), "SecurityGroupIds": groups}
		if got := c.deployedVPC(fn); !reflect.DeepEqual(got, want) {
			c.addf("%s runs with VpcConfig %v as deployed, not %v", fn, got, want)
		}
	}
}

// endpoints: with CreateVpcEndpoints the stack makes what the functions
// and the mappings' pollers call from the VPC: S3's and DynamoDB's
// gateways, Lambda's interface (the nudges), which the functions may
// reach on 443, and for a self-managed cluster Secrets Manager's (the
// relay's SCRAM secret), which the Kafka clients may; no SQS endpoint.
func (c kafkaPostgresCheck) endpoints() {
	made := map[string]string{"s3": "Gateway", "dynamodb": "Gateway", "lambda": "Interface"}
	if !c.d.msk {
		made["secretsmanager"] = "Interface"
	}
	c.vpcEndpoints(made, map[string]string{"secretsmanager": "<KafkaClientSecurityGroup.GroupId>"})
}
