package samtemplate_test

import (
	"testing"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// FuzzParse: any input gives a template or an error, never a panic, and a
// template always has typed resources.
func FuzzParse(f *testing.F) {
	f.Add([]byte("Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties:\n      A: !GetAtt D.Arn\n"))
	f.Add([]byte("Resources:\n  Q:\n    Type: X\n    Properties: {A: !Sub [\"${x}\", {x: !Ref Y}]}\n"))
	f.Add([]byte("a: &x [*x]\n"))
	f.Add([]byte("Resources: !Ref\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		tpl, err := samtemplate.Parse(in)
		if err != nil {
			return
		}
		for name, r := range tpl.Resources {
			if r.Type == "" || r.Properties == nil {
				t.Fatalf("resource %s parsed without a type or properties: %+v", name, r)
			}
		}
	})
}
