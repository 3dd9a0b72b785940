package samtemplate_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// The sweeper keeps its last run's report beside its cursors, at
// sweeper.LastRunKey: in every template its role may read and write that
// key, and list it (a missing key's 403 is told from a denied read by a
// listing of the key: sweeper.S3LastRun, S3Cursor).
func TestEveryTemplateLetsTheSweeperKeepItsLastRun(t *testing.T) {
	t.Parallel()
	templates := map[string]*samtemplate.Template{
		"template.yaml": loadRepoTemplate(t), "template-kafka.yaml": loadKafkaTemplate(t),
		"template-postgres.yaml": loadPostgresTemplate(t), "template-kafka-postgres.yaml": loadKafkaPostgresTemplate(t),
	}
	for name, tpl := range templates {
		allowed := map[string]bool{}
		role := getAttTarget(tpl.Resources["SweeperFunction"].Properties["Role"])
		require.NotEmpty(t, role, name)
		for _, pol := range asList(tpl.Resources[role].Properties["Policies"]) {
			for _, st := range asList(asMap(asMap(pol)["PolicyDocument"])["Statement"]) {
				s := asMap(st)
				if s["Effect"] != "Allow" {
					continue
				}
				for _, a := range asList(s["Action"]) {
					for _, r := range asList(s["Resource"]) {
						if objectCovers(r, sweeper.LastRunKey) || prefixCovers(s, r, sweeper.LastRunKey) {
							allowed[a.(string)] = true
						}
					}
				}
			}
		}
		for _, a := range []string{"s3:GetObject", "s3:PutObject", "s3:ListBucket"} {
			require.True(t, allowed[a], "%s: the sweeper's role may not %s %s", name, a, sweeper.LastRunKey)
		}
	}
}

// objectCovers reports whether resource, a "${CandidatesBucket.Arn}/..."
// pattern, names key's object.
func objectCovers(resource any, key string) bool {
	sub, _ := asMap(resource)["Fn::Sub"].(string)
	pattern, ok := strings.CutPrefix(sub, "${CandidatesBucket.Arn}/")
	return ok && iamMatch(pattern, key)
}

// prefixCovers reports whether statement s, on the bucket itself, lets a
// listing of key's prefix through its s3:prefix condition.
func prefixCovers(s map[string]any, resource any, key string) bool {
	if getAttTarget(resource) != "CandidatesBucket" {
		return false
	}
	for _, p := range asList(asMap(asMap(s["Condition"])["StringLike"])["s3:prefix"]) {
		if iamMatch(p.(string), key) {
			return true
		}
	}
	return false
}

// iamMatch is IAM's wildcard match: * is any run of characters, slashes
// included, and ? any one.
func iamMatch(pattern, s string) bool {
	re := "^" + strings.NewReplacer(`\*`, ".*", `\?`, ".").Replace(regexp.QuoteMeta(pattern)) + "$"
	return regexp.MustCompile(re).MatchString(s)
}
