package testenv

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// TemplateTable creates the repository template.yaml's table logical (its
// keys, indexes, stream and TTL, as the local deployer reads them) through
// client, under a name unique to the test, deletes it when the test ends,
// and returns its name.
func TemplateTable(t testing.TB, client *dynamodb.Client, logical string) string {
	t.Helper()
	requireEndpoint(t, "DynamoDB")
	tpl, err := samtemplate.Load(repoFile(t, "template.yaml"))
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	only, err := tpl.Only(logical)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	clients := localdeploy.Clients{DynamoDB: client}
	deployed, err := localdeploy.Deploy(context.Background(), only, Name(t, strings.ToLower(logical)), Config(t).Region, clients)
	if err != nil {
		t.Fatalf("testenv: deploy %s: %v", logical, err)
	}
	t.Cleanup(func() {
		if err := localdeploy.Teardown(context.Background(), deployed, clients); err != nil {
			t.Errorf("testenv: tear down %s: %v", logical, err)
		}
	})
	name := deployed.Resources[logical]
	if name == "" {
		t.Fatalf("testenv: %s deployed without a name", logical)
	}
	return name
}

// repoFile is name at the repository's root: the first directory up from
// the test's that holds go.mod.
func repoFile(t testing.TB, name string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, name)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("testenv: no go.mod above the test's directory")
		}
		dir = parent
	}
}
