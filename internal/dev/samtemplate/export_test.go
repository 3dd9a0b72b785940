package samtemplate

// Scalar is the text of v, a literal, a Ref or a Fn::FindInMap (of
// literals, Refs and Fn::FindInMap), as a deployment whose Refs ref gives
// sees it: the template's own tests read a value as CloudFormation would.
func (t *Template) Scalar(v any, ref RefFunc) (string, error) {
	return t.scalar(v, ref)
}
