package localstack

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestEnvPointsEveryServiceAtTheStack(t *testing.T) {
	t.Parallel()
	s := &State{Name: "dev", Region: "eu-west-1", SQS: "http://127.0.0.1:1", DynamoDB: "http://127.0.0.1:2", S3: "http://127.0.0.1:3",
		Kafka: "127.0.0.1:4", RIE: "/x/rie"}
	env := s.Env()
	require.Contains(t, env, "KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:4")
	require.Contains(t, s.Shell(), "export KAFKA_BOOTSTRAP_SERVERS='127.0.0.1:4'\n")
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
	require.NotContains(t, strings.Join(ext.Env(), "\n"), "KAFKA_BOOTSTRAP_SERVERS", "no broker was started")
	ext.Kafka = "127.0.0.1:5"
	require.Contains(t, ext.Env(), "KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:5", "the broker is ours beside an external endpoint too")
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
	_, err = choosePorts(Ports{DynamoDB: port}, services)
	require.ErrorContains(t, err, "port "+strconv.Itoa(port)+" for dynamodb is in use")
	_, err = choosePorts(Ports{Kafka: port}, services)
	require.ErrorContains(t, err, "port "+strconv.Itoa(port)+" for kafka is in use")

	got, err := choosePorts(Ports{}, services)
	require.NoError(t, err)
	seen := map[int]bool{}
	for _, p := range []int{got.SQS, got.DynamoDB, got.S3, got.Kafka} {
		require.NotZero(t, p)
		require.False(t, seen[p], "ports differ: %+v", got)
		seen[p] = true
	}
	_, err = choosePorts(Ports{SQS: got.SQS, Kafka: got.SQS}, services)
	require.ErrorContains(t, err, "ports must differ")

	// Beside an external endpoint only the broker starts: the other ports,
	// LocalStack's own say, are neither checked nor chosen.
	only, err := choosePorts(Ports{SQS: port, Kafka: got.Kafka}, []string{"kafka"})
	require.NoError(t, err)
	require.Equal(t, Ports{SQS: port, Kafka: got.Kafka}, only)
}

// A test binary run as `local kafka-broker` would run its tests: Up
// refuses to default to it, before it installs or starts anything, and a
// broker program that is not an executable file is refused as early.
func TestUpNeedsAFifoworkerBinaryForTheBroker(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	_, err := Up(context.Background(), Options{Name: "broker", CacheDir: cache})
	require.ErrorContains(t, err, "test binary")
	require.ErrorContains(t, err, "Options.Broker")
	notExecutable := filepath.Join(t.TempDir(), "fifoworker")
	require.NoError(t, os.WriteFile(notExecutable, []byte("#!/bin/sh\n"), 0o644))
	for _, bad := range []string{filepath.Join(t.TempDir(), "missing"), t.TempDir(), notExecutable} {
		_, err = Up(context.Background(), Options{Name: "broker", CacheDir: cache, Broker: bad})
		require.ErrorContains(t, err, bad+" is not an executable file")
	}
	entries, err := os.ReadDir(cache)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing was installed or recorded")
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
