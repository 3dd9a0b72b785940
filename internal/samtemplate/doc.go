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
// them, intrinsic functions accepted wherever a value is. The tests read
// the schemas from the module cache, from the version of
// github.com/aws-cloudformation/rain that go.mod pins (registry_pin.go).
// SAM's resources are not checked this way: SAM transforms them before
// CloudFormation sees them, and no registry schema describes them.
package samtemplate
