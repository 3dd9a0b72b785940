package localstack

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestEnvPointsEveryServiceAtTheStack(t *testing.T) {
	t.Parallel()
	s := &State{Name: "dev", Region: "eu-west-1", SQS: "http://127.0.0.1:1", DynamoDB: "http://127.0.0.1:2", S3: "http://127.0.0.1:3", RIE: "/x/rie"}
	env := s.Env()
	require.Contains(t, env, "AWS_ENDPOINT_URL_SQS=http://127.0.0.1:1")
	require.Contains(t, env, "AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:2")
	require.Contains(t, env, "AWS_ENDPOINT_URL_DYNAMODB_STREAMS=http://127.0.0.1:2")
	require.Contains(t, env, "AWS_ENDPOINT_URL_S3=http://127.0.0.1:3")
	require.Contains(t, env, "AWS_REGION=eu-west-1")
	require.Contains(t, env, "FIFOWORKER_RIE=/x/rie")
	require.Contains(t, env, "AWS_ACCESS_KEY_ID=test")

	ext := &State{Name: "ls", Region: "us-east-1", External: "http://127.0.0.1:4566", RIE: "/it's/rie"}
	require.Contains(t, ext.Env(), "AWS_ENDPOINT_URL=http://127.0.0.1:4566")
	require.NotContains(t, ext.Env(), "AWS_ACCESS_KEY_ID=test", "a real endpoint keeps the caller's credentials")
	require.Contains(t, ext.Shell(), `export FIFOWORKER_RIE='/it'\''s/rie'`)
}

func TestInvalidStackNamesAreRefused(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"../x", "A", "a b", "-x", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"} {
		_, err := Up(context.Background(), Options{Name: name, CacheDir: t.TempDir()})
		require.ErrorContains(t, err, "stack name", name)
	}
}

func TestAPortInUseIsAClearError(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = l.Close() }()
	port := l.Addr().(*net.TCPAddr).Port
	_, err = choosePorts(Ports{DynamoDB: port})
	require.ErrorContains(t, err, "port "+strconv.Itoa(port)+" for dynamodb is in use")

	got, err := choosePorts(Ports{})
	require.NoError(t, err)
	require.NotZero(t, got.SQS)
	require.NotEqual(t, got.SQS, got.S3)
}

func TestMissingJavaIsAClearError(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := findJava(context.Background())
	require.ErrorContains(t, err, "DynamoDB Local needs Java 17")
}

func TestAnEmulatorThatExitsEarlyFailsWithItsLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p, done, err := start(dir, "sqs", 1, "/bin/sh", []string{"-c", "echo cannot bind; exit 3"})
	require.NoError(t, err)
	s := &State{Region: "eu-west-1", SQS: "http://127.0.0.1:1", Processes: []Process{p}}
	o := Options{ReadyTimeout: 30 * time.Second}
	require.NoError(t, o.defaults())
	err = waitReady(context.Background(), o, s, map[string]<-chan error{"sqs": done})
	require.ErrorContains(t, err, "sqs exited before it was ready")
	require.ErrorContains(t, err, "cannot bind")
}

func TestAnEmulatorThatNeverAnswersTimesOut(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p, done, err := start(dir, "s3", 1, "/bin/sleep", []string{"30"})
	require.NoError(t, err)
	defer func() { _ = os.Remove(p.Log) }()
	o := Options{Name: "timeout", CacheDir: dir, ReadyTimeout: 500 * time.Millisecond}
	require.NoError(t, o.defaults())
	s := &State{Name: "timeout", Region: "eu-west-1", S3: "http://127.0.0.1:1", Processes: []Process{p}}
	require.NoError(t, save(o, s))
	err = waitReady(context.Background(), o, s, map[string]<-chan error{"s3": done})
	require.ErrorContains(t, err, "s3 did not answer")
	require.True(t, ours(p))
	require.NoError(t, Down(o))
	require.False(t, ours(p), "down stops the recorded process")
	_, err = os.Stat(filepath.Join(dir, "stacks", "timeout", "state.json"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestDownLeavesAReusedPIDAlone(t *testing.T) {
	t.Parallel()
	ticks, _, err := procStat(os.Getpid())
	require.NoError(t, err)
	me := Process{PID: os.Getpid(), Program: filepath.Base(os.Args[0]), StartTicks: ticks}
	require.True(t, ours(me), "the recorded process itself")
	sameProgramLater := me
	sameProgramLater.StartTicks++
	require.False(t, ours(sameProgramLater), "a PID reused by the same program, started later, is not ours")
	self := Process{PID: os.Getpid(), Program: "not-this-program", StartTicks: ticks}
	require.False(t, ours(self), "a PID that runs another program is not ours")
	o := Options{Name: "reused", CacheDir: t.TempDir()}
	require.NoError(t, o.defaults())
	require.NoError(t, save(o, &State{Name: "reused", Processes: []Process{self}}))
	require.NoError(t, Down(o)) // must not signal this test process
	require.NoError(t, Down(o), "stopping a stack that is not running is not an error")
}
