package samtemplate

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// ErrUnsupported is returned for a condition or a value that the
// evaluation below cannot decide without deploying: a function other than
// those conditions and Fn::FindInMap may use.
var ErrUnsupported = errors.New("samtemplate: not decidable without deploying")

// RefFunc gives the value of a Ref to a parameter or a pseudo parameter,
// the only names CloudFormation lets a condition refer to.
type RefFunc func(name string) (string, error)

// Holds reports whether the template's condition name is true, with ref
// giving the parameters' values.
func (t *Template) Holds(name string, ref RefFunc) (bool, error) {
	return t.holds(name, ref, 0)
}

func (t *Template) holds(name string, ref RefFunc, depth int) (bool, error) {
	c, ok := t.Conditions[name]
	if !ok {
		return false, fmt.Errorf("samtemplate: no condition %s", name)
	}
	v, err := t.truth(c, ref, depth+1)
	if err != nil {
		return false, fmt.Errorf("samtemplate: condition %s: %w", name, err)
	}
	return v, nil
}

// truth evaluates Fn::Equals, Fn::Not, Fn::And, Fn::Or and Condition.
func (t *Template) truth(v any, ref RefFunc, depth int) (bool, error) {
	if depth > maxDepth {
		return false, fmt.Errorf("conditions nested deeper than %d (a cycle?)", maxDepth)
	}
	fn, arg, ok := single(v)
	if !ok {
		return false, fmt.Errorf("%w: %v is no condition", ErrUnsupported, v)
	}
	if fn == "Condition" {
		name, _ := arg.(string)
		return t.holds(name, ref, depth+1)
	}
	args, _ := arg.([]any)
	switch fn {
	case "Fn::Equals":
		if len(args) != 2 {
			return false, fmt.Errorf("Fn::Equals takes two values, not %v", arg)
		}
		a, err := t.scalar(args[0], ref)
		if err != nil {
			return false, err
		}
		b, err := t.scalar(args[1], ref)
		return a == b, err
	case "Fn::Not":
		if len(args) != 1 {
			return false, fmt.Errorf("Fn::Not takes one condition, not %v", arg)
		}
		x, err := t.truth(args[0], ref, depth+1)
		return !x, err
	case "Fn::And", "Fn::Or":
		if len(args) < 2 {
			return false, fmt.Errorf("%s takes at least two conditions, not %v", fn, arg)
		}
		and := fn == "Fn::And"
		for _, a := range args {
			x, err := t.truth(a, ref, depth+1)
			if err != nil {
				return false, err
			}
			if x != and {
				return x, nil
			}
		}
		return and, nil
	case "Fn::Contains":
		// A rule's function (conditions have no lists to search): whether
		// the string is a member of the list.
		if len(args) != 2 {
			return false, fmt.Errorf("Fn::Contains takes [list, string], not %v", arg)
		}
		list, err := t.stringList(args[0], ref)
		if err != nil {
			return false, err
		}
		s, err := t.scalar(args[1], ref)
		return slices.Contains(list, s), err
	}
	return false, fmt.Errorf("%w: %s in a condition", ErrUnsupported, fn)
}

// stringList is a list of strings: a literal list of scalars, or a Ref to a
// list parameter (CommaDelimitedList or List<...>), whose value
// CloudFormation splits at each comma and trims of spaces; an empty
// value is the list of one empty string.
func (t *Template) stringList(v any, ref RefFunc) ([]string, error) {
	if items, ok := v.([]any); ok {
		out := make([]string, len(items))
		for i, item := range items {
			s, err := t.scalar(item, ref)
			if err != nil {
				return nil, err
			}
			out[i] = s
		}
		return out, nil
	}
	fn, arg, ok := single(v)
	name, _ := arg.(string)
	if p, found := t.Parameters[name]; ok && fn == "Ref" && found && isListType(p.Type) {
		raw, err := ref(name)
		if err != nil {
			return nil, err
		}
		out := strings.Split(raw, ",")
		for i := range out {
			out[i] = strings.TrimSpace(out[i])
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: %v as a list", ErrUnsupported, v)
}

func isListType(typ string) bool {
	return typ == "CommaDelimitedList" || strings.HasPrefix(typ, "List<")
}

// RefusedBy returns the name of the first rule (in name order) that
// refuses a deployment whose parameters ref gives, "" when every rule
// lets it through: as CloudFormation does, a rule whose RuleCondition
// holds (or that has none) refuses it unless each of its Assertions'
// Assert holds. Rules use the conditions' functions and Fn::Contains; the
// other functions only rules have (Fn::EachMemberIn, ...) are ErrUnsupported.
func (t *Template) RefusedBy(ref RefFunc) (string, error) {
	names := make([]string, 0, len(t.Rules))
	for name := range t.Rules {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		rule, _ := t.Rules[name].(map[string]any)
		if c, ok := rule["RuleCondition"]; ok {
			applies, err := t.truth(c, ref, 0)
			if err != nil {
				return "", fmt.Errorf("samtemplate: rule %s: RuleCondition: %w", name, err)
			}
			if !applies {
				continue
			}
		}
		assertions, _ := rule["Assertions"].([]any)
		for i, a := range assertions {
			ok, err := t.truth(asMapping(a)["Assert"], ref, 0)
			if err != nil {
				return "", fmt.Errorf("samtemplate: rule %s: Assertions[%d]: %w", name, i, err)
			}
			if !ok {
				return name, nil
			}
		}
	}
	return "", nil
}

func asMapping(v any) map[string]any { m, _ := v.(map[string]any); return m }

// ScalarText is the text CloudFormation makes of a scalar: a string, a
// boolean or a number as YAML gives it.
func ScalarText(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case bool, int, int64, uint64:
		return fmt.Sprint(v), true
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), true
	}
	return "", false
}

func (t *Template) scalar(v any, ref RefFunc) (string, error) {
	if s, ok := ScalarText(v); ok {
		return s, nil
	}
	fn, arg, ok := single(v)
	switch {
	case ok && fn == "Ref":
		name, _ := arg.(string)
		return ref(name)
	case ok && fn == "Fn::FindInMap":
		got, err := t.lookup(arg, ref)
		if err != nil {
			return "", err
		}
		if s, ok := ScalarText(got); ok {
			return s, nil
		}
		return "", fmt.Errorf("Fn::FindInMap %v gives %v, not a scalar", arg, got)
	}
	return "", fmt.Errorf("%w: %v as a value", ErrUnsupported, v)
}

// lookup is Fn::FindInMap [map, top, second], each key a literal, a Ref
// or a Fn::FindInMap.
func (t *Template) lookup(arg any, ref RefFunc) (any, error) {
	args, _ := arg.([]any)
	if len(args) != 3 {
		return nil, fmt.Errorf("Fn::FindInMap takes [map, top-level key, second-level key], not %v", arg)
	}
	keys := make([]string, 3)
	for i, a := range args {
		s, err := t.scalar(a, ref)
		if err != nil {
			return nil, fmt.Errorf("Fn::FindInMap: %w", err)
		}
		keys[i] = s
	}
	return t.FindInMap(keys[0], keys[1], keys[2])
}

// FindInMap returns Mappings[name][top][second], as Fn::FindInMap does;
// a missing map or key is an error (CloudFormation fails the deployment).
func (t *Template) FindInMap(name, top, second string) (any, error) {
	m, ok := t.Mappings[name].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("samtemplate: Fn::FindInMap: no mapping %s", name)
	}
	level, ok := m[top].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("samtemplate: Fn::FindInMap: mapping %s has no key %q", name, top)
	}
	v, ok := level[second]
	if !ok {
		return nil, fmt.Errorf("samtemplate: Fn::FindInMap: mapping %s.%s has no key %q", name, top, second)
	}
	return v, nil
}

// Choose returns v with each Fn::If replaced by the branch its condition
// picks, and with every value that is Ref AWS::NoValue dropped from its
// mapping or list (a v that is itself AWS::NoValue gives nil and false).
// Other intrinsics are left as they are.
func (t *Template) Choose(v any, ref RefFunc) (any, bool, error) {
	return t.choose(v, ref, 0)
}

func (t *Template) choose(v any, ref RefFunc, depth int) (any, bool, error) {
	if depth > maxDepth {
		return nil, false, fmt.Errorf("samtemplate: nested deeper than %d levels", maxDepth)
	}
	if fn, arg, ok := single(v); ok {
		switch {
		case fn == "Ref" && arg == "AWS::NoValue":
			return nil, false, nil
		case fn == "Fn::If":
			args, _ := arg.([]any)
			name, _ := argAt(args, 0).(string)
			if len(args) != 3 || name == "" {
				return nil, false, fmt.Errorf("samtemplate: Fn::If takes [condition, then, else], not %v", arg)
			}
			yes, err := t.Holds(name, ref)
			if err != nil {
				return nil, false, err
			}
			if yes {
				return t.choose(args[1], ref, depth+1)
			}
			return t.choose(args[2], ref, depth+1)
		}
	}
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			c, present, err := t.choose(e, ref, depth+1)
			if err != nil {
				return nil, false, err
			}
			if present {
				out[k] = c
			}
		}
		return out, true, nil
	case []any:
		out := make([]any, 0, len(x))
		for _, e := range x {
			c, present, err := t.choose(e, ref, depth+1)
			if err != nil {
				return nil, false, err
			}
			if present {
				out = append(out, c)
			}
		}
		return out, true, nil
	}
	return v, true, nil
}

// Exists reports whether the resource is created: it names no Condition,
// or its Condition holds.
func (t *Template) Exists(logicalID string, ref RefFunc) (bool, error) {
	r, ok := t.Resources[logicalID]
	if !ok {
		return false, fmt.Errorf("samtemplate: no resource %s", logicalID)
	}
	c, ok := r.Attributes["Condition"]
	if !ok {
		return true, nil
	}
	name, _ := c.(string)
	return t.Holds(name, ref)
}

// single splits a one-key mapping into its key and value: an intrinsic
// function's call.
func single(v any) (string, any, bool) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return "", nil, false
	}
	for k, a := range m {
		return k, a, true
	}
	return "", nil, false
}

func argAt(args []any, i int) any {
	if i < len(args) {
		return args[i]
	}
	return nil
}
