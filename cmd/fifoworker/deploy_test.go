package main

import (
	"bytes"
	"net"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/localstack"
)

// TestDeployKeepsTheEnvFileOfARunningServe: `local deploy` on the stack a
// `local serve` runs on keeps serve's env file (its tokens and
// FIFOWORKER_API_URL, which deploy does not know) and says so; once serve
// no longer listens, or for a file deploy wrote, it writes its own.
func TestDeployKeepsTheEnvFileOfARunningServe(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "env.sh")
	api, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	serves := localstack.ShellExport("FIFOWORKER_API_URL", "http://"+api.Addr().String()) + "\n" +
		localstack.ShellExport("TOKEN_T1", "tok") + "   # tenant t-1\n"
	require.NoError(t, localstack.WriteEnvFile(path, serves))
	deploys := localstack.ShellExport("FIFOWORKER_JOBS_TABLE_NAME", "jobs") + "\n"

	var stderr bytes.Buffer
	require.NoError(t, writeDeployEnv(path, deploys, "serve", &stderr))
	vars, err := localstack.ReadEnvFile(path)
	require.NoError(t, err)
	require.Equal(t, "tok", vars["TOKEN_T1"], "serve's file is kept")
	require.Contains(t, stderr.String(), path+" is the env file of the `local serve` running on stack serve")

	require.NoError(t, api.Close()) // serve is gone
	stderr.Reset()
	require.NoError(t, writeDeployEnv(path, deploys, "serve", &stderr))
	vars, err = localstack.ReadEnvFile(path)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"FIFOWORKER_JOBS_TABLE_NAME": "jobs"}, vars)
	require.NotContains(t, stderr.String(), "local serve")

	deploys2 := localstack.ShellExport("FIFOWORKER_JOBS_TABLE_NAME", "jobs2") + "\n"
	require.NoError(t, writeDeployEnv(path, deploys2, "serve", &stderr))
	vars, err = localstack.ReadEnvFile(path)
	require.NoError(t, err)
	require.Equal(t, "jobs2", vars["FIFOWORKER_JOBS_TABLE_NAME"], "deploy's own file is replaced")

	fresh := filepath.Join(t.TempDir(), "env.sh")
	require.NoError(t, writeDeployEnv(fresh, deploys, "s1", &stderr))
	vars, err = localstack.ReadEnvFile(fresh)
	require.NoError(t, err)
	require.Equal(t, "jobs", vars["FIFOWORKER_JOBS_TABLE_NAME"])
}
