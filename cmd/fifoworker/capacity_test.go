package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
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
	require.Regexp(t, `(?m)^1 +250 +ours +a tenant's total item`, stdout)
	require.Regexp(t, `(?m)^2 +500 +aws-adjustable +Totals table: a new on-demand table's initial throughput`, stdout)
	require.Contains(t, stdout, "per tenant: 250 jobs/s")
	require.Regexp(t, `worker MaximumConcurrency +20 +parameter WorkerMaxConcurrency's default`, stdout)
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
