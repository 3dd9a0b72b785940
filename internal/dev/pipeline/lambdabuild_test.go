package pipeline

import (
	"errors"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The local identity signs and verifies tokens with a key it makes itself;
// a deployed function must have no way to enable it. So the package that
// holds it, and the CLI (cobra, its command library, included), must not
// be among the packages of any function as the Lambda build builds it
// (BuildBootstraps' flags, linux/arm64 as template.yaml deploys). Moving
// Identity into a package a function imports (internal/app/intake,
// internal/lambdawire) fails this test.
func TestTheLambdaBuildCannotReachTheLocalIdentity(t *testing.T) {
	t.Parallel()
	module := "github.com/fifoworker/fifoworker"
	identityPkg := reflect.TypeFor[Identity]().PkgPath()
	require.Equal(t, module+"/internal/dev/pipeline", identityPkg)

	args := []string{"list", "-deps", "-tags", "lambda.norpc", "./functions/..."}
	cmd := exec.CommandContext(t.Context(), "go", args...)
	cmd.Dir = "../../.."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64")
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, exit.Stderr)
	}
	require.NoError(t, err)
	deps := strings.Fields(string(out))
	for _, fn := range Functions {
		require.Contains(t, deps, module+"/functions/"+fn, "the list is the functions' build")
	}
	require.Contains(t, deps, module+"/internal/lambdawire")
	require.Contains(t, deps, module+"/internal/app/intake")
	for _, dep := range deps {
		require.NotEqual(t, identityPkg, dep, "a function depends on the package of the local identity")
		require.False(t, strings.HasPrefix(dep, module+"/cmd/"), "a function depends on the CLI (%s)", dep)
		require.False(t, strings.HasPrefix(dep, "github.com/spf13/"), "a function depends on the CLI's command library (%s)", dep)
		require.NotEqual(t, module+"/internal/dev/demo", dep, "a function depends on the demo")
	}
}
