//go:build integration

package localesm_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/localesm"
)

// findRIE finds aws-lambda-rie: the file FIFOWORKER_RIE names, else
// aws-lambda-rie on PATH.
func findRIE(getenv func(string) string) (string, error) {
	if p := getenv("FIFOWORKER_RIE"); p != "" {
		info, err := os.Stat(p)
		if err != nil {
			return "", fmt.Errorf("FIFOWORKER_RIE=%s: %w", p, err)
		}
		if info.IsDir() {
			return "", fmt.Errorf("FIFOWORKER_RIE=%s is a directory", p)
		}
		return p, nil
	}
	p, err := exec.LookPath("aws-lambda-rie")
	if err != nil {
		return "", fmt.Errorf("aws-lambda-rie is not on PATH and FIFOWORKER_RIE is not set: %w", err)
	}
	return p, nil
}

// rieBinary fails the test when the emulator cannot be found: a missing
// emulator must not pass as a skip.
func rieBinary(t *testing.T) string {
	t.Helper()
	p, err := findRIE(os.Getenv)
	if err != nil {
		t.Fatalf("the Lambda runtime interface emulator is needed: %v. Set FIFOWORKER_RIE to the aws-lambda-rie binary or put it on PATH "+
			"(go install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@v0.0.0-20261030222936-bef5c4ba774d)", err)
	}
	return p
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

// startRIE builds the test bootstrap and runs it under the emulator on free
// loopback ports. It returns the emulator's invocation address and the file
// the bootstrap logs its records to. The emulator runs in its own process
// group with the bootstrap it starts; when the test ends the group is sent
// SIGTERM (the emulator stops its runtime on TERM) and, if it has not
// exited within 5s, SIGKILL, so that no bootstrap outlives the test.
func startRIE(t *testing.T, functionTimeout time.Duration) (addr, recordLog string) {
	t.Helper()
	return startRIEWith(t, functionTimeout, "./testdata/testbootstrap")
}

// startRIEWith is startRIE for the bootstrap built from pkg.
func startRIEWith(t *testing.T, functionTimeout time.Duration, pkg string) (addr, recordLog string) {
	t.Helper()
	rie := rieBinary(t)
	dir := t.TempDir()
	bootstrap := filepath.Join(dir, "bootstrap")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bootstrap, pkg)
	out, err := build.CombinedOutput()
	require.NoError(t, err, "build the test bootstrap: %s", out)

	recordLog = filepath.Join(dir, "records.jsonl")
	output, err := os.Create(filepath.Join(dir, "rie.log"))
	require.NoError(t, err)
	addr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd := exec.Command(rie,
		"--runtime-api-address", fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		"--runtime-interface-emulator-address", addr,
		bootstrap)
	cmd.Env = append(os.Environ(),
		"AWS_LAMBDA_FUNCTION_TIMEOUT="+strconv.Itoa(int(functionTimeout/time.Second)),
		"TESTBOOTSTRAP_LOG="+recordLog)
	cmd.Stdout, cmd.Stderr = output, output
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	pgid := cmd.Process.Pid // Setpgid: the emulator leads its own group
	t.Cleanup(func() {
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var exit error // a TERM exit status is expected; it matters only to explain a failure
		select {
		case exit = <-done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-pgid, syscall.SIGKILL) // the emulator and its bootstrap
			exit = <-done
		}
		// A bootstrap the emulator did not stop before it exited is still in
		// the group: it must not outlive the test.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		_ = output.Close()
		if t.Failed() {
			if b, err := os.ReadFile(output.Name()); err == nil {
				t.Logf("aws-lambda-rie (exit: %v) output:\n%s", exit, b)
			}
		}
	})
	eventually(t, 10*time.Second, "aws-lambda-rie to listen on "+addr, func() bool {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err != nil {
			return false
		}
		_ = c.Close()
		return true
	})
	return addr, recordLog
}

// TestRIESmoke drives a real bootstrap under aws-lambda-rie from a FIFO
// queue: success, partial failure, function error and timeout, with the
// failures redriven to the dead-letter queue.
func TestRIESmoke(t *testing.T) {
	t.Parallel()
	const timeout = 2 * time.Second
	addr, recordLog := startRIE(t, timeout)
	client := awstest.SQS(t)
	// A visibility timeout longer than the function timeout: a timed-out
	// invocation has ended before its message is received again.
	q := newQueue(t, client, queueSpec{fifo: true, visibility: 4, maxReceive: 2})
	ids := map[string]string{}
	for _, body := range []string{"ok", "fail", "error", "sleep"} {
		ids[body] = send(t, client, q.url, "job-"+body, body)
	}

	var mu sync.Mutex
	outcomes := map[string][]localesm.Outcome{}
	deleted := map[string]bool{}
	onBatch := func(r localesm.SQSBatchResult) {
		mu.Lock()
		defer mu.Unlock()
		for _, rec := range r.Records {
			outcomes[rec.Body] = append(outcomes[rec.Body], r.Outcome)
		}
		for _, id := range r.Deleted {
			deleted[id] = true
		}
	}
	rie, err := localesm.NewRIE(localesm.RIEConfig{Addr: addr})
	require.NoError(t, err)
	m, err := localesm.NewSQSMapping(localesm.SQSConfig{Client: client, Invoker: rie,
		QueueURL: q.url, BatchSize: 1, MaximumConcurrency: 2, ReportBatchItemFailures: true,
		FunctionTimeout: timeout, OnBatch: onBatch,
	})
	require.NoError(t, err)
	require.Equal(t, 1, m.Concurrency(), "one invocation at a time, as the emulator runs them")
	stop := start(t, m.Run)

	dead := receiveN(t, client, q.dlqURL, 3, 45*time.Second)
	var deadBodies []string
	for _, d := range dead {
		deadBodies = append(deadBodies, aws.ToString(d.Body))
	}
	require.ElementsMatch(t, []string{"fail", "error", "sleep"}, deadBodies)
	eventually(t, 5*time.Second, "the source queue to empty", func() bool { return queueEmpty(t, client, q.url) })
	eventually(t, 5*time.Second, "every invocation to be settled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(outcomes["ok"])+len(outcomes["fail"])+len(outcomes["error"])+len(outcomes["sleep"]) == 7
	})
	stop()

	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []localesm.Outcome{localesm.OutcomeSuccess}, outcomes["ok"])
	require.True(t, deleted[ids["ok"]])
	require.Equal(t, []localesm.Outcome{localesm.OutcomePartialFailure, localesm.OutcomePartialFailure}, outcomes["fail"])
	require.Equal(t, []localesm.Outcome{localesm.OutcomeFunctionError, localesm.OutcomeFunctionError}, outcomes["error"])
	require.Equal(t, []localesm.Outcome{localesm.OutcomeTimeout, localesm.OutcomeTimeout}, outcomes["sleep"])
	for _, body := range []string{"fail", "error", "sleep"} {
		require.False(t, deleted[ids[body]], "%s was deleted", body)
	}

	// What the function received over the emulator is Lambda's event.
	f, err := os.Open(recordLog)
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	requestIDs := map[string]bool{}
	var bodies []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var line struct {
			RequestID string            `json:"aws_request_id"`
			Record    events.SQSMessage `json:"record"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line))
		rec := line.Record
		bodies = append(bodies, rec.Body)
		require.NotEmpty(t, line.RequestID)
		requestIDs[line.RequestID] = true
		require.Equal(t, ids[rec.Body], rec.MessageId)
		require.Equal(t, "aws:sqs", rec.EventSource)
		require.Equal(t, q.arn, rec.EventSourceARN)
		require.Equal(t, "job-"+rec.Body, rec.Attributes["MessageGroupId"])
		require.NotEmpty(t, rec.Attributes["SequenceNumber"])
		require.NotEmpty(t, rec.Attributes["ApproximateReceiveCount"])
		require.NotEmpty(t, rec.ReceiptHandle)
		require.Equal(t, t.Name(), aws.ToString(rec.MessageAttributes["sent_by"].StringValue))
	}
	require.NoError(t, sc.Err())
	require.Len(t, bodies, 7, "ok once, each failure twice")
	require.Len(t, requestIDs, 7, "one request id per invocation")
	for _, body := range []string{"ok", "fail", "error", "sleep"} {
		require.True(t, slices.Contains(bodies, body), "the bootstrap never got %s", body)
	}
}

// TestRIEResponseSizeLimitUnderTheEmulator: under the real emulator, a response of
// MaxResponseSize bytes arrives whole, and a longer one fails the
// invocation with Function.ResponseSizeTooLarge, never as a response cut
// short.
func TestRIEResponseSizeLimitUnderTheEmulator(t *testing.T) {
	t.Parallel()
	const timeout = 10 * time.Second
	addr, _ := startRIE(t, timeout)
	rie, err := localesm.NewRIE(localesm.RIEConfig{Addr: addr})
	require.NoError(t, err)
	invoke := func(size int) localesm.Result {
		payload, err := json.Marshal(events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m", Body: fmt.Sprint("size:", size)}}})
		require.NoError(t, err)
		res, err := rie.Invoke(t.Context(), localesm.Invocation{RequestID: "r", Timeout: timeout, Payload: payload})
		require.NoError(t, err)
		return res
	}

	res := invoke(localesm.MaxResponseSize)
	require.Equal(t, localesm.StatusOK, res.Status, "%.200s", res.Payload)
	require.Equal(t, localesm.MaxResponseSize, len(res.Payload), "a response within the limit arrives whole")

	for _, size := range []int{localesm.MaxResponseSize + 1, 7_000_000} {
		res := invoke(size)
		require.Equal(t, localesm.StatusFunctionError, res.Status, "size %d: got %d bytes: %.200s", size, len(res.Payload), res.Payload)
		var doc struct {
			ErrorType    string `json:"errorType"`
			ErrorMessage string `json:"errorMessage"`
		}
		require.NoError(t, json.Unmarshal(res.Payload, &doc), "%.200s", res.Payload)
		require.Equal(t, "Function.ResponseSizeTooLarge", doc.ErrorType, "size %d", size)
		require.Contains(t, doc.ErrorMessage, "6291556 bytes", "size %d: the message names the limit", size)
	}
}

func TestFindRIE(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "FIFOWORKER_RIE" {
				return v
			}
			return ""
		}
	}
	_, err := findRIE(env(filepath.Join(dir, "no-such-rie")))
	require.Error(t, err, "a missing emulator is an error, never a skip")
	_, err = findRIE(env(dir))
	require.Error(t, err, "a directory is not the emulator")
	bin := filepath.Join(dir, "aws-lambda-rie")
	require.NoError(t, os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755))
	got, err := findRIE(env(bin))
	require.NoError(t, err)
	require.Equal(t, bin, got)
}
