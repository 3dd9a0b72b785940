package samtemplate_test

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// The worker is deployed before intake: intake refuses a spec naming a
// task the worker does not run, and the worker fails such a job for good
// (unknown_task), so a new task must reach the worker before intake
// accepts jobs of it. DependsOn orders updates as well as creations, and
// SAM copies it to the base AWS::Lambda::Function, whose update is what
// puts new code live. The order holds only without a cycle: the worker
// must not depend, even through other resources, on intake.
func TestIntakeIsDeployedAfterTheWorker(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	require.Contains(t, asList(tpl.Resources["IntakeFunction"].Attributes["DependsOn"]), "WorkerFunction")
	require.NotContains(t, dependencies(tpl, "WorkerFunction"), "IntakeFunction", "a cycle")
	require.Contains(t, dependencies(tpl, "IntakeFunction"), "WorkerFunction", "the walk sees DependsOn")
	require.Contains(t, dependencies(tpl, "WorkerFunction"), "WorkerRole", "the walk sees Fn::GetAtt")
}

// Intake builds no task, only their spec checks: it is given nothing a
// task reads (the Articles table's name), as the wiring asks for none.
func TestIntakeIsGivenNothingATaskReads(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	env := asMap(asMap(tpl.Resources["IntakeFunction"].Properties["Environment"])["Variables"])
	require.NotEmpty(t, env)
	require.NotContains(t, env, "ARTICLES_TABLE")
	worker := asMap(asMap(tpl.Resources["WorkerFunction"].Properties["Environment"])["Variables"])
	require.Contains(t, worker, "ARTICLES_TABLE", "the worker's tasks read it")
}

// subVar is a resource named in a Fn::Sub string: ${Name} or ${Name.Attr}.
var subVar = regexp.MustCompile(`\$\{([A-Za-z0-9]+)[.}]`)

// dependencies returns every resource that name depends on, directly or
// through other resources: by DependsOn, Ref, Fn::GetAtt and Fn::Sub.
func dependencies(tpl *samtemplate.Template, name string) map[string]bool {
	seen := map[string]bool{}
	var visit func(string)
	visit = func(n string) {
		r, ok := tpl.Resources[n]
		if !ok {
			return
		}
		var direct []string
		for _, d := range asList(r.Attributes["DependsOn"]) {
			if s, ok := d.(string); ok {
				direct = append(direct, s)
			}
		}
		direct = append(direct, refsIn(r.Properties)...)
		for _, d := range direct {
			if _, isResource := tpl.Resources[d]; isResource && !seen[d] {
				seen[d] = true
				visit(d)
			}
		}
	}
	visit(name)
	return seen
}

// refsIn returns the names v refers to (Ref, Fn::GetAtt, Fn::Sub), which
// may be parameters as well as resources.
func refsIn(v any) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			switch k {
			case "Ref":
				if s, ok := e.(string); ok {
					out = append(out, s)
				}
			case "Fn::GetAtt":
				if s, ok := first(e); ok {
					out = append(out, s)
				}
			case "Fn::Sub":
				if s, ok := first(e); ok {
					for _, m := range subVar.FindAllStringSubmatch(s, -1) {
						out = append(out, m[1])
					}
				}
			}
			out = append(out, refsIn(e)...)
		}
	case []any:
		for _, e := range x {
			out = append(out, refsIn(e)...)
		}
	}
	return out
}

// first returns an intrinsic's string: v itself or its list's first
// element. An empty list, or a first element that is not a string, has
// none.
func first(v any) (string, bool) {
	l := asList(v)
	if len(l) == 0 {
		return "", false
	}
	s, ok := l[0].(string)
	return s, ok
}

// refsIn reads what a template may hold without panicking: an Fn::Sub or
// Fn::GetAtt given an empty list names nothing (CloudFormation would
// refuse it; the walk only has to survive it), and Fn::Sub's list form
// names the variables of its string.
func TestRefsInSurvivesAnEmptyList(t *testing.T) {
	t.Parallel()
	for _, empty := range []string{"Fn::Sub", "Fn::GetAtt"} {
		require.NotPanics(t, func() { require.Empty(t, refsIn(map[string]any{empty: []any{}}), empty) }, empty)
	}
	require.ElementsMatch(t, []string{"Bucket", "Table"},
		refsIn(map[string]any{"Fn::Sub": []any{"arn:${Bucket}/${Table}", map[string]any{}}}))
}
