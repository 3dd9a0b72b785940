// Package samtemplate reads template.yaml, the single source of truth for the
// resources fifoworker runs on, into plain values: CloudFormation's short
// intrinsic tags (!Ref, !GetAtt, !Sub, ...) become their long forms
// ({"Ref": ...}, {"Fn::GetAtt": [...]}), so that the local deployer and the
// template checks read one representation. It evaluates what a deployment
// decides before it creates anything (conditions, Fn::If, Fn::FindInMap,
// Refs of parameters, the Rules that refuse a deployment), for the local
// deployer and the template checks.
//
// Its tests check the template's own rules; internal/dev/cfnschema, which
// only tests use, holds it to AWS's resource schemas.
package samtemplate
