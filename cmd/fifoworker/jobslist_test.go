package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestJobsListStartingTokenGoesOnWhereThePageEnded: each page's token
// resumes right after its last job, in text and in JSON, until a page
// without one; the old spellings (--limit, --json's "more") keep working.
func TestJobsListStartingTokenGoesOnWhereThePageEnded(t *testing.T) {
	t.Parallel()
	o := listFixture(t)
	var got []string
	args := []string{"jobs", "list", "--json", "--limit", "1"}
	for range 10 {
		code, out, errOut := o.run(args...)
		require.Equal(t, 0, code, errOut)
		var page struct {
			Jobs  []jobJSON `json:"jobs"`
			More  bool      `json:"more"`
			Token string    `json:"next_token"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &page), out)
		for _, j := range page.Jobs {
			got = append(got, j.ID)
		}
		require.Equal(t, page.More, page.Token != "", out)
		if !page.More {
			break
		}
		args = []string{"jobs", "list", "--json", "--limit", "1", "--starting-token", page.Token}
	}
	require.Equal(t, []string{"job-a", "job-d", "job-b", "job-c"}, got)

	code, out, errOut := o.run("jobs", "list", "--limit", "3")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "(there may be more: raise --limit (now 3)")
	i := strings.Index(out, "next page: --starting-token ")
	require.GreaterOrEqual(t, i, 0, out)
	token := strings.TrimSpace(out[i+len("next page: --starting-token "):])
	code, out, errOut = o.run("jobs", "list", "--starting-token", token)
	require.Equal(t, 0, code, errOut)
	rows := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, rows, 2, out)
	require.Regexp(t, `^job-c\s+t-1\s+cancelled`, rows[1])
}

// TestJobsListAllStreamsNDJSON: --all --json writes every job, one JSON
// object a line, across pages of --limit.
func TestJobsListAllStreamsNDJSON(t *testing.T) {
	t.Parallel()
	o := listFixture(t)
	for _, args := range [][]string{
		{"jobs", "list", "--json", "--all"},
		{"jobs", "list", "--json", "--all", "--limit", "1"},
	} {
		code, out, errOut := o.run(args...)
		require.Equal(t, 0, code, errOut)
		var ids []string
		for line := range strings.Lines(out) {
			var j jobJSON
			require.NoError(t, json.Unmarshal([]byte(line), &j), line)
			ids = append(ids, j.ID+":"+j.Status)
		}
		require.Equal(t, []string{"job-a:pending", "job-d:pending", "job-b:running", "job-c:cancelled"}, ids, "%q", args)
	}
	code, out, _ := o.run("jobs", "list", "--json", "--all", "--tenant", "t-2")
	require.Equal(t, 0, code)
	require.Equal(t, 1, strings.Count(out, "\n"), out)
}

// TestJobsListRefusesABadToken: a token that is not one, or another
// listing's, is a usage error (exit 2), as is --all without --json or a
// list flag on another verb.
func TestJobsListRefusesABadToken(t *testing.T) {
	t.Parallel()
	o := listFixture(t)
	code, out, _ := o.run("jobs", "list", "--json", "--limit", "1", "--tenant", "t-1")
	require.Equal(t, 0, code)
	var page struct {
		Token string `json:"next_token"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &page))
	require.NotEmpty(t, page.Token)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"jobs", "list", "--starting-token", "nonsense"}, "not a token of a jobs listing"},
		{[]string{"jobs", "list", "--starting-token", page.Token}, "made for another listing"},
		{[]string{"jobs", "list", "--tenant", "t-2", "--starting-token", page.Token}, "made for another listing"},
		{[]string{"jobs", "list", "--json", "--all", "--starting-token", page.Token, "--live", "--tenant", "t-1"}, "made for another listing"},
		{[]string{"jobs", "list", "--all"}, "--all streams NDJSON: give --json too"},
		{[]string{"jobs", "get", "job-a", "--starting-token", page.Token}, "unknown flag: --starting-token (a flag of fifoworker jobs list)"},
		{[]string{"jobs", "get", "job-a", "--all"}, "unknown flag: --all (a flag of fifoworker jobs list)"},
	} {
		code, out, errOut := o.run(tc.args...)
		require.Equal(t, 2, code, "%q: %s", tc.args, out)
		require.Contains(t, errOut, tc.want, "%q", tc.args)
	}
}

// TestJobsListByStatus: --status lists one status, in text and in JSON,
// with --tenant too and across pages; an unknown status, or one --live
// or --since leaves out, is a usage error (exit 2), as is another
// status's token.
func TestJobsListByStatus(t *testing.T) {
	t.Parallel()
	o := listFixture(t)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--status", "pending"}, []string{"job-a:pending", "job-d:pending", "more=false"}},
		{[]string{"--status", "pending", "--tenant", "t-2"}, []string{"job-d:pending", "more=false"}},
		{[]string{"--status", "running"}, []string{"job-b:running", "more=false"}},
		{[]string{"--status", "running", "--live"}, []string{"job-b:running", "more=false"}},
		{[]string{"--status", "cancelled"}, []string{"job-c:cancelled", "more=false"}},
		{[]string{"--status", "cancelled", "--since", "1m"}, []string{"more=false"}},
		{[]string{"--status", "completed"}, []string{"more=false"}},
		{[]string{"--status", "failed", "--tenant", "t-1"}, []string{"more=false"}},
	} {
		code, out, errOut := o.run(append([]string{"jobs", "list", "--json"}, tc.args...)...)
		require.Equal(t, 0, code, "%q: %s", tc.args, errOut)
		require.Equal(t, tc.want, listed(t, out), "%q", tc.args)
	}

	code, out, errOut := o.run("jobs", "list", "--status", "pending")
	require.Equal(t, 0, code, errOut)
	rows := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, rows, 3, out)
	require.Regexp(t, `^job-a\s+t-1\s+pending`, rows[1])
	require.Regexp(t, `^job-d\s+t-2\s+pending`, rows[2])
	code, out, errOut = o.run("jobs", "list", "--status", "completed")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "no completed job in table fw-jobs (final ones: those that ended within 24h0m0s)\n", out)
	code, out, errOut = o.run("jobs", "list", "--status", "running", "--tenant", "t-2")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "no running job of tenant t-2 in table fw-jobs\n", out)

	// Pages of one status go on with the same --status only.
	code, out, _ = o.run("jobs", "list", "--json", "--limit", "1", "--status", "pending")
	require.Equal(t, 0, code)
	var page struct {
		Jobs  []jobJSON `json:"jobs"`
		Token string    `json:"next_token"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &page))
	require.Equal(t, "job-a", page.Jobs[0].ID)
	require.NotEmpty(t, page.Token)
	code, out, errOut = o.run("jobs", "list", "--json", "--limit", "1", "--status", "pending", "--starting-token", page.Token)
	require.Equal(t, 0, code, errOut)
	// A filtered page may end with an entry after it it has not read
	// (job-b, running): "may be more", and the next page is empty.
	require.Equal(t, []string{"job-d:pending", "more=true"}, listed(t, out))

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--status", "paused"}, `--status: jobs: list: invalid request: status "paused": one of pending, running, completed, failed, cancelled`},
		{[]string{"--status", "Running"}, `status "Running"`},
		{[]string{"--status", "completed", "--live"}, "--status completed is final, which --live leaves out"},
		{[]string{"--status", "running", "--since", "1h"}, "--since is about final jobs, which --status running leaves out"},
		{[]string{"--status", "running", "--starting-token", page.Token}, "made for another listing"},
		{[]string{"--starting-token", page.Token}, "made for another listing"},
	} {
		code, out, errOut := o.run(append([]string{"jobs", "list"}, tc.args...)...)
		require.Equal(t, 2, code, "%q: %s", tc.args, out)
		require.Contains(t, errOut, tc.want, "%q", tc.args)
	}
}
