package samtemplate_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// The libraries that own a table say its shape (jobs.Table,
// quarantine.Table): their integration tests create their tables from it,
// and a user deploying a library reads it there. template.yaml's tables
// must be exactly that shape (billing, attributes, key, indexes with their
// projections, stream, time to live), so that the libraries' tests and the
// deployed service cannot drift apart. What the shape leaves to a
// deployment (encryption, recovery, deletion protection, retention) is not
// compared.
func TestTemplateTablesAreTheLibrariesShapes(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	for _, c := range []struct {
		logical string
		library *dynamodb.CreateTableInput
		ttl     string
	}{
		{"JobsTable", jobs.Table("jobs"), jobs.AttrExpiresAt},
		{"QuarantineTable", quarantine.Table("quarantine"), quarantine.AttrExpiresAt},
	} {
		t.Run(c.logical, func(t *testing.T) {
			t.Parallel()
			rsc, ok := tpl.Resources[c.logical]
			require.True(t, ok, "template.yaml has no %s", c.logical)
			require.Equal(t, libraryShape(c.library, c.ttl), templateShape(t, rsc.Properties))
		})
	}
}

// TestTableShapesDifferWhereTheyDiffer shows the comparison can fail: a
// shape with an index's projection, a key's order, the stream or the time
// to live changed is another shape.
func TestTableShapesDifferWhereTheyDiffer(t *testing.T) {
	t.Parallel()
	want := libraryShape(jobs.Table("jobs"), jobs.AttrExpiresAt)
	for name, change := range map[string]func(in *dynamodb.CreateTableInput) string{
		"projection": func(in *dynamodb.CreateTableInput) string {
			in.GlobalSecondaryIndexes[1].Projection.ProjectionType = ddbtypes.ProjectionTypeAll
			return jobs.AttrExpiresAt
		},
		"key order": func(in *dynamodb.CreateTableInput) string {
			ks := in.GlobalSecondaryIndexes[0].KeySchema
			ks[0].AttributeName, ks[1].AttributeName = ks[1].AttributeName, ks[0].AttributeName
			return jobs.AttrExpiresAt
		},
		"stream": func(in *dynamodb.CreateTableInput) string {
			in.StreamSpecification.StreamViewType = ddbtypes.StreamViewTypeNewImage
			return jobs.AttrExpiresAt
		},
		"no stream": func(in *dynamodb.CreateTableInput) string {
			in.StreamSpecification = nil
			return jobs.AttrExpiresAt
		},
		"attribute type": func(in *dynamodb.CreateTableInput) string {
			in.AttributeDefinitions[2].AttributeType = ddbtypes.ScalarAttributeTypeS
			return jobs.AttrExpiresAt
		},
		"no time to live": func(*dynamodb.CreateTableInput) string { return "" },
	} {
		in := jobs.Table("jobs")
		ttl := change(in)
		require.NotEqual(t, want, libraryShape(in, ttl), name)
	}
}

// libraryShape is a table's shape as lines to compare: order matters in a
// key schema, not among attributes or indexes.
func libraryShape(in *dynamodb.CreateTableInput, ttl string) []string {
	shape := []string{"billing " + string(in.BillingMode), "key " + keyLine(in.KeySchema), "ttl " + ttl}
	for _, a := range in.AttributeDefinitions {
		shape = append(shape, fmt.Sprintf("attribute %s %s", aws.ToString(a.AttributeName), a.AttributeType))
	}
	for _, g := range in.GlobalSecondaryIndexes {
		shape = append(shape, fmt.Sprintf("index %s: %s; %s %v", aws.ToString(g.IndexName), keyLine(g.KeySchema),
			g.Projection.ProjectionType, g.Projection.NonKeyAttributes))
	}
	stream := "none"
	if s := in.StreamSpecification; s != nil && aws.ToBool(s.StreamEnabled) {
		stream = string(s.StreamViewType)
	}
	shape = append(shape, "stream "+stream)
	if len(in.LocalSecondaryIndexes) > 0 {
		shape = append(shape, "local secondary indexes") // the libraries' tables have none
	}
	slices.Sort(shape)
	return shape
}

func keyLine(ks []ddbtypes.KeySchemaElement) string {
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = aws.ToString(k.AttributeName) + " " + string(k.KeyType)
	}
	return strings.Join(parts, ", ")
}

// templateShape reads a table's properties into the SDK's CreateTableInput
// (the two spell every compared field the same, but for the stream's
// StreamEnabled, which CloudFormation implies) and returns its shape.
func templateShape(t *testing.T, props map[string]any) []string {
	t.Helper()
	var p struct {
		BillingMode             string
		AttributeDefinitions    []struct{ AttributeName, AttributeType string }
		KeySchema               []struct{ AttributeName, KeyType string }
		GlobalSecondaryIndexes  []json.RawMessage
		LocalSecondaryIndexes   []json.RawMessage
		StreamSpecification     *struct{ StreamViewType string }
		TimeToLiveSpecification *struct {
			AttributeName string
			Enabled       bool
		}
	}
	raw, err := json.Marshal(props)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &p))
	in := &dynamodb.CreateTableInput{BillingMode: ddbtypes.BillingMode(p.BillingMode)}
	for _, a := range p.AttributeDefinitions {
		in.AttributeDefinitions = append(in.AttributeDefinitions, ddbtypes.AttributeDefinition{
			AttributeName: aws.String(a.AttributeName), AttributeType: ddbtypes.ScalarAttributeType(a.AttributeType)})
	}
	in.KeySchema = templateKeys(p.KeySchema)
	for _, g := range p.GlobalSecondaryIndexes {
		var idx struct {
			IndexName  string
			KeySchema  []struct{ AttributeName, KeyType string }
			Projection struct {
				ProjectionType   string
				NonKeyAttributes []string
			}
		}
		require.NoError(t, json.Unmarshal(g, &idx))
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, ddbtypes.GlobalSecondaryIndex{
			IndexName: aws.String(idx.IndexName), KeySchema: templateKeys(idx.KeySchema),
			Projection: &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionType(idx.Projection.ProjectionType), NonKeyAttributes: idx.Projection.NonKeyAttributes},
		})
	}
	for range p.LocalSecondaryIndexes {
		in.LocalSecondaryIndexes = append(in.LocalSecondaryIndexes, ddbtypes.LocalSecondaryIndex{})
	}
	if p.StreamSpecification != nil {
		in.StreamSpecification = &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewType(p.StreamSpecification.StreamViewType)}
	}
	ttl := ""
	if s := p.TimeToLiveSpecification; s != nil && s.Enabled {
		ttl = s.AttributeName
	}
	return libraryShape(in, ttl)
}

func templateKeys(ks []struct{ AttributeName, KeyType string }) []ddbtypes.KeySchemaElement {
	out := make([]ddbtypes.KeySchemaElement, len(ks))
	for i, k := range ks {
		out[i] = ddbtypes.KeySchemaElement{AttributeName: aws.String(k.AttributeName), KeyType: ddbtypes.KeyType(k.KeyType)}
	}
	return out
}
