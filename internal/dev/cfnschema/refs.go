package cfnschema

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// registryContext is the template Check checks, for what a value
// of one resource says about others: the type of a Fn::GetAtt.
type registryContext struct {
	t       *samtemplate.Template
	schemas *Registry
}

// samSchemaTypes are the CloudFormation types whose attributes a SAM
// resource's Fn::GetAtt reads: SAM keeps the logical id for the resource
// it makes of the SAM one.
var samSchemaTypes = map[string]string{
	"AWS::Serverless::Function":     "AWS::Lambda::Function",
	"AWS::Serverless::HttpApi":      "AWS::ApiGatewayV2::Api",
	"AWS::Serverless::Api":          "AWS::ApiGateway::RestApi",
	"AWS::Serverless::SimpleTable":  "AWS::DynamoDB::Table",
	"AWS::Serverless::StateMachine": "AWS::StepFunctions::StateMachine",
}

// attributeSchema returns the schema of the resource's Fn::GetAtt
// attributes: nil when there is none to hold them to.
func (c *registryContext) attributeSchema(res string) *ResourceSchema {
	r, ok := c.t.Resources[res]
	if !ok || c.schemas == nil {
		return nil
	}
	typ := r.Type
	if mapped, ok := samSchemaTypes[typ]; ok {
		typ = mapped
	}
	if !strings.HasPrefix(typ, "AWS::") || typ == "AWS::CloudFormation::Stack" || typ == "AWS::CloudFormation::CustomResource" ||
		strings.HasPrefix(typ, "AWS::Serverless::") {
		return nil
	}
	s, err := c.schemas.Schema(typ)
	if err != nil {
		return nil
	}
	return s
}

// attribute returns the schema of attribute attr (Arn, Endpoint.Address)
// of resource res. found is false when the resource's schema has no such
// property; schema is nil when what it holds is unknown.
func (c *registryContext) attribute(res, attr string) (schema map[string]any, found bool) {
	s := c.attributeSchema(res)
	if s == nil {
		return nil, true
	}
	return s.attribute(attr)
}

// attribute resolves a dotted attribute name through the schema's
// properties. An object without fixed properties (a map) holds any name.
func (s *ResourceSchema) attribute(attr string) (map[string]any, bool) {
	v := &validator{schema: s}
	// The attributes are (some of) the resource's properties, whatever
	// the schema says of properties it does not list.
	cur := map[string]any{"properties": s.root["properties"], "additionalProperties": false}
	for _, part := range strings.Split(attr, ".") {
		cur = v.deref(cur)
		props, hasProps := cur["properties"].(map[string]any)
		next, ok := props[part].(map[string]any)
		if !ok {
			if !hasProps || cur["additionalProperties"] != false || cur["patternProperties"] != nil {
				return nil, true
			}
			return nil, false
		}
		cur = next
	}
	return v.deref(cur), true
}

// deref follows a schema's $ref chain.
func (v *validator) deref(schema map[string]any) map[string]any {
	for i := 0; i < maxSchemaDepth; i++ {
		ref, ok := schema["$ref"].(string)
		if !ok {
			return schema
		}
		target, err := v.resolve(ref)
		if err != nil {
			return schema
		}
		schema = target
	}
	return schema
}

// refChecker holds every name the template refers to to what it names.
type refChecker struct {
	ctx      *registryContext
	problems []ResourceProblem
	// samMade are logical ids SAM gives resources it makes, which the
	// template may name: a function's role when it names none
	// (<Function>Role), the implicit APIs (ServerlessHttpApi,
	// ServerlessRestApi).
	samMade map[string]bool
}

func newRefChecker(ctx *registryContext) *refChecker {
	c := &refChecker{ctx: ctx, samMade: map[string]bool{}}
	for name, r := range ctx.t.Resources {
		if r.Type != "AWS::Serverless::Function" {
			continue
		}
		if _, ok := r.Properties["Role"]; !ok {
			c.samMade[name+"Role"] = true
		}
		events, _ := r.Properties["Events"].(map[string]any)
		for _, e := range events {
			em, _ := e.(map[string]any)
			props, _ := em["Properties"].(map[string]any)
			switch em["Type"] {
			case "HttpApi":
				if _, ok := props["ApiId"]; !ok {
					c.samMade["ServerlessHttpApi"] = true
				}
			case "Api":
				if _, ok := props["RestApiId"]; !ok {
					c.samMade["ServerlessRestApi"] = true
				}
			}
		}
	}
	return c
}

// isResource reports whether name names a resource of the template, or
// one SAM makes.
func (c *refChecker) isResource(name string) bool {
	_, ok := c.ctx.t.Resources[name]
	return ok || c.samMade[name]
}

// refScope is where a value is: which resource (none outside Resources),
// and whether in Conditions, where a Ref names only parameters and
// {"Condition": name} refers to a condition.
type refScope struct {
	resource, typ string
	conditions    bool
}

func (c *refChecker) addf(sc refScope, path, format string, args ...any) {
	c.problems = append(c.problems, ResourceProblem{sc.resource, sc.typ, Problem{Path: path, Msg: fmt.Sprintf(format, args...)}})
}

// sortedKeys is m's keys in order, so that problems come in the same order
// every run.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// walk checks every reference in v.
func (c *refChecker) walk(v any, path string, sc refScope) {
	switch v := v.(type) {
	case map[string]any:
		if fn, arg, ok := intrinsic(v); ok && (fn != "Condition" || sc.conditions) {
			c.intrinsic(fn, arg, path, sc)
			return
		}
		for _, k := range sortedKeys(v) {
			c.walk(v[k], path+"."+k, sc)
		}
	case []any:
		for i, e := range v {
			c.walk(e, fmt.Sprintf("%s[%d]", path, i), sc)
		}
	}
}

func (c *refChecker) intrinsic(fn string, arg any, path string, sc refScope) {
	switch fn {
	case "Ref":
		name, ok := arg.(string)
		if !ok {
			c.addf(sc, path, "Ref takes a name, not %s", describe(arg))
			return
		}
		c.ref(name, "Ref "+name, path, sc)
	case "Fn::GetAtt":
		res, attr, ok := getAttArgs(arg)
		args, isList := arg.([]any)
		if !ok && (res == "" || !isList) {
			c.addf(sc, path, "Fn::GetAtt takes [resource, attribute]")
			return
		}
		if !ok {
			c.walk(args[1], path, sc) // the attribute's name is an intrinsic
		}
		c.getAtt(res, attr, ok, "Fn::GetAtt "+res+"."+attr, path, sc)
	case "Fn::Sub":
		tmpl, vars, ok := subArgs(arg)
		if !ok {
			c.addf(sc, path, "Fn::Sub takes a string or [string, variables]")
			return
		}
		for _, k := range sortedKeys(vars) {
			c.walk(vars[k], path+"(Fn::Sub variable "+k+")", sc)
		}
		parseSub(tmpl, func(string) {}, func(sv subVariable) {
			if _, local := vars[sv.name]; local || sv.literal {
				return
			}
			what := fmt.Sprintf("Fn::Sub ${%s}", sv.name)
			if res, attr, dotted := strings.Cut(sv.name, "."); dotted {
				c.getAtt(res, attr, true, what, path, sc)
				return
			}
			c.ref(sv.name, what, path, sc)
		})
	case "Fn::If":
		args, ok := arg.([]any)
		if !ok || len(args) != 3 {
			c.addf(sc, path, "Fn::If takes [condition, value if true, value if false]")
			return
		}
		c.condition(args[0], "Fn::If", path, sc)
		for i, branch := range args[1:] {
			c.walk(branch, fmt.Sprintf("%s(Fn::If branch %d)", path, i+1), sc)
		}
	case "Condition":
		c.condition(arg, "Condition", path, sc)
	default:
		c.walk(arg, path+"("+fn+")", sc)
	}
}

// ref checks that a Ref (or a ${name} of Fn::Sub) names a parameter, a
// resource or a pseudo parameter.
func (c *refChecker) ref(name, what, path string, sc refScope) {
	t := c.ctx.t
	if _, ok := t.Parameters[name]; ok || pseudoParameters[name] {
		return
	}
	if c.isResource(name) {
		if sc.conditions {
			c.addf(sc, path, "%s names a resource: a condition can only refer to parameters", what)
		}
		return
	}
	// SAM lets a Ref name what it makes of a resource: MyFunction.Alias,
	// MyApi.Stage, ...
	if base, _, ok := strings.Cut(name, "."); ok && strings.HasPrefix(t.Resources[base].Type, "AWS::Serverless::") {
		return
	}
	c.addf(sc, path, "%s names no parameter, resource or pseudo parameter", what)
}

// getAtt checks that a Fn::GetAtt (or a ${X.Attr} of Fn::Sub) names a
// resource, and an attribute the resource's schema has.
func (c *refChecker) getAtt(res, attr string, attrKnown bool, what, path string, sc refScope) {
	t := c.ctx.t
	if sc.conditions {
		c.addf(sc, path, "%s: a condition can only refer to parameters", what)
		return
	}
	r, ok := t.Resources[res]
	if !ok && c.samMade[res] {
		return
	}
	if !ok {
		if _, isParam := t.Parameters[res]; isParam {
			c.addf(sc, path, "%s names a parameter: Fn::GetAtt takes a resource", what)
			return
		}
		c.addf(sc, path, "%s names no resource", what)
		return
	}
	if !attrKnown {
		return
	}
	s := c.ctx.attributeSchema(res)
	if s == nil || !s.native {
		return
	}
	if _, found := s.attribute(attr); !found {
		c.addf(sc, path, "%s: %s (%s) has no attribute %s", what, res, r.Type, attr)
	}
}

// condition checks that name names a condition of the template.
func (c *refChecker) condition(name any, what, path string, sc refScope) {
	s, ok := name.(string)
	if !ok {
		c.addf(sc, path, "%s takes a condition's name, not %s", what, describe(name))
		return
	}
	if _, ok := c.ctx.t.Conditions[s]; !ok {
		c.addf(sc, path, "%s %s names no condition of the template's Conditions", what, s)
	}
}

// resourceAttributes are the keys a resource entry may have besides Type,
// Properties and Metadata; samAttributes those SAM adds for its own.
var (
	resourceAttributes = map[string]bool{
		"Condition": true, "DependsOn": true, "DeletionPolicy": true, "UpdateReplacePolicy": true,
		"CreationPolicy": true, "UpdatePolicy": true,
	}
	samAttributes  = map[string]bool{"IgnoreGlobals": true, "Connectors": true}
	deletePolicies = []any{"Delete", "Retain", "RetainExceptOnCreate", "Snapshot"}
)

// checkAttributes checks a resource's attributes: known keys,
// DeletionPolicy and UpdateReplacePolicy among the policies AWS knows,
// DependsOn naming other resources, Condition naming a condition.
func (c *refChecker) checkAttributes(name string, r samtemplate.Resource) {
	sc := refScope{resource: name, typ: r.Type}
	for _, k := range sortedKeys(r.Attributes) {
		v := r.Attributes[k]
		switch k {
		case "DeletionPolicy", "UpdateReplacePolicy":
			if !inEnum(v, deletePolicies) || !isType(v, "string") {
				c.addf(sc, k, "%s is not one of %s", describe(v), enumList(deletePolicies))
			}
		case "Condition":
			c.condition(v, "Condition", k, sc)
		case "DependsOn":
			names := []any{v}
			if list, ok := v.([]any); ok {
				names = list
			}
			for i, n := range names {
				path := k
				if _, ok := v.([]any); ok {
					path = fmt.Sprintf("%s[%d]", k, i)
				}
				s, ok := n.(string)
				switch {
				case !ok:
					c.addf(sc, path, "DependsOn takes resource names, not %s", describe(n))
				case s == name:
					c.addf(sc, path, "a resource cannot depend on itself")
				case !c.isResource(s):
					c.addf(sc, path, "DependsOn %s names no resource", s)
				}
			}
		default:
			if !resourceAttributes[k] && (!samAttributes[k] || !strings.HasPrefix(r.Type, "AWS::Serverless::")) {
				c.addf(sc, k, "is not a resource attribute CloudFormation knows (a misplaced property?)")
			}
		}
	}
}

// checkReferences holds every Ref, Fn::GetAtt, Fn::Sub variable, Fn::If
// condition and Condition of the template to what it names, and each
// resource's attributes.
func (c *refChecker) checkReferences() {
	t := c.ctx.t
	for _, name := range sortedKeys(t.Conditions) {
		c.walk(t.Conditions[name], "Conditions."+name, refScope{conditions: true})
	}
	for _, name := range sortedKeys(t.Globals) {
		c.walk(t.Globals[name], "Globals."+name, refScope{})
	}
	for _, name := range sortedKeys(t.Resources) {
		r := t.Resources[name]
		sc := refScope{resource: name, typ: r.Type}
		for _, k := range sortedKeys(r.Properties) {
			c.walk(r.Properties[k], "Properties."+k, sc)
		}
		for _, k := range sortedKeys(r.Metadata) {
			c.walk(r.Metadata[k], "Metadata."+k, sc)
		}
		c.checkAttributes(name, r)
	}
	for _, name := range sortedKeys(t.Outputs) {
		out, ok := t.Outputs[name].(map[string]any)
		if !ok {
			continue
		}
		for _, k := range sortedKeys(out) {
			path := "Outputs." + name + "." + k
			if k == "Condition" {
				c.condition(out[k], "Condition", path, refScope{})
				continue
			}
			c.walk(out[k], path, refScope{})
		}
	}
}
