package localstack

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// writeStack records a stack as Up does (its state file) and writes its
// env file with env's lines.
func writeStack(t *testing.T, o Options, s *State, env []string) string {
	t.Helper()
	require.NoError(t, save(o, s))
	var text string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		text += ShellExport(k, v) + "\n"
	}
	path, err := EnvFile(o)
	require.NoError(t, err)
	require.NoError(t, WriteEnvFile(path, text))
	return path
}

// liveProcess is a process of this test's, recorded as a stack's emulator.
func liveProcess(t *testing.T) Process {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ticks, _, err := procStat(cmd.Process.Pid)
	require.NoError(t, err)
	return Process{Service: "sqs", PID: cmd.Process.Pid, Program: "sleep", StartTicks: ticks}
}

// TestReadStackEnvOnlyOfARunningStack: a stack's env file is read only
// while its stack runs and with the running stack's endpoints; a file left
// by a stack that was killed, or that another stack's endpoints replaced,
// is ErrStaleEnvFile, naming the file and how to remove it.
func TestReadStackEnvOnlyOfARunningStack(t *testing.T) {
	t.Parallel()
	o := Options{Name: "s1", CacheDir: t.TempDir()}
	s := &State{Name: "s1", Region: "eu-west-1", SQS: "http://127.0.0.1:4001", DynamoDB: "http://127.0.0.1:4002", S3: "http://127.0.0.1:4003"}

	t.Run("running", func(t *testing.T) {
		s := *s
		s.Processes = []Process{liveProcess(t)}
		o := o
		o.Name = "live"
		s.Name = "live"
		path := writeStack(t, o, &s, append(s.Env(), "FIFOWORKER_JOBS_TABLE_NAME=jobs"))
		vars, got, err := ReadStackEnv(o)
		require.NoError(t, err)
		require.Equal(t, path, got)
		require.Equal(t, "jobs", vars["FIFOWORKER_JOBS_TABLE_NAME"])
	})
	t.Run("its processes are gone", func(t *testing.T) {
		o := o
		o.Name = "dead"
		dead := *s
		dead.Name = "dead"
		p := liveProcess(t)
		p.StartTicks++ // the PID is another process now
		dead.Processes = []Process{p}
		path := writeStack(t, o, &dead, dead.Env())
		_, _, err := ReadStackEnv(o)
		require.ErrorIs(t, err, ErrStaleEnvFile)
		require.ErrorContains(t, err, path)
		require.ErrorContains(t, err, "fifoworker local down --name dead")
	})
	t.Run("no state", func(t *testing.T) {
		o := o
		o.Name = "gone"
		path, err := EnvFile(o)
		require.NoError(t, err)
		require.NoError(t, WriteEnvFile(path, ShellExport("AWS_ENDPOINT_URL_SQS", "http://127.0.0.1:4001")+"\n"))
		_, _, err = ReadStackEnv(o)
		require.ErrorIs(t, err, ErrStaleEnvFile)
		require.ErrorContains(t, err, "rm "+path)
	})
	for i, moved := range []struct {
		name, variable string
		move           func(*State)
	}{
		{"another stack's endpoints", "AWS_ENDPOINT_URL_DYNAMODB", func(s *State) { s.DynamoDB = "http://127.0.0.1:4999" }},
		{"another stack's broker", KafkaBootstrapVar, func(s *State) { s.Kafka = "127.0.0.1:4998" }},
		{"another stack's PostgreSQL", PostgresDSNVar, func(s *State) { s.Postgres = PostgresDSN(4997) }},
	} {
		t.Run(moved.name, func(t *testing.T) {
			o := o
			o.Name = fmt.Sprintf("moved-%d", i)
			now := *s
			now.Name = o.Name
			now.Kafka = "127.0.0.1:4004"
			now.Postgres = PostgresDSN(4005)
			now.Processes = []Process{liveProcess(t)}
			old := now
			moved.move(&old)
			path := writeStack(t, o, &now, old.Env())
			_, _, err := ReadStackEnv(o)
			require.ErrorIs(t, err, ErrStaleEnvFile)
			require.ErrorContains(t, err, moved.variable)
			require.ErrorContains(t, err, path)
		})
	}
	t.Run("an external endpoint whose broker is gone", func(t *testing.T) {
		o := o
		o.Name = "ext-dead"
		p := liveProcess(t)
		p.StartTicks++ // the PID is another process now
		ext := &State{Name: "ext-dead", Region: "eu-west-1", External: "http://127.0.0.1:4566", Kafka: "127.0.0.1:4004", Processes: []Process{p}}
		writeStack(t, o, ext, ext.Env())
		_, _, err := ReadStackEnv(o)
		require.ErrorIs(t, err, ErrStaleEnvFile)
	})
	t.Run("no env file", func(t *testing.T) {
		o := o
		o.Name = "none"
		_, _, err := ReadStackEnv(o)
		require.ErrorIs(t, err, os.ErrNotExist)
		require.NotErrorIs(t, err, ErrStaleEnvFile)
	})
	t.Run("an external endpoint", func(t *testing.T) {
		o := o
		o.Name = "ext"
		ext := &State{Name: "ext", Region: "eu-west-1", External: "http://127.0.0.1:4566"}
		writeStack(t, o, ext, ext.Env())
		_, _, err := ReadStackEnv(o)
		require.NoError(t, err, "no process of ours to check: its state is enough")
	})
}

// TestReadStackEnvInTheDefaultCache: with Options naming only the stack,
// as the CLI's --stack does, the state is looked for where Up wrote it.
// Not parallel: it sets FIFOWORKER_CACHE.
func TestReadStackEnvInTheDefaultCache(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("FIFOWORKER_CACHE", cache)
	s := &State{Name: "s1", Region: "eu-west-1", SQS: "http://127.0.0.1:4001", Processes: []Process{liveProcess(t)}}
	writeStack(t, Options{Name: "s1", CacheDir: cache}, s, s.Env())
	_, _, err := ReadStackEnv(Options{Name: "s1"})
	require.NoError(t, err)
}
