package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/localstack"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// parse parses args as execute does, without running the verb they name,
// and returns its options (nil if none was chosen), the exit status and
// stderr. Nothing runs: no stack, no store.
func parse(t *testing.T, args ...string) (verb, int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	c := &cli{env: newTestOps(t).env, stdout: &out, stderr: &errOut}
	cmd, err := c.parse(args)
	return c.chosen, c.exit(cmd, err), errOut.String()
}

// local is a local stack's options as the flags leave them by default;
// starting, those of a stack that starts, which has a region too.
func local(name string) localstack.Options {
	return localstack.Options{Name: name, CacheDir: localstack.DefaultCacheDir()}
}

func starting(name string) localstack.Options {
	o := local(name)
	o.Region = "eu-west-1"
	return o
}

var defaultDeploy = deployFlags{Template: "template.yaml", StackName: "fifoworker"}

// TestOldSpellingsParseToTheSameOptions holds every invocation form in use
// before the CLI had a command library (its usage texts, README.md,
// docs/*.md, the Makefile, the tests and the messages that tell a user
// what to type): each still parses, to the options it meant. Flags keep
// the standard library's spellings too: -name as well as --name, a value
// after = or as the next argument, anywhere among the arguments.
func TestOldSpellingsParseToTheSameOptions(t *testing.T) {
	t.Parallel()
	rie := os.Getenv("RIE") == "1"
	jobsList := func(f func(*jobsListOptions)) *jobsListOptions {
		o := &jobsListOptions{Since: 24 * time.Hour, Limit: jobs.DefaultListLimit}
		if f != nil {
			f(o)
		}
		return o
	}
	queue := queueFlags{Queue: "commands"}
	sweep := func(f func(*sweepOptions)) *sweepOptions {
		o := &sweepOptions{Timeout: 2 * time.Minute, Settings: map[string]string{}}
		if f != nil {
			f(o)
		}
		return o
	}
	for _, tc := range []struct {
		args string
		want verb
	}{
		// the Makefile, README.md and docs/
		{"demo", &demoOptions{RIE: rie, Jobs: 300}},
		{"demo --rie", &demoOptions{RIE: true, Jobs: 300}},
		{"demo --jobs 20 -rie=false", &demoOptions{Jobs: 20}},
		{"demo --transport kafka", &demoOptions{RIE: rie, Jobs: 300, Transport: "kafka"}},
		{"demo --rie --transport kafka --name demo-k", &demoOptions{RIE: true, Jobs: 300, Transport: "kafka", Name: "demo-k"}},
		{"local up", &localUpOptions{Local: starting("dev")}},
		{"local up --name cold", &localUpOptions{Local: starting("cold")}},
		{"local up --name=s1 --region us-east-1 --sqs-port 9324 --dynamodb-port=8000 --s3-port 9000 --cache /tmp/c", &localUpOptions{
			Local: localstack.Options{Name: "s1", CacheDir: "/tmp/c", Region: "us-east-1", Ports: localstack.Ports{SQS: 9324, DynamoDB: 8000, S3: 9000}}}},
		{"local up -name cold", &localUpOptions{Local: starting("cold")}},
		{"local down", &localDownOptions{Local: local("dev")}},
		{"local down --name cold", &localDownOptions{Local: local("cold")}},
		{"local status", &localStatusOptions{Local: local("dev")}},
		{"local env --name s1", &localEnvOptions{Local: local("s1")}},
		{"local deploy", &localDeployOptions{Local: local("dev"), Deploy: defaultDeploy}},
		{"local deploy --name serve", &localDeployOptions{Local: local("serve"), Deploy: defaultDeploy}},
		{"local deploy --name s1 --template t.yaml --stack-name fw", &localDeployOptions{Local: local("s1"), Deploy: deployFlags{Template: "t.yaml", StackName: "fw"}}},
		{"local run --name test-42 -- go test -race -tags integration ./...", &localRunOptions{Local: starting("test-42"), Deploy: defaultDeploy,
			Command: []string{"go", "test", "-race", "-tags", "integration", "./..."}}},
		{"local run --name bench-42-1 -- make --no-print-directory bench-round", &localRunOptions{Local: starting("bench-42-1"), Deploy: defaultDeploy,
			Command: []string{"make", "--no-print-directory", "bench-round"}}},
		{"local run --name x --template ../../template.yaml -- sh -c exit", &localRunOptions{Local: starting("x"), Deploy: deployFlags{Template: "../../template.yaml", StackName: "fifoworker"},
			Command: []string{"sh", "-c", "exit"}}},
		// Without --, the command began at the first argument that is not a flag.
		{"local run --name x go test -tags integration ./...", &localRunOptions{Local: starting("x"), Deploy: defaultDeploy,
			Command: []string{"go", "test", "-tags", "integration", "./..."}}},
		// A flag's value and a command's arguments are never rewritten.
		{"local run -name x sh -name y", &localRunOptions{Local: starting("x"), Deploy: defaultDeploy, Command: []string{"sh", "-name", "y"}}},
		{"local run --name x -- sh -json", &localRunOptions{Local: starting("x"), Deploy: defaultDeploy, Command: []string{"sh", "-json"}}},
		{"local serve", &localServeOptions{Local: starting("serve"), Deploy: defaultDeploy, Addr: "127.0.0.1:8080"}},
		{"local serve --worker-timeout 10 --template ../../template.yaml", &localServeOptions{Local: starting("serve"),
			Deploy: deployFlags{Template: "../../template.yaml", StackName: "fifoworker"}, Addr: "127.0.0.1:8080", WorkerTimeout: 10}},
		{"local serve --name s2 --addr 127.0.0.1:9090 --rie", &localServeOptions{Local: starting("s2"), Deploy: defaultDeploy, Addr: "127.0.0.1:9090", RIE: true}},

		// jobs
		{"jobs get JOB_ID", &jobsGetOptions{ID: "JOB_ID"}},
		{"jobs get --json job-1", &jobsGetOptions{jobsFlags: jobsFlags{JSON: true}, ID: "job-1"}},
		{"jobs get job-1 --json", &jobsGetOptions{jobsFlags: jobsFlags{JSON: true}, ID: "job-1"}},
		{"jobs get job-1 --stack s1 --table other", &jobsGetOptions{jobsFlags: jobsFlags{Stack: "s1", Table: "other"}, ID: "job-1"}},
		{"jobs get -json -table=other job-1", &jobsGetOptions{jobsFlags: jobsFlags{JSON: true, Table: "other"}, ID: "job-1"}},
		{"jobs get -- -job", &jobsGetOptions{ID: "-job"}},
		{"jobs list", jobsList(nil)},
		{"jobs list --tenant t-1 --limit 20", jobsList(func(o *jobsListOptions) { o.Tenant, o.Limit = "t-1", 20 })},
		{"jobs list --starting-token T", jobsList(func(o *jobsListOptions) { o.Token = "T" })},
		{"jobs list --json --all", jobsList(func(o *jobsListOptions) { o.JSON, o.All, o.Limit = true, true, jobs.MaxListLimit })},
		{"jobs list --json --all --limit 1", jobsList(func(o *jobsListOptions) { o.JSON, o.All, o.Limit = true, true, 1 })},
		{"jobs list --live --tenant t-1 --json", jobsList(func(o *jobsListOptions) { o.Live, o.Tenant, o.JSON, o.Since = true, "t-1", true, 0 })},
		{"jobs list --since 0", jobsList(func(o *jobsListOptions) { o.Since, o.SinceGiven = 0, true })},
		{"jobs list --since=59m58s -limit 4 --stack serve", jobsList(func(o *jobsListOptions) {
			o.Since, o.SinceGiven, o.Limit, o.Stack = 59*time.Minute+58*time.Second, true, 4, "serve"
		})},
		{"jobs cancel JOB_ID --tenant t-1", &jobsCancelOptions{ID: "JOB_ID", Tenant: "t-1"}},
		{"jobs cancel --json job-1 --tenant t-1", &jobsCancelOptions{jobsFlags: jobsFlags{JSON: true}, ID: "job-1", Tenant: "t-1"}},
		{"jobs cancel job-1 -tenant t-1 --reason -json", &jobsCancelOptions{ID: "job-1", Tenant: "t-1", Reason: "-json"}},
		{"jobs cancel job-1 --tenant t-1 --table fw --reason ops", &jobsCancelOptions{jobsFlags: jobsFlags{Table: "fw"}, ID: "job-1", Tenant: "t-1", Reason: "ops"}},

		// quarantine
		{"quarantine list", &quarantineListOptions{queueFlags: queue}},
		{"quarantine list --queue events --json", &quarantineListOptions{queueFlags: queueFlags{Queue: "events", JSON: true}}},
		{"quarantine list --queue-url http://q/fw-commands.fifo --table qt --bucket b --stack s1", &quarantineListOptions{
			queueFlags: queueFlags{Queue: "commands", QueueURL: "http://q/fw-commands.fifo", Table: "qt", Bucket: "b", Stack: "s1"}}},
		{"quarantine show GROUP", &quarantineShowOptions{queueFlags: queue, Group: "GROUP"}},
		{"quarantine show g1 --json --all", &quarantineShowOptions{queueFlags: queueFlags{Queue: "commands", JSON: true}, Group: "g1", All: true}},
		{"quarantine show -- -g1", &quarantineShowOptions{queueFlags: queue, Group: "-g1"}},
		{"quarantine redrive GROUP", &quarantineRedriveOptions{queueFlags: queue, Group: "GROUP", Timeout: 5 * time.Minute}},
		{"quarantine redrive g1 --no-wait", &quarantineRedriveOptions{queueFlags: queue, Group: "g1", NoWait: true, Timeout: 5 * time.Minute}},
		{"quarantine redrive g1 --timeout 20ms --json", &quarantineRedriveOptions{queueFlags: queueFlags{Queue: "commands", JSON: true}, Group: "g1", Timeout: 20 * time.Millisecond}},
		{"quarantine discard GROUP", &quarantineDiscardOptions{queueFlags: queue, Group: "GROUP"}},
		{"quarantine discard --yes --json g1", &quarantineDiscardOptions{queueFlags: queueFlags{Queue: "commands", JSON: true}, Group: "g1", Yes: true}},
		{"quarantine discard g1 --seq 1001", &quarantineDiscardOptions{queueFlags: queue, Group: "g1", Seq: "1001"}},

		// sweep
		{"sweep", sweep(nil)},
		{"sweep --dry-run", sweep(func(o *sweepOptions) { o.DryRun = true })},
		{"sweep --dry-run --stack s1", sweep(func(o *sweepOptions) { o.DryRun, o.Stack = true, "s1" })},
		{"sweep --json -v --timeout 1m", sweep(func(o *sweepOptions) { o.JSON, o.Verbose, o.Timeout = true, true, time.Minute })},
		{"sweep --v", sweep(func(o *sweepOptions) { o.Verbose = true })},
		{"sweep --jobs-table j --views-table v --totals-table t --bucket b", sweep(func(o *sweepOptions) {
			o.JobsTable, o.ViewsTable, o.TotalsTable, o.Bucket = "j", "v", "t", "b"
		})},
		{"sweep --grace 90s --stuck-after 2m --repair-after 1h --recheck-after 48h --repair-budget 0 --max-items 10 --max-generations 2", sweep(func(o *sweepOptions) {
			o.Settings = map[string]string{"SWEEP_GRACE": "1m30s", "SWEEP_STUCK_AFTER": "2m0s", "SWEEP_REPAIR_AFTER": "1h0m0s", "SWEEP_RECHECK_AFTER": "48h0m0s",
				"SWEEP_REPAIR_BUDGET": "0s", "SWEEP_MAX_ITEMS": "10", "MAX_GENERATIONS": "2"}
		})},
	} {
		got, code, errOut := parse(t, strings.Fields(tc.args)...)
		require.Equal(t, 0, code, "%s: %s", tc.args, errOut)
		require.Equal(t, tc.want, got, tc.args)
		require.Empty(t, errOut, tc.args)
	}
}

// TestFlagsAVerbNoLongerTakesAreIgnoredAndSaySo: before each verb had its
// own flags, every verb of local, and of quarantine, took the flags of all
// (quarantine checked only --seq): a script may pass one. It still parses,
// is hidden from the verb's help, and the verb says on stderr that it
// ignores it.
func TestFlagsAVerbNoLongerTakesAreIgnoredAndSaySo(t *testing.T) {
	t.Parallel()
	queue := queueFlags{Queue: "commands"}
	for _, tc := range []struct {
		args    string
		want    verb
		ignored string
	}{
		{"local up --template t.yaml", &localUpOptions{Local: starting("dev")}, "--template"},
		{"local down --name x --region us-east-1", &localDownOptions{Local: local("x")}, "--region"},
		{"local status --stack-name fw", &localStatusOptions{Local: local("dev")}, "--stack-name"},
		{"local env --sqs-port 1", &localEnvOptions{Local: local("dev")}, "--sqs-port"},
		{"local deploy --s3-port 1", &localDeployOptions{Local: local("dev"), Deploy: defaultDeploy}, "--s3-port"},
		{"quarantine show g1 --yes", &quarantineShowOptions{queueFlags: queue, Group: "g1"}, "--yes"},
		{"quarantine redrive g1 --yes", &quarantineRedriveOptions{queueFlags: queue, Group: "g1", Timeout: 5 * time.Minute}, "--yes"},
		{"quarantine list --all", &quarantineListOptions{queueFlags: queue}, "--all"},
		{"quarantine discard g1 --no-wait --timeout 1s", &quarantineDiscardOptions{queueFlags: queue, Group: "g1"}, "--no-wait"},
	} {
		got, code, errOut := parse(t, strings.Fields(tc.args)...)
		require.Equal(t, 0, code, "%s: %s", tc.args, errOut)
		require.Equal(t, tc.want, got, tc.args)
		path := strings.Join(strings.Fields(tc.args)[:2], " ")
		require.Contains(t, errOut, "fifoworker "+path+": "+tc.ignored+" is not "+strings.Fields(tc.args)[1]+"'s: ignored", tc.args)

		var help, errHelp bytes.Buffer
		require.Equal(t, 0, run(append(strings.Fields(path), "--help"), &help, &errHelp))
		require.NotContains(t, help.String(), tc.ignored+" ", "%s: hidden from the help", tc.args)
	}
	// A flag no verb of the group ever took is still an error.
	_, code, errOut := parse(t, "quarantine", "show", "g1", "--seq", "1")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "unknown flag: --seq")
	require.Contains(t, errOut, "quarantine discard", "it names the verb that has the flag")
}
