// Package cfnschema holds a SAM template (as internal/dev/samtemplate reads
// it) to the resource provider (registry) schemas AWS publishes per
// CloudFormation resource type. Only tests use it: it checks template.yaml
// in make test, and no build of the module links it (deps_test.go holds
// the CLI's and every other package's imports to that).
//
// Check holds a template's plain CloudFormation resources to their types'
// schemas: no unknown or read-only property, every required one, types,
// enums, ranges and patterns as the schema gives them, intrinsic functions
// by what they give. SAM functions are checked as the resources SAM makes
// of them (AWS::Lambda::Function, and an AWS::Lambda::EventSourceMapping
// per SQS, DynamoDB or Kinesis event); SAM's other resources are not: no
// registry schema describes them. Every Ref, Fn::GetAtt, Fn::Sub
// variable, Fn::If and Condition must name something the template has, and
// resource attributes (DependsOn, DeletionPolicy, ...) be ones AWS takes.
//
// The tests read the schemas from the module cache, from the version of
// github.com/aws-cloudformation/rain that go.mod requires; pin_test.go's
// import is what keeps that requirement there.
package cfnschema
