package cfnschema_test

import (
	"errors"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/cfnschema"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// goList runs go list in the repository's root and returns its output's
// fields.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", append([]string{"list"}, args...)...)
	cmd.Dir = "../../.."
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, exit.Stderr)
	}
	require.NoError(t, err)
	return strings.Fields(string(out))
}

// The schema validator is test-only code: the CLI, which reads the template
// through internal/dev/samtemplate, must not link it, nor the module whose
// files hold the registry schemas.
func TestTheCLIDoesNotLinkTheValidator(t *testing.T) {
	t.Parallel()
	validator := reflect.TypeFor[cfnschema.Result]().PkgPath()
	reader := reflect.TypeFor[samtemplate.Template]().PkgPath()
	deps := goList(t, "-deps", "./cmd/...")
	require.True(t, slices.Contains(deps, reader), "the list is the CLI's build: it reads the template")
	for _, dep := range deps {
		require.NotEqual(t, validator, dep, "the CLI links the schema validator")
		require.False(t, strings.HasPrefix(dep, rainModule), "the CLI links %s", dep)
	}
}

// Only tests import the validator: no package of the module, the CLI's or
// any other, links it into a build.
func TestOnlyTestsImportTheValidator(t *testing.T) {
	t.Parallel()
	validator := reflect.TypeFor[cfnschema.Result]().PkgPath()
	lines := goList(t, "-e", "-f", "{{.ImportPath}}:{{range .Imports}} {{.}}{{end}}", "./...")
	var pkgs int
	importer := ""
	for _, field := range lines {
		if pkg, ok := strings.CutSuffix(field, ":"); ok {
			pkgs++
			importer = pkg
			continue
		}
		require.NotEqual(t, validator, field, "%s imports the schema validator", importer)
	}
	require.Greater(t, pkgs, 20, "the list is every package of the module")
}
