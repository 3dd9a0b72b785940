package cfnschema_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/cfnschema"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// A parameter's value is checked only where it can be deployed: a
// resource whose Condition needs the parameter set is not checked with
// its empty default, nor a Fn::If branch its condition rules out; where
// the conditions allow the value, it is checked as before.
func TestRegistryCheckTakesAParameterOnlyWhereItsValueCanBeDeployed(t *testing.T) {
	t.Parallel()
	const tpl = `
Parameters:
  Profile: {Type: String, Default: ""}
Conditions:
  Signed: !Not [!Equals [!Ref Profile, ""]]
Resources:
  Guarded:
    Type: AWS::Lambda::CodeSigningConfig
    Condition: Signed
    Properties:
      AllowedPublishers: {SigningProfileVersionArns: [!Ref Profile]}
  Branch:
    Type: AWS::Lambda::CodeSigningConfig
    Properties:
      AllowedPublishers: {SigningProfileVersionArns: [!If [Signed, !Ref Profile, "arn:aws:signer:eu-west-1:123456789012:/signing-profiles/p/abcdef0123"]]}
  Unguarded:
    Type: AWS::Lambda::CodeSigningConfig
    Properties:
      AllowedPublishers: {SigningProfileVersionArns: [!Ref Profile]}
  WrongBranch:
    Type: AWS::Lambda::CodeSigningConfig
    Properties:
      AllowedPublishers: {SigningProfileVersionArns: [!If [Signed, "arn:aws:signer:eu-west-1:123456789012:/signing-profiles/p/abcdef0123", !Ref Profile]]}
`
	parsed, err := samtemplate.Parse([]byte(tpl))
	require.NoError(t, err)
	res := cfnschema.Check(parsed, registrySchemas(t))
	var flagged []string
	for _, p := range res.Problems {
		flagged = append(flagged, p.Resource)
		require.Contains(t, p.Error(), `"" is shorter than 12 characters`, p.Error())
	}
	require.ElementsMatch(t, []string{"Unguarded", "WrongBranch"}, flagged)
}
