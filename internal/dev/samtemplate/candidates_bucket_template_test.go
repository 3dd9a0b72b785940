package samtemplate_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/intake"
)

// writeOnce is the bucket policy's statement that makes a candidate
// immutable in S3 itself: a request that would create an object under
// candidates/ (PutObject, CopyObject, CompleteMultipartUpload: those S3
// calls object creation operations) without If-None-Match is refused,
// whoever sends it. A multipart upload's other steps take no conditional
// header, so they are left to the completion (AWS, "Enforce conditional
// writes on Amazon S3 buckets"). If-Match would let a put replace an
// object, so it is no way around the deny.
var writeOnce = map[string]any{
	"Sid":       "CandidatesWriteOnce",
	"Effect":    "Deny",
	"Principal": "*",
	"Action":    "s3:PutObject",
	"Resource":  map[string]any{"Fn::Sub": "${CandidatesBucket.Arn}/candidates/*"},
	"Condition": map[string]any{
		"Null": map[string]any{"s3:if-none-match": "true"},
		"Bool": map[string]any{"s3:ObjectCreationOperation": "true"},
	},
}

// s3Put is a request of the s3:PutObject action, as the bucket policy's
// condition keys see it.
type s3Put struct {
	key         string
	ifNoneMatch bool // the request carries If-None-Match
	creation    bool // s3:ObjectCreationOperation: PutObject, CopyObject, CompleteMultipartUpload
}

// denied evaluates the write-once statement for a request, in its one
// form: the resource is a prefix pattern, and both conditions must hold.
// A Null condition of "true" holds when the key is absent from the request.
func denied(p s3Put) bool {
	prefix := strings.TrimSuffix(strings.TrimPrefix(writeOnce["Resource"].(map[string]any)["Fn::Sub"].(string), "${CandidatesBucket.Arn}/"), "*")
	return strings.HasPrefix(p.key, prefix) && !p.ifNoneMatch && p.creation
}

// The candidates bucket keeps every version of an object, so an accepted
// result can never be lost to a delete or a replacement within the
// noncurrent versions' lifetime, and its policy refuses an unconditional
// object creation under candidates/, so no principal (the worker's role
// included) can replace an accepted result with a plain PutObject.
func TestTemplateCandidatesAreImmutableInS3(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	p := tpl.Resources["CandidatesBucket"].Properties
	require.Equal(t, map[string]any{"Status": "Enabled"}, p["VersioningConfiguration"])

	doc := asMap(tpl.Resources["CandidatesBucketPolicy"].Properties["PolicyDocument"])
	var found bool
	for _, st := range asList(doc["Statement"]) {
		if asMap(st)["Sid"] == writeOnce["Sid"] {
			found = true
			require.Equal(t, writeOnce, asMap(st))
		}
	}
	require.True(t, found, "the bucket policy has the write-once statement")

	for _, c := range []struct {
		name string
		put  s3Put
		deny bool
	}{
		{"the worker's put", s3Put{"candidates/job-42/g0000000002/a.json", true, true}, false},
		{"a plain put", s3Put{"candidates/job-42/g0000000002/a.json", false, true}, true},
		{"a copy or a completion without the header", s3Put{"candidates/job-42/g0000000002/a.json", false, true}, true},
		{"a multipart upload's part", s3Put{"candidates/job-42/g0000000002/a.json", false, false}, false},
		{"the sweeper's cursor", s3Put{"sweeper/candidates", false, true}, false},
		{"a parked body", s3Put{"quarantine/q.fifo/g/1.body", false, true}, false},
		{"a key that only starts alike", s3Put{"candidatesX/a", false, true}, false},
	} {
		require.Equal(t, c.deny, denied(c.put), c.name)
	}
}

// Versioning keeps what the sweeper deletes (orphans, and results of jobs
// TTL removed) and each overwrite of its cursors as noncurrent versions:
// a lifecycle rule expires them, and the delete markers left alone. A
// version lives on long enough for every download URL signed before its
// delete to work to its end, and not much longer than an operator needs to
// restore a result deleted by mistake.
func TestTemplateCandidatesNoncurrentVersionsExpire(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	rules := asList(asMap(tpl.Resources["CandidatesBucket"].Properties["LifecycleConfiguration"])["Rules"])
	var noncurrent []map[string]any
	for _, r := range rules {
		if rule := asMap(r); rule["NoncurrentVersionExpiration"] != nil {
			noncurrent = append(noncurrent, rule)
		}
	}
	require.Len(t, noncurrent, 1)
	rule := noncurrent[0]
	require.Equal(t, "Enabled", rule["Status"])
	for _, scope := range []string{"Prefix", "TagFilters", "ObjectSizeGreaterThan", "ObjectSizeLessThan"} {
		require.NotContains(t, rule, scope, "the rule covers the whole bucket")
	}
	require.Equal(t, true, rule["ExpiredObjectDeleteMarker"], "a delete marker with no version left behind it goes too")
	days := asInt(t, asMap(rule["NoncurrentVersionExpiration"])["NoncurrentDays"])
	require.Greater(t, time.Duration(days)*24*time.Hour, intake.MaxResultURLTTL, "a pinned URL outlives its version's delete")
	require.LessOrEqual(t, days, 30)
}

// The download URL intake signs is pinned to the accepted version
// (internal/app/intake's S3Presigner): intake heads the object (s3:GetObject) and
// the URL's GET of one version is authorised as s3:GetObjectVersion, with
// intake's credentials.
func TestTemplateIntakeMaySignVersionedResultURLs(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	var actions []any
	for _, s := range roleStatements(t, tpl, "IntakeFunction") {
		if s["Sid"] == "ResultURLs" {
			require.Equal(t, map[string]any{"Fn::Sub": "${CandidatesBucket.Arn}/candidates/*"}, s["Resource"])
			actions = asList(s["Action"])
		}
	}
	slices.SortFunc(actions, func(a, b any) int { return strings.Compare(a.(string), b.(string)) })
	require.Equal(t, []any{"s3:GetObject", "s3:GetObjectVersion"}, actions)
}
