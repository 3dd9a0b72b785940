package cfnschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// Registry reads CloudFormation resource provider (registry)
// schemas, the JSON schemas AWS publishes for each resource type, from a
// directory laid out as dir/aws/<service>/<type>.json (AWS::SQS::Queue in
// dir/aws/sqs/queue.json), each file with its typeName.
type Registry struct {
	dir string

	mu     sync.Mutex
	loaded map[string]*ResourceSchema
}

// ErrInvalidConfig is wrapped by NewRegistry's error for a configuration
// that cannot work; the message names the field.
var ErrInvalidConfig = errors.New("cfnschema: invalid configuration")

// RegistryConfig configures a Registry.
type RegistryConfig struct {
	// Dir is the directory of the schemas, laid out as Registry says.
	// Required: an existing directory.
	Dir string
}

// Validate reports a field that cannot work, wrapping ErrInvalidConfig.
func (c RegistryConfig) Validate() error {
	if c.Dir == "" {
		return fmt.Errorf("%w: Dir is empty", ErrInvalidConfig)
	}
	return nil
}

// NewRegistry reads schemas from cfg.Dir as they are needed, or returns
// an error wrapping ErrInvalidConfig.
func NewRegistry(cfg RegistryConfig) (*Registry, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// Checked here, not by Validate, which reads no files: a wrong path
	// would otherwise read as every type's schema missing.
	if fi, err := os.Stat(cfg.Dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%w: Dir %q is not a directory", ErrInvalidConfig, cfg.Dir)
	}
	return &Registry{dir: cfg.Dir, loaded: map[string]*ResourceSchema{}}, nil
}

// ResourceSchema is one resource type's registry schema.
type ResourceSchema struct {
	TypeName string
	root     map[string]any
	readOnly [][]string // paths under Properties that a template may not set
	patterns *patternCache
	// native: the schema has handlers, so its resource's Fn::GetAtt
	// attributes are among its properties (older types' are not always).
	native bool
}

// Schema returns the registry schema of a resource type such as
// AWS::SQS::Queue.
func (r *Registry) Schema(typeName string) (*ResourceSchema, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.loaded[typeName]; ok {
		return s, nil
	}
	parts := strings.Split(typeName, "::")
	if len(parts) != 3 || parts[0] != "AWS" {
		return nil, fmt.Errorf("cfnschema: %q is not an AWS resource type", typeName)
	}
	path := filepath.Join(r.dir, "aws", strings.ToLower(parts[1]), strings.ToLower(parts[2])+".json")
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cfnschema: no registry schema for %s: %w", typeName, err)
	}
	s, err := ParseResourceSchema(raw)
	if err != nil {
		return nil, fmt.Errorf("cfnschema: %s: %w", path, err)
	}
	if s.TypeName != typeName {
		return nil, fmt.Errorf("cfnschema: %s holds the schema of %s, not %s", path, s.TypeName, typeName)
	}
	r.loaded[typeName] = s
	return s, nil
}

// ParseResourceSchema parses one registry schema document.
func ParseResourceSchema(raw []byte) (*ResourceSchema, error) {
	var root map[string]any
	if err := json.Unmarshal(raw, &root); err != nil {
		return nil, err
	}
	name, _ := root["typeName"].(string)
	if name == "" {
		return nil, fmt.Errorf("no typeName")
	}
	s := &ResourceSchema{TypeName: name, root: root, patterns: &patternCache{compiled: map[string]*regexp.Regexp{}}}
	_, s.native = root["handlers"].(map[string]any)
	ro, _ := root["readOnlyProperties"].([]any)
	for _, p := range ro {
		ptr, _ := p.(string)
		if rest, ok := strings.CutPrefix(ptr, "/properties/"); ok {
			s.readOnly = append(s.readOnly, strings.Split(rest, "/"))
		}
	}
	return s, nil
}

// Validate checks a resource's Properties against the schema. It returns
// every problem found, each naming the property's path.
//
// It checks the subset of JSON Schema the registry schemas use: type,
// enum, const, properties, patternProperties, additionalProperties,
// required, items, $ref (to #/definitions/... or #/properties/...),
// oneOf, anyOf, allOf, minLength, maxLength, pattern (when Go's regexp
// accepts it), minimum, maximum, minItems and maxItems; and that no
// read-only property is set. Not checked: format, uniqueItems,
// multipleOf, dependencies, minProperties, maxProperties.
//
// Scalars are read as CloudFormation reads them: a string property takes
// a number or a boolean (CloudFormation passes it on as a string), an
// integer or number property takes a string that parses as one, and a
// boolean property takes "true" or "false".
//
// Intrinsic functions are checked by what they give. Each branch of Fn::If
// is checked like the value itself (AWS::NoValue, an absent property,
// passes). A Ref to a template parameter is checked with each value the
// template lets the parameter take: its Default, its AllowedValues,
// MinValue and MaxValue (a list parameter's split at commas), or, when it
// names none, by the parameter's type; in Check, not a value under which
// the Fn::If branches or the Condition the Ref is under would not hold,
// or which the template's Rules refuse (the other parameters at their
// defaults). A text the template fixes (Fn::Sub
// without variables, Fn::Join of literals, Fn::Base64 of a literal) is
// checked as that text. Otherwise the result's type is: Fn::Sub, Fn::Join,
// Fn::Base64, Fn::ImportValue and a resource's Ref give a string (which
// passes for a number or a boolean only if its literal pieces could make
// one), Fn::Split, Fn::GetAZs, Fn::Cidr and AWS::NotificationARNs a list,
// Fn::GetAtt what the attribute's schema says (Check only). What
// Fn::Select, Fn::FindInMap and the like give is unknown and passes.
// params are the template's parameters (may be nil).
func (s *ResourceSchema) Validate(props map[string]any, params map[string]samtemplate.Parameter) []Problem {
	return s.validate(props, params, nil, "Properties")
}

// validate checks props; assume are the conditions the resource exists
// under (its Condition).
func (s *ResourceSchema) validate(props map[string]any, params map[string]samtemplate.Parameter, ctx *registryContext, root string, assume ...assumption) []Problem {
	v := &validator{schema: s, params: params, ctx: ctx, assume: assume}
	v.check(props, s.root, root, 0)
	for _, path := range s.readOnly {
		if isSet(props, path) {
			v.addf(root+"."+strings.Join(path, "."), "is read-only: a template cannot set it")
		}
	}
	return v.problems
}

// Problem is a property that does not match its schema.
type Problem struct {
	Path string // from the resource: Properties.KeySchema[0].KeyType
	Msg  string
}

func (p Problem) Error() string { return p.Path + ": " + p.Msg }

func isSet(v any, path []string) bool {
	for _, key := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		if v, ok = m[key]; !ok {
			return false
		}
	}
	return true
}

// validationKeywords are the keywords Validate applies.
var validationKeywords = map[string]bool{
	"type": true, "enum": true, "const": true, "properties": true, "patternProperties": true,
	"additionalProperties": true, "required": true, "items": true, "oneOf": true, "anyOf": true,
	"allOf": true, "minLength": true, "maxLength": true, "pattern": true, "minimum": true,
	"maximum": true, "minItems": true, "maxItems": true,
}

// maxSchemaDepth bounds $ref chains: registry schemas have recursive
// definitions (a rule whose statements hold rules).
const maxSchemaDepth = 64

type validator struct {
	schema *ResourceSchema
	params map[string]samtemplate.Parameter
	ctx    *registryContext // the template the value is in; nil for Validate
	// assume are the conditions the value is under: its resource's
	// Condition, the Fn::If branches it is in.
	assume   []assumption
	problems []Problem
}

// assumption is a condition a value is deployed under, and its truth.
type assumption struct {
	condition string
	holds     bool
}

// conditionOf is the assumption a resource's Condition attribute makes.
func conditionOf(r samtemplate.Resource) []assumption {
	if c, ok := r.Attributes["Condition"].(string); ok {
		return []assumption{{c, true}}
	}
	return nil
}

// deployable reports whether parameter param may have value where v is
// deployed: every condition v is under holds as assumed with param at
// value and the other parameters at their defaults, and the template's
// Rules let that deployment through, or either cannot be decided (then
// the value is checked).
func (v *validator) deployable(param string, value any) bool {
	if v.ctx == nil {
		return true
	}
	ref := func(name string) (string, error) {
		if name == param {
			return fmt.Sprint(value), nil
		}
		if p, ok := v.ctx.t.Parameters[name]; ok && p.Default != nil {
			return fmt.Sprint(p.Default), nil
		}
		return "", samtemplate.ErrUnsupported
	}
	for _, a := range v.assume {
		if holds, err := v.ctx.t.Holds(a.condition, ref); err == nil && holds != a.holds {
			return false
		}
	}
	if refused, err := v.ctx.t.RefusedBy(ref); err == nil && refused != "" {
		return false
	}
	return true
}

func (v *validator) addf(path, format string, args ...any) {
	v.problems = append(v.problems, Problem{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// try reports the problems value would have against schema, without
// keeping them.
func (v *validator) try(value any, schema map[string]any, path string, depth int) []Problem {
	sub := &validator{schema: v.schema, params: v.params, ctx: v.ctx, assume: v.assume}
	sub.check(value, schema, path, depth)
	return sub.problems
}

// intrinsic reports whether value is an intrinsic function call (a map
// with the single key Ref, Condition or Fn::...), and which.
func intrinsic(value any) (string, any, bool) {
	m, ok := value.(map[string]any)
	if !ok || len(m) != 1 {
		return "", nil, false
	}
	for k, arg := range m {
		if k == "Ref" || k == "Condition" || strings.HasPrefix(k, "Fn::") {
			return k, arg, true
		}
	}
	return "", nil, false
}

func (v *validator) check(value any, schema map[string]any, path string, depth int) {
	if depth > maxSchemaDepth {
		return
	}
	if ref, ok := schema["$ref"].(string); ok {
		target, err := v.resolve(ref)
		if err != nil {
			v.addf(path, "schema: %v", err)
			return
		}
		v.check(value, target, path, depth+1)
		// Keywords beside a $ref (registry schemas put a description
		// there, now and then more) apply too.
		rest := map[string]any{}
		for k, kv := range schema {
			if k != "$ref" && validationKeywords[k] {
				rest[k] = kv
			}
		}
		if len(rest) == 0 {
			return
		}
		schema = rest
	}
	if fn, arg, ok := intrinsic(value); ok {
		v.checkIntrinsic(fn, arg, schema, path, depth)
		return
	}
	if types := schemaTypes(schema); len(types) > 0 && !anyType(value, types) {
		v.addf(path, "%s is not of type %s", describe(value), strings.Join(types, " or "))
		return
	}
	if enum, ok := schema["enum"].([]any); ok && !inEnum(value, enum) {
		v.addf(path, "%s is not one of %s", describe(value), enumList(enum))
	}
	if c, ok := schema["const"]; ok && !sameScalar(value, c) {
		v.addf(path, "%s is not %v", describe(value), c)
	}
	v.checkCombinators(value, schema, path, depth)
	switch value := value.(type) {
	case map[string]any:
		v.checkObject(value, schema, path, depth)
	case []any:
		v.checkArray(value, schema, path, depth)
	default:
		v.checkScalar(value, schema, path)
	}
}

func (v *validator) resolve(ref string) (map[string]any, error) {
	for _, section := range []string{"definitions", "properties"} {
		if name, ok := strings.CutPrefix(ref, "#/"+section+"/"); ok {
			defs, _ := v.schema.root[section].(map[string]any)
			if target, ok := defs[name].(map[string]any); ok {
				return target, nil
			}
		}
	}
	return nil, fmt.Errorf("unresolvable $ref %q", ref)
}

func (v *validator) checkIntrinsic(fn string, arg any, schema map[string]any, path string, depth int) {
	switch fn {
	case "Fn::If":
		args, ok := arg.([]any)
		if !ok || len(args) != 3 {
			v.addf(path, "Fn::If takes [condition, value if true, value if false]")
			return
		}
		condition, _ := args[0].(string)
		for i, branch := range args[1:] {
			if name, arg, ok := intrinsic(branch); ok && name == "Ref" && arg == "AWS::NoValue" {
				continue
			}
			v.assume = append(v.assume, assumption{condition, i == 0})
			v.check(branch, schema, fmt.Sprintf("%s(Fn::If branch %d)", path, i+1), depth+1)
			v.assume = v.assume[:len(v.assume)-1]
		}
		return
	case "Ref":
		name, _ := arg.(string)
		if p, ok := v.params[name]; ok {
			if cs := candidates(p); len(cs) > 0 {
				for _, c := range cs {
					if !v.deployable(name, c.value) {
						continue // a value the parameter cannot have where this is deployed
					}
					if errs := v.try(c.value, schema, path, depth+1); len(errs) > 0 {
						v.addf(path, "Ref %s: the parameter's %s %v: %v", name, c.what, c.value, errs[0])
					}
				}
				return
			}
		}
	}
	v.checkValue(v.intrinsicValue(fn, arg), schema, path, depth)
}

// candidate is a value a template lets a parameter take.
type candidate struct {
	what  string
	value any
}

func candidates(p samtemplate.Parameter) []candidate {
	var out []candidate
	if p.Default != nil {
		d := p.Default
		if s, ok := samtemplate.ScalarText(d); ok && isList(p) {
			d = splitList(s)
		}
		out = append(out, candidate{"Default", d})
	}
	for _, a := range p.AllowedValues {
		if isList(p) {
			a = []any{a} // each element of the list is one of them
		}
		out = append(out, candidate{"allowed value", a})
	}
	if p.MinValue != nil {
		out = append(out, candidate{"MinValue", p.MinValue})
	}
	if p.MaxValue != nil {
		out = append(out, candidate{"MaxValue", p.MaxValue})
	}
	return out
}

// splitList is a list parameter's value: its text split at commas.
func splitList(s string) []any {
	if s == "" {
		return []any{}
	}
	var out []any
	for _, e := range strings.Split(s, ",") {
		out = append(out, strings.TrimSpace(e))
	}
	return out
}

func (v *validator) checkCombinators(value any, schema map[string]any, path string, depth int) {
	if all, ok := schema["allOf"].([]any); ok {
		for _, s := range all {
			if sm, ok := s.(map[string]any); ok {
				v.check(value, sm, path, depth+1)
			}
		}
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		alts, ok := schema[kw].([]any)
		if !ok {
			continue
		}
		matched := 0
		var firstErrs []Problem
		for _, s := range alts {
			sm, ok := s.(map[string]any)
			if !ok {
				continue
			}
			errs := v.try(value, sm, path, depth+1)
			if len(errs) == 0 {
				matched++
			} else if firstErrs == nil {
				firstErrs = errs
			}
		}
		switch {
		case matched == 0:
			v.addf(path, "matches none of the %d alternatives of %s (the first: %v)", len(alts), kw, firstErrs[0])
		case kw == "oneOf" && matched > 1 && !holdsIntrinsic(value):
			// With an intrinsic inside, the value may match several
			// alternatives only for want of knowing the intrinsic's value.
			v.addf(path, "matches %d of the alternatives of oneOf, not exactly one", matched)
		}
	}
}

func holdsIntrinsic(value any) bool {
	if _, _, ok := intrinsic(value); ok {
		return true
	}
	switch value := value.(type) {
	case map[string]any:
		for _, e := range value {
			if holdsIntrinsic(e) {
				return true
			}
		}
	case []any:
		for _, e := range value {
			if holdsIntrinsic(e) {
				return true
			}
		}
	}
	return false
}

func (v *validator) checkObject(obj map[string]any, schema map[string]any, path string, depth int) {
	props, _ := schema["properties"].(map[string]any)
	patterns, _ := schema["patternProperties"].(map[string]any)
	closed := schema["additionalProperties"] == false
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		child := path + "." + k
		matched := false
		if ps, ok := props[k].(map[string]any); ok {
			v.check(obj[k], ps, child, depth+1)
			matched = true
		}
		for pat, ps := range patterns {
			re := v.schema.patterns.get(pat)
			if re == nil || !re.MatchString(k) {
				continue
			}
			matched = true
			if psm, ok := ps.(map[string]any); ok {
				v.check(obj[k], psm, child, depth+1)
			}
		}
		if !matched && closed {
			v.addf(child, "unknown property (not in the schema of %s)", v.schema.TypeName)
		}
	}
	required, _ := schema["required"].([]any)
	for _, r := range required {
		name, _ := r.(string)
		if _, ok := obj[name]; !ok {
			v.addf(path, "missing required property %s", name)
		}
	}
}

func (v *validator) checkArray(arr []any, schema map[string]any, path string, depth int) {
	if n, ok := number(schema["minItems"]); ok && float64(len(arr)) < n {
		v.addf(path, "has %d items, fewer than %v", len(arr), n)
	}
	if n, ok := number(schema["maxItems"]); ok && float64(len(arr)) > n {
		v.addf(path, "has %d items, more than %v", len(arr), n)
	}
	items, ok := schema["items"].(map[string]any)
	if !ok {
		return
	}
	for i, e := range arr {
		v.check(e, items, fmt.Sprintf("%s[%d]", path, i), depth+1)
	}
}

func (v *validator) checkScalar(value any, schema map[string]any, path string) {
	if s, ok := value.(string); ok && schemaAllows(schema, "string") {
		n := float64(utf8.RuneCountInString(s))
		if m, ok := number(schema["minLength"]); ok && n < m {
			v.addf(path, "%s is shorter than %v characters", describe(value), m)
		}
		if m, ok := number(schema["maxLength"]); ok && n > m {
			v.addf(path, "%s is longer than %v characters", describe(value), m)
		}
		if pat, ok := schema["pattern"].(string); ok {
			if re := v.schema.patterns.get(pat); re != nil && !re.MatchString(s) {
				v.addf(path, "%s does not match %s", describe(value), pat)
			}
		}
	}
	if !schemaAllows(schema, "integer") && !schemaAllows(schema, "number") {
		return
	}
	x, ok := number(value)
	if !ok {
		return
	}
	if m, ok := number(schema["minimum"]); ok && x < m {
		v.addf(path, "%v is below the minimum %v", value, m)
	}
	if m, ok := number(schema["maximum"]); ok && x > m {
		v.addf(path, "%v is above the maximum %v", value, m)
	}
}

// patternCache compiles a schema's patterns once. A pattern Go's regexp
// cannot compile (ECMA-262 lookarounds, say) is not checked: a string
// property passes it, and a patternProperties entry matches no key.
type patternCache struct {
	mu       sync.Mutex
	compiled map[string]*regexp.Regexp
}

func (c *patternCache) get(pat string) *regexp.Regexp {
	c.mu.Lock()
	defer c.mu.Unlock()
	if re, ok := c.compiled[pat]; ok {
		return re
	}
	// \Z, end of text in Python's and PCRE's dialects, which some
	// schemas use, is \z in Go's.
	re, err := regexp.Compile(strings.ReplaceAll(pat, `\Z`, `\z`))
	if err != nil {
		re = nil
	}
	c.compiled[pat] = re
	return re
}

func schemaTypes(schema map[string]any) []string {
	switch t := schema["type"].(type) {
	case string:
		return []string{t}
	case []any:
		out := make([]string, 0, len(t))
		for _, e := range t {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// schemaAllows reports whether a schema lets a value be of type typ: it
// names it, or names no type at all.
func schemaAllows(schema map[string]any, typ string) bool {
	types := schemaTypes(schema)
	if len(types) == 0 {
		return true
	}
	for _, t := range types {
		if t == typ || (typ == "integer" && t == "number") {
			return true
		}
	}
	return false
}

func anyType(value any, types []string) bool {
	for _, t := range types {
		if isType(value, t) {
			return true
		}
	}
	return false
}

// isType reports whether value is of JSON Schema type typ, as
// CloudFormation converts scalars.
func isType(value any, typ string) bool {
	switch typ {
	case "object":
		_, ok := value.(map[string]any)
		return ok
	case "array":
		_, ok := value.([]any)
		return ok
	case "null":
		return value == nil
	case "string":
		switch value.(type) {
		case string, bool, int, int64, uint64, float64:
			return true
		}
		return false
	case "boolean":
		switch value := value.(type) {
		case bool:
			return true
		case string:
			return strings.EqualFold(value, "true") || strings.EqualFold(value, "false")
		}
		return false
	case "integer":
		x, ok := number(value)
		return ok && x == math.Trunc(x)
	case "number":
		_, ok := number(value)
		return ok
	}
	return false
}

// number reads value as a number: a YAML or JSON number, or a string
// holding one.
func number(value any) (float64, bool) {
	switch n := value.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	case float64:
		return n, true
	case string:
		x, err := strconv.ParseFloat(strings.TrimSpace(n), 64)
		return x, err == nil && !math.IsInf(x, 0) && !math.IsNaN(x)
	}
	return 0, false
}

func inEnum(value any, enum []any) bool {
	for _, e := range enum {
		if sameScalar(value, e) {
			return true
		}
	}
	return false
}

// sameScalar compares scalars as CloudFormation sees them: by their text
// (14 and "14" are the same), numbers by value.
func sameScalar(a, b any) bool {
	x, aok := number(a)
	y, bok := number(b)
	if aok && bok {
		return x == y
	}
	return fmt.Sprint(a) == fmt.Sprint(b)
}

func enumList(enum []any) string {
	parts := make([]string, len(enum))
	for i, e := range enum {
		parts[i] = fmt.Sprint(e)
	}
	if len(parts) > 12 {
		parts = append(parts[:12], "...")
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func describe(value any) string {
	switch value := value.(type) {
	case string:
		return strconv.Quote(value)
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case nil:
		return "null"
	}
	return fmt.Sprint(value)
}

// Result is what Check found.
type Result struct {
	// Checked are the logical ids of the resources checked against a
	// registry schema, and Function.Events.Name for a SAM function's event
	// checked as an event source mapping.
	Checked   []string
	Skipped   []string // "Name (Type): why", for the resources not checked
	Unchecked []string // "Name (Type): what", for parts of checked resources no schema covers
	Problems  []ResourceProblem
}

// ResourceProblem is a Problem of a resource of the template, or, with no
// Resource, of another section (Path Outputs.Url.Value, Conditions.X).
type ResourceProblem struct {
	Resource, Type string
	Problem
}

func (p ResourceProblem) Error() string {
	if p.Resource == "" {
		return p.Path + ": " + p.Msg
	}
	return fmt.Sprintf("Resources.%s (%s).%s: %s", p.Resource, p.Type, p.Path, p.Msg)
}

// Check checks the template against what CloudFormation (and SAM)
// will take of it:
//
//   - the Properties of every plain CloudFormation resource (AWS::...)
//     against its type's registry schema (see Validate), and a few service
//     rules the schemas leave out (Lambda's Timeout and MemorySize limits,
//     an event source mapping's parameters by source: see
//     eventSourceRules). A resource type without a schema is a problem:
//     it is not a type CloudFormation knows.
//   - each AWS::Serverless::Function as the resources SAM makes of it
//     (see checkSAMFunction), and Globals.Function's property names.
//   - every reference: each Ref and Fn::Sub ${Name} names a parameter, a
//     resource or a pseudo parameter (in Conditions, only a parameter or
//     a pseudo parameter); each Fn::GetAtt and ${Name.Attr} a resource,
//     and an attribute its registry schema has (for types with handlers:
//     older types' schemas do not list every attribute); each Fn::If, and
//     each Condition of a resource, an output or a condition, a condition
//     of Conditions.
//   - each resource's attributes: only Condition, DependsOn,
//     DeletionPolicy, UpdateReplacePolicy, CreationPolicy, UpdatePolicy
//     (and SAM's IgnoreGlobals and Connectors on its resources);
//     DeletionPolicy and UpdateReplacePolicy one of Delete, Retain,
//     RetainExceptOnCreate, Snapshot (whether a type supports Snapshot is
//     not checked; nor intrinsics there, which only the
//     AWS::LanguageExtensions transform allows); DependsOn names other
//     resources.
//
// Skipped: SAM's other resources (HttpApi, Api, ...: SAM transforms them,
// and no registry schema describes them) and custom resources. Not
// checked: Fn::FindInMap's map names (Mappings), Rules themselves (a
// parameter value they refuse is only left unchecked: see Validate),
// Outputs' values' types, Export names, circular dependencies, CreationPolicy and
// UpdatePolicy's contents, and whatever an intrinsic's value depends on
// at deploy time.
func Check(t *samtemplate.Template, schemas *Registry) Result {
	ctx := &registryContext{t: t, schemas: schemas}
	var out Result
	for _, name := range sortedKeys(t.Resources) {
		r := t.Resources[name]
		switch {
		case r.Type == "AWS::Serverless::Function":
			out.checkSAMFunction(ctx, name, r)
			continue
		case strings.HasPrefix(r.Type, "AWS::Serverless::"):
			out.Skipped = append(out.Skipped, fmt.Sprintf("%s (%s): a SAM resource, transformed before CloudFormation sees it", name, r.Type))
			continue
		case strings.HasPrefix(r.Type, "Custom::") || r.Type == "AWS::CloudFormation::CustomResource":
			out.Skipped = append(out.Skipped, fmt.Sprintf("%s (%s): a custom resource has no schema", name, r.Type))
			continue
		}
		s, err := schemas.Schema(r.Type)
		if err != nil {
			out.Problems = append(out.Problems, ResourceProblem{name, r.Type, Problem{Path: "Type", Msg: err.Error()}})
			continue
		}
		out.Checked = append(out.Checked, name)
		problems := s.validate(r.Properties, t.Parameters, ctx, "Properties", conditionOf(r)...)
		switch r.Type {
		case "AWS::Lambda::Function":
			problems = append(problems, lambdaFunctionRules(r.Properties, t.Parameters, "Properties")...)
		case "AWS::Lambda::EventSourceMapping":
			problems = append(problems, ctx.eventSourceRules(r.Properties, t.Parameters, "Properties", "")...)
		}
		for _, p := range problems {
			out.Problems = append(out.Problems, ResourceProblem{name, r.Type, p})
		}
	}
	out.checkGlobals(t)
	refs := newRefChecker(ctx)
	refs.checkReferences()
	out.Problems = append(out.Problems, refs.problems...)
	sort.Strings(out.Checked)
	return out
}
