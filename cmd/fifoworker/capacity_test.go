package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

var updateCapacity = flag.Bool("update-capacity", false, "rewrite testdata/capacity-*.json from `fifoworker capacity --json`")

func runCapacity(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(append([]string{"capacity", "--template", "../../template.yaml"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// --json prints the plan as scripts read it; the golden files hold
// template.yaml's defaults with the committed request counts, at 1,000
// and 100,000 groups (go test ./cmd/fifoworker -run Capacity -args
// -update-capacity rewrites them).
func TestCapacityJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ golden, groups, tenants, region string }{
		{"capacity-1000-groups.json", "1000", "1", "us-east-1"},
		{"capacity-100000-groups-8-tenants-ap-south-2.json", "100000", "8", "ap-south-2"},
	} {
		code, stdout, stderr := runCapacity(t, "--groups", tc.groups, "--tenants", tc.tenants, "--region", tc.region, "--json")
		require.Equal(t, 0, code, stderr)
		require.Empty(t, stderr)
		file := filepath.Join("testdata", tc.golden)
		if *updateCapacity {
			require.NoError(t, os.WriteFile(file, []byte(stdout), 0o644))
			continue
		}
		want, err := os.ReadFile(file)
		require.NoError(t, err)
		require.Equal(t, string(want), stdout, "%s (-update-capacity rewrites it)", file)
	}
}

// The text form: the limits in binding order with their owners, the
// per-tenant figure, and where each setting was read.
func TestCapacityText(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runCapacity(t, "--groups", "1000")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "1000 groups, 1 tenants, us-east-1")
	require.Regexp(t, `(?m)^[0-9]+ +[0-9]+ +ours +a tenant's totals: [0-9]+ shards \(partition-key values\), each bound by DynamoDB writes per `+
		`(partition-key value|item).* +raise the parameter TotalsShards \(1 to 256\); chosen when the Totals table is created`, stdout)
	require.Regexp(t, `(?m)^1 +[0-9]+ +aws-adjustable +(Jobs|Totals) table: a new on-demand table's initial throughput`, stdout)
	require.Regexp(t, `(?m)^[0-9]+ +[0-9]+ +ours +the projector's MaximumConcurrency .* +raise the parameter ProjectorMaxConcurrency \(2 to 1000\)`, stdout)
	require.Regexp(t, `(?m)^per tenant: [0-9]+ jobs/s$`, stdout)
	require.Regexp(t, `totals shards per tenant +[0-9]+ +parameter TotalsShards's default`, stdout)
	require.Regexp(t, `worker MaximumConcurrency +200 +parameter WorkerMaxConcurrency's default`, stdout)
	require.Regexp(t, `worker MemorySize \(MB\) +[0-9]+ +(Globals' Function MemorySize|WorkerFunction's MemorySize)`, stdout)
	require.Contains(t, stdout, "cost of a million jobs at us-east-1 list prices (read 2026-12-02), USD:")
	require.Regexp(t, `(?m)^  s3 +S3 Standard PUT, COPY, POST, LIST requests +1000000 requests +× 0\.005 per 1000 += +5\.0000$`, stdout)
	require.Regexp(t, `(?m)^by service: lambda [0-9.]+, dynamodb [0-9.]+, sqs [0-9.]+, s3 5\.0000, api-gateway 1\.0000\ntotal: [0-9]+\.[0-9]{4}$`, stdout)
	require.Contains(t, stdout, "measured at 512 MB on the local emulators")
}

// The cost's JSON: a line per priced item, by service and in all, and the
// day the prices were read; in a region without prices, a note instead of
// the lines. The limits' fields are the same as before.
func TestCapacityJSONCost(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runCapacity(t, "--json")
	require.Equal(t, 0, code, stderr)
	var got struct {
		Limits []map[string]any `json:"limits"`
		Cost   struct {
			Region    string             `json:"region"`
			Lines     []map[string]any   `json:"lines"`
			ByService map[string]float64 `json:"by_service"`
			TotalUSD  float64            `json:"total_usd"`
			Note      string             `json:"note"`
		} `json:"cost_per_million_jobs"`
		AsOf string `json:"prices_as_of"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &got))
	require.Equal(t, "2026-12-02", got.AsOf)
	require.Equal(t, "us-east-1", got.Cost.Region)
	require.Empty(t, got.Cost.Note)
	require.Len(t, got.Cost.Lines, 8)
	require.ElementsMatch(t, []string{"lambda", "dynamodb", "sqs", "s3", "api-gateway"}, slices.Collect(maps.Keys(got.Cost.ByService)))
	sum := 0.0
	for _, v := range got.Cost.ByService {
		sum += v
	}
	require.InDelta(t, got.Cost.TotalUSD, sum, 0.001)
	require.Len(t, got.Limits[0], 4, "a limit's fields are name, owner, jobs_per_s, raise")

	code, stdout, stderr = runCapacity(t, "--json", "--region", "eu-west-1")
	require.Equal(t, 0, code, stderr)
	var other struct {
		Cost map[string]any `json:"cost_per_million_jobs"`
		AsOf string         `json:"prices_as_of"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &other))
	require.Equal(t, "2026-12-02", other.AsOf)
	require.Equal(t, "eu-west-1", other.Cost["region"])
	require.Contains(t, other.Cost["note"], "the price table has us-east-1 only")
	require.Len(t, other.Cost, 2, "no lines nor total in a region without prices: %v", other.Cost)
}

// Bad input is a usage error (exit 2) that names it; the bounds (1 group,
// 1 tenant) are fine; a template that cannot be read is a failure (1).
func TestCapacityRefusesBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--groups", "0"}, 2, "groups 0: at least 1"},
		{[]string{"--tenants", "0"}, 2, "tenants 0: at least 1"},
		{[]string{"--tenants", "-1"}, 2, "tenants -1: at least 1"},
		{[]string{"--region", "us-east-9"}, 2, `region "us-east-9": not an AWS commercial region the model knows`},
		{[]string{"--groups", "many"}, 2, `invalid argument "many" for "--groups"`},
		{[]string{"--template", "no-such.yaml"}, 1, "no-such.yaml"},
		{[]string{"extra"}, 2, `unexpected arguments ["extra"]`},
	} {
		code, stdout, stderr := runCapacity(t, tc.args...)
		require.Equal(t, tc.code, code, "%v: %s", tc.args, stderr)
		require.Contains(t, stderr, tc.want, "%v", tc.args)
		require.Empty(t, stdout, "%v", tc.args)
	}
	code, _, stderr := runCapacity(t, "--groups", "1", "--tenants", "1", "--json")
	require.Equal(t, 0, code, stderr)
}
