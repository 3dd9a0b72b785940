// Package samtemplate reads template.yaml, the single source of truth for the
// resources fifoworker runs on, into plain values: CloudFormation's short
// intrinsic tags (!Ref, !GetAtt, !Sub, ...) become their long forms
// ({"Ref": ...}, {"Fn::GetAtt": [...]}), so that the local deployer and the
// template checks read one representation.
package samtemplate
