//go:build integration

package test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/intake"
	"github.com/fifoworker/fifoworker/internal/app/tasks"
	"github.com/fifoworker/fifoworker/internal/app/worker"
	"github.com/fifoworker/fifoworker/internal/dev/pipeline"
	"github.com/fifoworker/fifoworker/internal/dev/testenv"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// The second task through the real pipeline, as a client uses it: POST
// /jobs with {"spec":{"task":"wordcount"}} reaches intake, which checks the
// spec with the word count's own rules; the relay sends the command, the
// worker runs the task the job names, and the result, a JSON object of
// per-article counts, is accepted with its .json key. The articles are
// hostile: an empty one, one of ~350 KB (DynamoDB's item limit is 400 KB),
// one in several scripts, one whose id JSON must escape. A spec the word
// count refuses, and one naming no task, are refused by intake; an article
// the word count cannot count fails its job for good.
func TestWordCountThroughThePipeline(t *testing.T) {
	state, tpl, deployed, stack := deployTemplate(t, "wc", nil)

	ddb := state.DynamoDBClient()
	const hugeWords = 50_000
	odd := `a "quoted" </b> é`
	for _, a := range []map[string]string{
		{"article_id": "a-1", "title": "Ordered, fenced work", "body": "per job — one result, accepted once."},
		{"article_id": "a-2"},
		{"article_id": "a-3", "body": strings.Repeat("lorem ", hugeWords) + strings.Repeat(" ", 40_000)},
		{"article_id": "a-4", "title": "naïve café", "body": "日本語のテキスト Ελληνικά\u00a0кириллица ٣"},
		{"article_id": odd, "title": "odd id"},
	} {
		item := map[string]ddbtypes.AttributeValue{"tenant": &ddbtypes.AttributeValueMemberS{Value: "t-1"}}
		for k, v := range a {
			item[k] = &ddbtypes.AttributeValueMemberS{Value: v}
		}
		_, err := ddb.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(deployed.Resources["ArticlesTable"]), Item: item})
		require.NoError(t, err, a["article_id"])
	}
	// A tenant with an article the word count cannot count: its body is a
	// number.
	_, err := ddb.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(deployed.Resources["ArticlesTable"]), Item: map[string]ddbtypes.AttributeValue{
		"tenant": &ddbtypes.AttributeValueMemberS{Value: "t-2"}, "article_id": &ddbtypes.AttributeValueMemberS{Value: "b-1"},
		"body": &ddbtypes.AttributeValueMemberN{Value: "42"},
	}})
	require.NoError(t, err)

	log := &testenv.Buffer{}
	p, err := pipeline.Build(t.Context(), pipeline.Config{
		Template: tpl, Deployed: deployed, StackName: stack, Region: state.Region, Endpoints: state.Env(),
		Logger: slog.New(slog.NewJSONHandler(log, nil)),
	})
	require.NoError(t, err)
	p.Run(t.Context())
	t.Cleanup(func() {
		require.NoError(t, p.Stop())
		if t.Failed() {
			t.Logf("the functions' log:\n%s", log.String())
		}
	})

	post := func(tenant, intent, spec string) events.APIGatewayV2HTTPResponse {
		t.Helper()
		resp, err := p.HTTP(t.Context(), events.APIGatewayV2HTTPRequest{
			Version: "2.0", RouteKey: "$default", RawPath: "/jobs", Body: `{"spec":` + spec + `}`,
			Headers: map[string]string{"content-type": "application/json", "idempotency-key": intent},
			RequestContext: events.APIGatewayV2HTTPRequestContext{
				Stage: "$default", RequestID: intent,
				HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost, Path: "/jobs", Protocol: "HTTP/1.1", SourceIP: "127.0.0.1"},
				Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
					JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"tenant": tenant, "sub": "test-" + tenant}},
				},
			},
		})
		require.NoError(t, err)
		return resp
	}
	refused := func(resp events.APIGatewayV2HTTPResponse, code, says string) {
		t.Helper()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, resp.Body)
		var body intake.ErrorBody
		require.NoError(t, json.Unmarshal([]byte(resp.Body), &body))
		require.Equal(t, code, body.Error.Code, resp.Body)
		require.Contains(t, body.Error.Message, says)
	}
	refused(post("t-1", "wc-bad-fields", `{"task":"wordcount","fields":"body,body"}`), intake.CodeInvalidSpec, "fields")
	refused(post("t-1", "wc-no-task", `{"task":"translate"}`), intake.CodeUnknownTask, `"translate"`)

	resp := post("t-1", "wc-1", `{"task":"wordcount","page_size":"2"}`)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, resp.Body)
	badResp := post("t-2", "wc-2", `{"task":"wordcount"}`)
	require.Equal(t, http.StatusAccepted, badResp.StatusCode, badResp.Body)

	store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: ddb, Table: deployed.Resources["JobsTable"]})
	require.NoError(t, err)
	final := func(id string) jobs.Job {
		t.Helper()
		var job jobs.Job
		require.Eventually(t, func() bool {
			job, err = store.Get(t.Context(), id)
			return err == nil && job.Status.Final()
		}, 2*time.Minute, 200*time.Millisecond, "job %s final", id)
		return job
	}

	done := final(jobs.DeriveJobID("t-1", "wc-1"))
	require.Equal(t, jobs.StatusCompleted, done.Status, "%+v", done.Error)
	require.EqualValues(t, 5, done.Progress)
	key, err := candidate.ParseKey(done.Result.Key)
	require.NoError(t, err)
	require.Equal(t, "json", key.Ext)
	cands, err := candidate.New(candidate.Config{Client: state.S3Client(), Bucket: deployed.Resources["CandidatesBucket"]})
	require.NoError(t, err)
	r, err := cands.Open(t.Context(), key)
	require.NoError(t, err)
	raw, err := io.ReadAll(r)
	require.NoError(t, err)
	require.NoError(t, r.Close(), "the result's checksum is the recorded one")
	var res tasks.WordCountResult
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&res))
	got := map[string]int64{}
	for _, a := range res.Articles {
		got[a.ArticleID] = a.Words
	}
	require.Equal(t, map[string]int64{"a-1": 3 + 6, "a-2": 0, "a-3": hugeWords, "a-4": 2 + 4, odd: 2}, got)
	require.Equal(t, "t-1", res.Tenant)
	require.Equal(t, []string{"title", "body"}, res.Fields)
	require.EqualValues(t, 5, res.Total.Articles)
	require.EqualValues(t, 9+hugeWords+6+2, res.Total.Words)

	failed := final(jobs.DeriveJobID("t-2", "wc-2"))
	require.Equal(t, jobs.StatusFailed, failed.Status)
	require.Equal(t, worker.CodeTaskFailed, failed.Error.Code)
	require.Contains(t, failed.Error.Message, `article "b-1": attribute "body" holds a N`)
	require.Empty(t, failed.Result.Key)
	left, err := cands.List(t.Context(), failed.ID)
	require.NoError(t, err)
	require.Empty(t, left, "nothing of the failed job uploaded")
	require.Contains(t, log.String(), strconv.Quote(tasks.NameWordCount), "the worker's log names the task")
}
