package testenv

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// ErrUnsupportedPolicy is returned for a policy this evaluation cannot
// read faithfully (NotAction, a managed policy, a condition operator it
// does not know): a test must fail on it, not guess.
var ErrUnsupportedPolicy = errors.New("testenv: policy not supported by the IAM evaluation")

// RolePolicy is what a function's role allows: the statements of its
// inline policies and of the template's AWS::IAM::Policy resources
// attached to it, resolved against a local deployment.
type RolePolicy struct {
	Role string
	// ARN is the role's ARN as deployed (a stand-in locally, where no role
	// is created: see RoleARN): what a resource policy's aws:PrincipalArn
	// sees of the function's requests.
	ARN        string
	Statements []IAMStatement
}

// IAMStatement is one resolved policy statement.
type IAMStatement struct {
	Sid   string
	Allow bool
	// Principals are a resource policy's principals ("*" or ARNs); none
	// in an identity policy, whose principal is the role.
	Principals []string
	Actions    []string
	Resources  []string
	// Condition is operator → condition key → values.
	Condition map[string]map[string][]string
}

// Deployment is a local deployment of a template, under a stack name in
// a region: what resolving the template's values needs.
type Deployment struct {
	Template *samtemplate.Template
	Result   *localdeploy.Result
	Stack    string
	Region   string
}

func (d Deployment) resolve(v any) (any, error) {
	return localdeploy.Resolve(d.Template, d.Result, d.Stack, d.Region, v)
}

// FunctionRole reads the role of the function with logical id fn (its Role
// is !GetAtt <role>.Arn). Actions whose service is in exempt ("logs",
// "xray") are left out, and so are statements left with none: a test
// exempts what the functions' own SDK requests do not show (Lambda writes
// logs and trace segments with the role).
func FunctionRole(d Deployment, fn string, exempt ...string) (RolePolicy, error) {
	props := d.Template.Resources[fn].Properties
	role := getAttName(props["Role"])
	if role == "" {
		return RolePolicy{}, fmt.Errorf("testenv: %s has no Role of this template (!GetAtt ROLE.Arn)", fn)
	}
	p := RolePolicy{Role: role, ARN: RoleARN(d, role)}
	rp := d.Template.Resources[role].Properties
	if _, ok := rp["ManagedPolicyArns"]; ok {
		return RolePolicy{}, fmt.Errorf("%w: %s has managed policies", ErrUnsupportedPolicy, role)
	}
	var docs []any
	policies, _ := rp["Policies"].([]any)
	for _, pol := range policies {
		m, _ := pol.(map[string]any)
		docs = append(docs, m["PolicyDocument"])
	}
	for _, name := range d.Template.OfType("AWS::IAM::Policy") {
		r := d.Template.Resources[name]
		roles, _ := r.Properties["Roles"].([]any)
		if !slices.ContainsFunc(roles, func(x any) bool { m, _ := x.(map[string]any); return m["Ref"] == role }) {
			continue
		}
		exists, err := d.Template.Exists(name, d.ref)
		if err != nil {
			return RolePolicy{}, err
		}
		if exists {
			docs = append(docs, r.Properties["PolicyDocument"])
		}
	}
	for _, doc := range docs {
		m, _ := doc.(map[string]any)
		for _, st := range asList(m["Statement"]) {
			s, keep, err := d.statement(st, exempt)
			if err != nil {
				return RolePolicy{}, fmt.Errorf("testenv: %s: %w", role, err)
			}
			if keep {
				p.Statements = append(p.Statements, s)
			}
		}
	}
	return p, nil
}

// ref gives a parameter's default: the value a local deployment uses.
func (d Deployment) ref(name string) (string, error) {
	v, err := d.resolve(map[string]any{"Ref": name})
	return fmt.Sprint(v), err
}

func (d Deployment) statement(raw any, exempt []string) (IAMStatement, bool, error) {
	chosen, present, err := d.Template.Choose(raw, d.ref)
	if err != nil || !present {
		return IAMStatement{}, false, err
	}
	m, _ := chosen.(map[string]any)
	for _, k := range []string{"NotAction", "NotResource", "NotPrincipal"} {
		if _, ok := m[k]; ok {
			return IAMStatement{}, false, fmt.Errorf("%w: %s", ErrUnsupportedPolicy, k)
		}
	}
	s := IAMStatement{Sid: fmt.Sprint(m["Sid"]), Allow: m["Effect"] == "Allow"}
	if principal, ok := m["Principal"]; ok {
		if s.Principals, err = d.principals(principal); err != nil {
			return IAMStatement{}, false, fmt.Errorf("statement %s: %w", s.Sid, err)
		}
	}
	for _, a := range asList(m["Action"]) {
		service, _, _ := strings.Cut(fmt.Sprint(a), ":")
		if !slices.Contains(exempt, service) {
			s.Actions = append(s.Actions, fmt.Sprint(a))
		}
	}
	if len(s.Actions) == 0 {
		return IAMStatement{}, false, nil
	}
	resources, err := d.resolve(m["Resource"])
	if err != nil {
		return IAMStatement{}, false, fmt.Errorf("statement %s: %w", s.Sid, err)
	}
	for _, r := range asList(resources) {
		s.Resources = append(s.Resources, fmt.Sprint(r))
	}
	if c, ok := m["Condition"]; ok {
		resolved, err := d.resolve(c)
		if err != nil {
			return IAMStatement{}, false, fmt.Errorf("statement %s: %w", s.Sid, err)
		}
		s.Condition = map[string]map[string][]string{}
		ops, _ := resolved.(map[string]any)
		for op, kv := range ops {
			keys, _ := kv.(map[string]any)
			s.Condition[op] = map[string][]string{}
			for k, vs := range keys {
				for _, v := range asList(vs) {
					s.Condition[op][k] = append(s.Condition[op][k], fmt.Sprint(v))
				}
			}
		}
	}
	return s, true, nil
}

func asList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	if v == nil {
		return nil
	}
	return []any{v}
}

func getAttName(v any) string {
	m, _ := v.(map[string]any)
	ga, _ := m["Fn::GetAtt"].([]any)
	if len(ga) != 2 || ga[1] != "Arn" {
		return ""
	}
	name, _ := ga[0].(string)
	return name
}

// Matches reports whether the statement names the request's action and
// resource and its condition holds for the request.
func (s IAMStatement) Matches(r IAMRequest) (bool, error) {
	if len(s.Principals) > 0 && !slices.Contains(s.Principals, "*") {
		callers, _ := contextValues(r.Context, "aws:PrincipalArn")
		if !slices.ContainsFunc(s.Principals, func(p string) bool {
			return slices.ContainsFunc(callers, func(c string) bool { return principalMatches(p, c) })
		}) {
			return false, nil
		}
	}
	if !slices.ContainsFunc(s.Actions, func(a string) bool { return wildcard(strings.ToLower(a), strings.ToLower(r.Action)) }) ||
		!slices.ContainsFunc(s.Resources, func(p string) bool { return wildcard(p, r.Resource) }) {
		return false, nil
	}
	return conditionHolds(s.Condition, r.Context)
}

// Allows reports whether the role allows the request: a statement allows
// it and none denies it.
func (p RolePolicy) Allows(r IAMRequest) (bool, error) {
	allowed := false
	for _, s := range p.Statements {
		ok, err := s.Matches(r)
		if err != nil {
			return false, fmt.Errorf("%s statement %s: %w", p.Role, s.Sid, err)
		}
		if ok && !s.Allow {
			return false, nil
		}
		allowed = allowed || ok
	}
	return allowed, nil
}

// Refused lists the requests the role does not allow.
func (p RolePolicy) Refused(reqs []IAMRequest) ([]string, error) {
	var out []string
	for _, r := range reqs {
		ok, err := p.Allows(r)
		if err != nil {
			return nil, err
		}
		if !ok {
			out = append(out, r.String())
		}
	}
	return out, nil
}

// Unused lists the grants no request uses: each action on each resource
// of each Allow statement ("Sid: action on resource"), used when some
// request of that action on a resource the pattern matches satisfies the
// statement's condition; and each value a StringEquals or StringLike
// condition allows that no such request needs ("Sid: action on resource:
// key value").
func (p RolePolicy) Unused(reqs []IAMRequest) ([]string, error) {
	var out []string
	for _, s := range p.Statements {
		if !s.Allow {
			continue
		}
		for _, a := range s.Actions {
			for _, res := range s.Resources {
				one := IAMStatement{Sid: s.Sid, Allow: true, Actions: []string{a}, Resources: []string{res}, Condition: s.Condition}
				var using []IAMRequest
				for _, r := range reqs {
					ok, err := one.Matches(r)
					if err != nil {
						return nil, fmt.Errorf("%s statement %s: %w", p.Role, s.Sid, err)
					}
					if ok {
						using = append(using, r)
					}
				}
				grant := fmt.Sprintf("%s: %s on %s", s.Sid, a, res)
				if len(using) == 0 {
					out = append(out, grant)
					continue
				}
				for _, v := range unusedValues(s.Condition, using) {
					out = append(out, grant+": "+v)
				}
			}
		}
	}
	return out, nil
}

// unusedValues lists the values of cond's positive string operators that
// match no value of any request in reqs.
func unusedValues(cond map[string]map[string][]string, reqs []IAMRequest) []string {
	var out []string
	for _, op := range slices.Sorted(maps.Keys(cond)) {
		_, base, ok := strings.Cut(op, ":")
		if !ok {
			base = op
		}
		match := wildcard
		switch base {
		case "StringEquals":
			match = func(p, v string) bool { return p == v }
		case "StringLike":
		default:
			continue
		}
		for _, key := range slices.Sorted(maps.Keys(cond[op])) {
			for _, pattern := range cond[op][key] {
				used := slices.ContainsFunc(reqs, func(r IAMRequest) bool {
					values, _ := contextValues(r.Context, key)
					return slices.ContainsFunc(values, func(v string) bool { return match(pattern, v) })
				})
				if !used {
					out = append(out, fmt.Sprintf("%s %s", key, pattern))
				}
			}
		}
	}
	return out
}

// conditionHolds evaluates a statement's condition block against the
// request's condition keys: every operator and key must hold. Supported:
// StringEquals, StringLike, StringNotEquals, StringNotLike, ArnEquals,
// ArnLike, ArnNotEquals, ArnNotLike (both pairs match ARNs with
// wildcards, as the IAM reference says) and Bool (case-insensitive), each
// alone (one value; a missing key fails a positive operator and passes a
// negated one) or under ForAllValues: (every value matches; no values
// pass) or ForAnyValue: (some value matches); and Null ("true": the key
// is absent; "false": it is present).
func conditionHolds(cond map[string]map[string][]string, ctx map[string][]string) (bool, error) {
	for op, keys := range cond {
		set, base, ok := strings.Cut(op, ":")
		if !ok {
			set, base = "", op
		}
		if base == "Null" && set == "" {
			if !nullHolds(keys, ctx) {
				return false, nil
			}
			continue
		}
		match, negate, err := operator(base)
		if err != nil {
			return false, fmt.Errorf("%w: condition operator %s", err, op)
		}
		for key, patterns := range keys {
			values, present := contextValues(ctx, key)
			anyMatch := func(v string) bool {
				m := slices.ContainsFunc(patterns, func(p string) bool { return match(p, v) })
				return m != negate
			}
			var holds bool
			switch set {
			case "ForAllValues":
				holds = !slices.ContainsFunc(values, func(v string) bool { return !anyMatch(v) })
			case "ForAnyValue":
				holds = slices.ContainsFunc(values, anyMatch)
			case "":
				switch {
				case !present:
					holds = negate
				case len(values) != 1:
					return false, fmt.Errorf("%w: %s on %s, which has %d values: use ForAllValues or ForAnyValue", ErrUnsupportedPolicy, op, key, len(values))
				default:
					holds = anyMatch(values[0])
				}
			default:
				return false, fmt.Errorf("%w: condition operator %s", ErrUnsupportedPolicy, op)
			}
			if !holds {
				return false, nil
			}
		}
	}
	return true, nil
}

// contextValues are the values of the request's condition key key, and
// whether the request has it. Key names match in any case: IAM's are not
// case-sensitive ("Context key names are not case-sensitive": the IAM User
// Guide, "IAM JSON policy elements: Condition"); values are compared by
// each operator.
func contextValues(ctx map[string][]string, key string) ([]string, bool) {
	if v, ok := ctx[key]; ok {
		return v, true
	}
	for k, v := range ctx {
		if strings.EqualFold(k, key) {
			return v, true
		}
	}
	return nil, false
}

// operator is a condition operator's comparison of a pattern with a
// value, and whether the operator negates it.
func operator(base string) (match func(pattern, v string) bool, negate bool, err error) {
	equal := func(p, v string) bool { return p == v }
	switch base {
	case "StringEquals":
		return equal, false, nil
	case "StringLike", "ArnEquals", "ArnLike":
		return wildcard, false, nil
	case "StringNotEquals":
		return equal, true, nil
	case "StringNotLike", "ArnNotEquals", "ArnNotLike":
		return wildcard, true, nil
	case "Bool":
		return strings.EqualFold, false, nil
	}
	return nil, false, ErrUnsupportedPolicy
}

// nullHolds is the Null operator: each key's value "true" holds when the
// request lacks the key, "false" when it has it.
func nullHolds(keys map[string][]string, ctx map[string][]string) bool {
	for key, want := range keys {
		_, present := contextValues(ctx, key)
		for _, w := range want {
			if strings.EqualFold(w, "true") == present {
				return false
			}
		}
	}
	return true
}

// wildcard matches IAM's patterns: * any run of characters, ? any one.
func wildcard(pattern, s string) bool {
	var b strings.Builder
	b.WriteString("^")
	for _, c := range pattern {
		switch c {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String()).MatchString(s)
}

// EventSourceRequests are the requests Lambda makes with the role of the
// function with logical id fn for its event source mappings, as AWS lists
// the execution role permissions each needs: an SQS queue's
// sqs:ReceiveMessage, sqs:DeleteMessage and sqs:GetQueueAttributes (the
// SQS developer guide, "Configuring an Amazon SQS queue to trigger an AWS
// Lambda function"; not sqs:ChangeMessageVisibility); a DynamoDB stream's
// dynamodb:DescribeStream, dynamodb:GetRecords, dynamodb:GetShardIterator
// and dynamodb:ListStreams, and sqs:SendMessage to an SQS on-failure
// destination (the Lambda developer guide, "Using Lambda with DynamoDB").
// The local stack runs these mappings with clients of its own
// (pkg/localesm), so a test adds them from the template.
func EventSourceRequests(d Deployment, fn string) ([]IAMRequest, error) {
	events, _ := d.Template.Resources[fn].Properties["Events"].(map[string]any)
	var out []IAMRequest
	for _, name := range slices.Sorted(maps.Keys(events)) {
		e, _ := events[name].(map[string]any)
		if e["Type"] != "SQS" && e["Type"] != "DynamoDB" {
			continue // invoked by a service with its own permission, not with the role
		}
		props, err := d.resolve(e["Properties"])
		if err != nil {
			return nil, fmt.Errorf("testenv: %s event %s: %w", fn, name, err)
		}
		p, _ := props.(map[string]any)
		var actions []string
		var resource string
		switch e["Type"] {
		case "SQS":
			actions, resource = []string{"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"}, fmt.Sprint(p["Queue"])
		case "DynamoDB":
			actions, resource = []string{"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"}, fmt.Sprint(p["Stream"])
		}
		for _, a := range actions {
			out = append(out, IAMRequest{Action: a, Resource: resource})
		}
		dest, _ := p["DestinationConfig"].(map[string]any)
		if onFailure, ok := dest["OnFailure"].(map[string]any); ok {
			out = append(out, IAMRequest{Action: "sqs:SendMessage", Resource: fmt.Sprint(onFailure["Destination"])})
		}
	}
	return out, nil
}
