package cfnschema

import (
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// fnValue is what an intrinsic function gives, as far as the check can
// tell without deploying: its type, and for a string its text when the
// template fixes it (!Sub "x", !Join of literals) or else the literal
// pieces the text is made of.
type fnValue struct {
	what  string   // the call, for messages: Fn::GetAtt Queue.Arn
	kind  string   // a JSON Schema type, "absent" (AWS::NoValue), or "" when unknown
	text  *string  // kind string: the whole text, when known
	parts []string // kind string, text unknown: literal pieces of it
}

// pseudoParameters are the names a Ref takes besides the template's
// parameters and resources.
var pseudoParameters = map[string]bool{
	"AWS::AccountId": true, "AWS::NotificationARNs": true, "AWS::NoValue": true, "AWS::Partition": true,
	"AWS::Region": true, "AWS::StackId": true, "AWS::StackName": true, "AWS::URLSuffix": true,
}

// intrinsicValue is what the intrinsic call fn(arg) gives. Fn::If is not
// looked at here: Validate checks each of its branches.
func (v *validator) intrinsicValue(fn string, arg any) fnValue {
	switch fn {
	case "Ref":
		name, _ := arg.(string)
		what := "Ref " + name
		if p, ok := v.params[name]; ok {
			return fnValue{what: what, kind: paramKind(p)}
		}
		switch {
		case name == "AWS::NoValue":
			return fnValue{what: what, kind: "absent"}
		case name == "AWS::NotificationARNs":
			return fnValue{what: what, kind: "array"}
		case pseudoParameters[name]:
			return fnValue{what: what, kind: "string"}
		case v.ctx != nil && v.ctx.t.Resources[name].Type == "":
			return fnValue{what: what} // names nothing: the reference check reports it
		}
		return fnValue{what: what, kind: "string"} // a resource's Ref is a string
	case "Fn::GetAtt":
		res, attr, ok := getAttArgs(arg)
		if !ok {
			return fnValue{what: fn}
		}
		what := "Fn::GetAtt " + res + "." + attr
		if v.ctx == nil {
			return fnValue{what: what}
		}
		sch, found := v.ctx.attribute(res, attr)
		if !found || sch == nil {
			return fnValue{what: what}
		}
		types := schemaTypes(sch)
		if len(types) != 1 || types[0] == "object" || types[0] == "null" {
			return fnValue{what: what}
		}
		return fnValue{what: what, kind: types[0]}
	case "Fn::Sub":
		tmpl, vars, ok := subArgs(arg)
		if !ok {
			return fnValue{what: fn}
		}
		what := "Fn::Sub " + strconv.Quote(tmpl)
		text, parts, known := expandSub(tmpl, vars)
		if known {
			return fnValue{what: what, kind: "string", text: &text}
		}
		return fnValue{what: what, kind: "string", parts: parts}
	case "Fn::Join":
		args, ok := arg.([]any)
		if !ok || len(args) != 2 {
			return fnValue{what: fn, kind: "string"}
		}
		delim, delimKnown := samtemplate.ScalarText(args[0])
		known := delimKnown
		list, ok := args[1].([]any)
		if !ok {
			return fnValue{what: fn, kind: "string"} // an intrinsic's list: its length is unknown
		}
		texts := make([]string, 0, len(list))
		var parts []string
		for _, e := range list {
			s, ok := samtemplate.ScalarText(e)
			if !ok {
				known = false
				continue
			}
			texts = append(texts, s)
			parts = append(parts, s)
		}
		if known {
			text := strings.Join(texts, delim)
			return fnValue{what: fn, kind: "string", text: &text}
		}
		if len(list) > 1 && delimKnown {
			parts = append(parts, delim)
		}
		return fnValue{what: fn, kind: "string", parts: parts}
	case "Fn::Base64":
		if s, ok := samtemplate.ScalarText(arg); ok {
			text := base64.StdEncoding.EncodeToString([]byte(s))
			return fnValue{what: fn, kind: "string", text: &text}
		}
		return fnValue{what: fn, kind: "string"}
	case "Fn::ImportValue", "Fn::ToJsonString":
		return fnValue{what: fn, kind: "string"}
	case "Fn::GetAZs", "Fn::Split", "Fn::Cidr":
		return fnValue{what: fn, kind: "array"}
	case "Fn::Length":
		return fnValue{what: fn, kind: "integer"}
	}
	return fnValue{what: fn} // Fn::Select, Fn::FindInMap, Fn::Transform, ...: unknown
}

// kind is the type of what a Ref to the parameter gives.
func paramKind(p samtemplate.Parameter) string {
	switch {
	case isList(p):
		return "array"
	case p.Type == "Number":
		return "number"
	}
	return "string"
}

// isList reports whether a Ref to the parameter gives a list:
// CommaDelimitedList, List<...>, and SSM parameters of those.
func isList(p samtemplate.Parameter) bool {
	t := strings.TrimSuffix(strings.TrimPrefix(p.Type, "AWS::SSM::Parameter::Value<"), ">")
	return t == "CommaDelimitedList" || strings.HasPrefix(t, "List<")
}

func getAttArgs(arg any) (res, attr string, ok bool) {
	switch a := arg.(type) {
	case []any:
		if len(a) != 2 {
			return "", "", false
		}
		res, ok = a[0].(string)
		if !ok {
			return "", "", false
		}
		attr, ok = a[1].(string)
		if !ok {
			return res, "", false // an intrinsic names the attribute
		}
		return res, attr, true
	case string:
		res, attr, ok = strings.Cut(a, ".")
		return res, attr, ok
	}
	return "", "", false
}

// subArgs reads Fn::Sub's argument: a string, or [string, variables].
func subArgs(arg any) (string, map[string]any, bool) {
	switch a := arg.(type) {
	case string:
		return a, nil, true
	case []any:
		if len(a) != 2 {
			return "", nil, false
		}
		s, ok := a[0].(string)
		if !ok {
			return "", nil, false
		}
		vars, ok := a[1].(map[string]any)
		return s, vars, ok
	}
	return "", nil, false
}

// subVariable is one ${...} of a Fn::Sub string.
type subVariable struct {
	name    string // X or X.Attr
	literal bool   // ${!X}: the text ${X}
}

// parseSub splits a Fn::Sub string into literal text and variables,
// calling lit and variable in order.
func parseSub(s string, lit func(string), variable func(subVariable)) {
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			lit(s)
			return
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			lit(s)
			return
		}
		lit(s[:i])
		inner := s[i+2 : i+end]
		if rest, ok := strings.CutPrefix(inner, "!"); ok {
			variable(subVariable{name: rest, literal: true})
		} else {
			variable(subVariable{name: strings.TrimSpace(inner)})
		}
		s = s[i+end+1:]
	}
}

// expandSub gives a Fn::Sub's text when every variable in it is literal
// (a ${!X}, or one of vars with a scalar value), and otherwise the literal
// pieces of it.
func expandSub(tmpl string, vars map[string]any) (text string, parts []string, known bool) {
	var b strings.Builder
	known = true
	parseSub(tmpl, func(s string) {
		b.WriteString(s)
		parts = append(parts, s)
	}, func(sv subVariable) {
		if sv.literal {
			b.WriteString("${" + sv.name + "}")
			parts = append(parts, "${"+sv.name+"}")
			return
		}
		if s, ok := samtemplate.ScalarText(vars[sv.name]); ok {
			b.WriteString(s)
			parts = append(parts, s)
			return
		}
		known = false
	})
	return b.String(), parts, known
}

// canBe reports whether the value may be of JSON Schema type typ, as
// CloudFormation converts scalars: a string holding a number is a number,
// and any scalar passes for a string.
func (f fnValue) canBe(typ string) bool {
	switch f.kind {
	case "string":
		switch typ {
		case "string":
			return true
		case "integer", "number":
			return onlyChars(f.parts, "0123456789+-.eE \t\n")
		case "boolean":
			return onlyChars(f.parts, "truefalsTRUEFALS \t\n")
		}
		return false
	case "array", "object":
		return typ == f.kind
	case "integer", "number":
		return typ == "integer" || typ == "number" || typ == "string"
	case "boolean":
		return typ == "boolean" || typ == "string"
	}
	return true
}

func onlyChars(parts []string, chars string) bool {
	for _, p := range parts {
		if strings.Trim(p, chars) != "" {
			return false
		}
	}
	return true
}

func (f fnValue) describe() string {
	switch f.kind {
	case "string", "integer", "number", "boolean":
		return "a " + f.kind
	case "array":
		return "a list"
	case "object":
		return "an object"
	}
	return "a value"
}

// fits reports whether the value may match schema, as far as its type
// tells: the schema's type, $ref, allOf, and some alternative of anyOf and
// oneOf.
func (v *validator) fits(f fnValue, schema map[string]any, depth int) bool {
	if depth > maxSchemaDepth {
		return true
	}
	if ref, ok := schema["$ref"].(string); ok {
		if target, err := v.resolve(ref); err == nil && !v.fits(f, target, depth+1) {
			return false
		}
	}
	if types := schemaTypes(schema); len(types) > 0 {
		ok := false
		for _, t := range types {
			ok = ok || f.canBe(t)
		}
		if !ok {
			return false
		}
	}
	if all, ok := schema["allOf"].([]any); ok {
		for _, s := range all {
			if sm, ok := s.(map[string]any); ok && !v.fits(f, sm, depth+1) {
				return false
			}
		}
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		alts, _ := schema[kw].([]any)
		if len(alts) == 0 {
			continue
		}
		ok := false
		for _, s := range alts {
			if sm, isMap := s.(map[string]any); isMap && v.fits(f, sm, depth+1) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// checkValue checks what an intrinsic gives against schema: a known text
// as the value itself, otherwise its type.
func (v *validator) checkValue(f fnValue, schema map[string]any, path string, depth int) {
	if f.kind == "" || f.kind == "absent" {
		return
	}
	if f.text != nil {
		if errs := v.try(*f.text, schema, path, depth+1); len(errs) > 0 {
			v.addf(path, "%s gives %s: %s", f.what, describe(*f.text), errs[0].Msg)
		}
		return
	}
	if v.fits(f, schema, depth+1) {
		return
	}
	if types := schemaTypes(schema); len(types) > 0 {
		v.addf(path, "%s gives %s, not %s", f.what, f.describe(), strings.Join(types, " or "))
		return
	}
	v.addf(path, "%s gives %s, which the property's schema does not take", f.what, f.describe())
}
