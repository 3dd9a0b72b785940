package testenv

import (
	"fmt"
	"maps"
	"regexp"
	"strings"

	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
)

// ResourcePolicy is what the template's resource policies (its
// AWS::S3::BucketPolicy and AWS::SQS::QueuePolicy resources) deny: their
// Deny statements, resolved against a local deployment. Their Allow
// statements are left out: within one account a request the role allows
// needs no allow of the resource's own, but any resource policy's deny
// refuses it.
type ResourcePolicy struct {
	Statements []IAMStatement
}

// RoleARN is the ARN of the template's role with logical id role as the
// deployment has it, or a stand-in in the local account when the local
// deployment created no role (it creates none): the same value wherever
// the template names the role's ARN, so that a resource policy's
// aws:PrincipalArn condition is evaluated as on AWS.
func RoleARN(d Deployment, role string) string {
	if arn := d.Result.Attributes[role]["Arn"]; arn != "" {
		return arn
	}
	return fmt.Sprintf("arn:aws:iam::%s:role/%s-%s", localdeploy.LocalAccountID, d.Stack, role)
}

// withRoles is d with every role of the template given its ARN (RoleARN),
// and each parameter in params given that value as its default (a
// parameter with no default, such as an operator's role ARN, that a
// resource policy names).
func (d Deployment) withRoles(params map[string]string) Deployment {
	tpl := *d.Template
	tpl.Parameters = maps.Clone(d.Template.Parameters)
	for name, v := range params {
		p := tpl.Parameters[name]
		p.Default = v
		tpl.Parameters[name] = p
	}
	res := *d.Result
	res.Attributes = maps.Clone(d.Result.Attributes)
	for _, role := range d.Template.OfType("AWS::IAM::Role") {
		attrs := maps.Clone(res.Attributes[role])
		if attrs == nil {
			attrs = map[string]string{}
		}
		attrs["Arn"] = RoleARN(d, role)
		res.Attributes[role] = attrs
	}
	d.Template, d.Result = &tpl, &res
	return d
}

// ResourcePolicies reads the Deny statements of the template's bucket and
// queue policies that the deployment creates. params gives the
// parameters they name that have no default (a stand-in operator role's
// ARN).
func ResourcePolicies(d Deployment, params map[string]string) (ResourcePolicy, error) {
	d = d.withRoles(params)
	var out ResourcePolicy
	for _, typ := range []string{"AWS::S3::BucketPolicy", "AWS::SQS::QueuePolicy"} {
		for _, name := range d.Template.OfType(typ) {
			exists, err := d.Template.Exists(name, d.ref)
			if err != nil {
				return ResourcePolicy{}, fmt.Errorf("testenv: %s: %w", name, err)
			}
			if !exists {
				continue
			}
			doc, _ := d.Template.Resources[name].Properties["PolicyDocument"].(map[string]any)
			for _, st := range asList(doc["Statement"]) {
				s, keep, err := d.statement(st, nil)
				if err != nil {
					return ResourcePolicy{}, fmt.Errorf("testenv: %s: %w", name, err)
				}
				if keep && !s.Allow {
					s.Sid = name + "." + s.Sid
					out.Statements = append(out.Statements, s)
				}
			}
		}
	}
	return out, nil
}

// principals reads a statement's Principal: "*", or {"AWS": ARNs}.
func (d Deployment) principals(v any) ([]string, error) {
	if v == "*" {
		return []string{"*"}, nil
	}
	m, _ := v.(map[string]any)
	if len(m) != 1 || m["AWS"] == nil {
		return nil, fmt.Errorf("%w: Principal %v", ErrUnsupportedPolicy, v)
	}
	resolved, err := d.resolve(m["AWS"])
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range asList(resolved) {
		out = append(out, fmt.Sprint(p))
	}
	return out, nil
}

// principalMatches reports whether a resource policy's principal p names
// the caller whose ARN is caller: p is that ARN, or an account (its 12-digit
// id or arn:PARTITION:iam::ID:root), which stands for every principal of
// the account (the IAM User Guide, "AWS JSON policy elements: Principal":
// an account principal delegates to the account, and a Deny naming it
// applies to each of its roles).
func principalMatches(p, caller string) bool {
	if p == caller {
		return true
	}
	account, ok := principalAccount(p)
	if !ok {
		return false
	}
	parts := strings.SplitN(caller, ":", 6)
	return len(parts) == 6 && parts[0] == "arn" && parts[4] == account
}

// principalAccount is the account a principal names as a whole, when it
// names one: its 12-digit id, or the ARN of the account's root.
func principalAccount(p string) (string, bool) {
	if accountID.MatchString(p) {
		return p, true
	}
	parts := strings.SplitN(p, ":", 6)
	if len(parts) == 6 && parts[0] == "arn" && parts[2] == "iam" && parts[5] == "root" && accountID.MatchString(parts[4]) {
		return parts[4], true
	}
	return "", false
}

var accountID = regexp.MustCompile(`^[0-9]{12}$`)

// AsSentBy is the request as role sends it on AWS: signed by the role
// (aws:PrincipalArn is its ARN) and over TLS (aws:SecureTransport; the
// SDK's AWS endpoints are https, where the local stack's are not).
func (r IAMRequest) AsSentBy(role RolePolicy) IAMRequest {
	ctx := maps.Clone(r.Context)
	if ctx == nil {
		ctx = map[string][]string{}
	}
	ctx["aws:PrincipalArn"] = []string{role.ARN}
	ctx["aws:SecureTransport"] = []string{"true"}
	r.Context = ctx
	return r
}

// Denied lists the requests of role (each as AsSentBy) that a resource
// policy denies, with the statement that denies each.
func (p ResourcePolicy) Denied(role RolePolicy, reqs []IAMRequest) ([]string, error) {
	var out []string
	for _, r := range reqs {
		sent := r.AsSentBy(role)
		for _, s := range p.Statements {
			ok, err := s.Matches(sent)
			if err != nil {
				return nil, fmt.Errorf("statement %s: %w", s.Sid, err)
			}
			if ok {
				out = append(out, fmt.Sprintf("%s (denied by %s)", sent, s.Sid))
			}
		}
	}
	return out, nil
}
