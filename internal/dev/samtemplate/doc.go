// Package samtemplate reads template.yaml, the single source of truth for the
// resources fifoworker runs on, into plain values: CloudFormation's short
// intrinsic tags (!Ref, !GetAtt, !Sub, ...) become their long forms
// ({"Ref": ...}, {"Fn::GetAtt": [...]}), so that the local deployer and the
// template checks read one representation.
//
// CheckRegistry holds a template's plain CloudFormation resources to
// their types' resource provider (registry) schemas, the JSON schemas AWS
// publishes per resource type: no unknown or read-only property, every
// required one, types, enums, ranges and patterns as the schema gives
// them, intrinsic functions by what they give. SAM functions are checked
// as the resources SAM makes of them (AWS::Lambda::Function, and an
// AWS::Lambda::EventSourceMapping per SQS, DynamoDB or Kinesis event);
// SAM's other resources are not: no registry schema describes them. Every
// Ref, Fn::GetAtt, Fn::Sub variable, Fn::If and Condition must name
// something the template has, and resource attributes (DependsOn,
// DeletionPolicy, ...) be ones AWS takes. The tests read the schemas from
// the module cache, from the version of github.com/aws-cloudformation/rain
// that go.mod pins (registry_pin.go).
package samtemplate
