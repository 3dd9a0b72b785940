package samtemplate_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// kafkaDeploymentOf is tpl as a deployment with values sees it (the other
// parameters at their defaults): an error if its Rules refuse the
// deployment, else the resources it creates (those whose Condition
// holds), their properties and the Globals and outputs with every Fn::If
// decided and AWS::NoValue dropped. Parameters, conditions and rules are
// tpl's.
func kafkaDeploymentOf(tpl *samtemplate.Template, values map[string]string) (*samtemplate.Template, error) {
	ref := deployedWith(tpl, values)
	rule, err := tpl.RefusedBy(ref)
	switch {
	case err != nil:
		return nil, err
	case rule != "":
		return nil, fmt.Errorf("the rule %q refuses the deployment", rule)
	}
	out := *tpl
	out.Resources = map[string]samtemplate.Resource{}
	for name, r := range tpl.Resources {
		ok, err := tpl.Exists(name, ref)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		props, _, err := tpl.Choose(r.Properties, ref)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		r.Properties, _ = props.(map[string]any)
		out.Resources[name] = r
	}
	for _, m := range []*map[string]any{&out.Globals, &out.Outputs} {
		chosen, _, err := tpl.Choose(*m, ref)
		if err != nil {
			return nil, err
		}
		*m, _ = chosen.(map[string]any)
	}
	return &out, nil
}

// Pseudo parameters of the deployments the checks evaluate: a stack named
// st in eu-west-1.
var kafkaPseudo = map[string]string{
	"AWS::StackName": "st", "AWS::Region": "eu-west-1", "AWS::AccountId": "123456789012",
	"AWS::Partition": "aws", "AWS::URLSuffix": "amazonaws.com",
}

// evaluator computes the strings a deployment makes of a value: literals,
// a parameter's Ref (its value, or its default), a pseudo parameter's,
// Fn::Sub, Fn::Join, Fn::Select and Fn::Split. A resource stands for what
// CloudFormation would give: <Name> for its Ref, <Name.Attr> for an
// attribute.
type evaluator struct {
	tpl    *samtemplate.Template
	values map[string]string
}

func (e evaluator) ref(name string) (string, error) {
	if v, ok := kafkaPseudo[name]; ok {
		return v, nil
	}
	if _, ok := e.tpl.Resources[name]; ok {
		return "<" + name + ">", nil
	}
	return deployedWith(e.tpl, e.values)(name)
}

// str is the string v gives.
func (e evaluator) str(v any) (string, error) {
	if s, ok := samtemplate.ScalarText(v); ok {
		return s, nil
	}
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return "", fmt.Errorf("%v is no string", v)
	}
	for fn, arg := range m {
		args, _ := arg.([]any)
		switch fn {
		case "Ref":
			return e.ref(fmt.Sprint(arg))
		case "Fn::GetAtt":
			return fmt.Sprintf("<%v.%v>", itemAt(args, 0), itemAt(args, 1)), nil
		case "Fn::Sub":
			return e.sub(arg)
		case "Fn::Join":
			items, err := e.list(itemAt(args, 1))
			if err != nil {
				return "", err
			}
			return strings.Join(items, fmt.Sprint(itemAt(args, 0))), nil
		case "Fn::Select":
			items, err := e.list(itemAt(args, 1))
			if err != nil {
				return "", err
			}
			i, err := strconv.Atoi(fmt.Sprint(itemAt(args, 0)))
			if err != nil || i < 0 || i >= len(items) {
				return "", fmt.Errorf("Fn::Select %v of %q: no such item", itemAt(args, 0), items)
			}
			return items[i], nil
		}
		return "", fmt.Errorf("%s does not give a string here", fn)
	}
	return "", nil
}

// list is the list of strings v gives.
func (e evaluator) list(v any) ([]string, error) {
	if items, ok := v.([]any); ok {
		out := make([]string, 0, len(items))
		for _, it := range items {
			s, err := e.str(it)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	m, _ := v.(map[string]any)
	if split, ok := m["Fn::Split"].([]any); ok {
		s, err := e.str(itemAt(split, 1))
		return strings.Split(s, fmt.Sprint(itemAt(split, 0))), err
	}
	if name, ok := m["Ref"].(string); ok && strings.Contains(e.tpl.Parameters[name].Type, "List") {
		s, err := e.ref(name)
		return strings.Split(s, ","), err
	}
	return nil, fmt.Errorf("%v is no list", v)
}

var subVariable = regexp.MustCompile(`\$\{([^}]*)\}`)

func (e evaluator) sub(arg any) (string, error) {
	text, vars := arg, map[string]any{}
	if args, ok := arg.([]any); ok {
		text, _ = itemAt(args, 0).(string)
		vars, _ = itemAt(args, 1).(map[string]any)
	}
	var firstErr error
	out := subVariable.ReplaceAllStringFunc(fmt.Sprint(text), func(m string) string {
		name := m[2 : len(m)-1]
		var s string
		var err error
		switch v, ok := vars[name]; {
		case strings.HasPrefix(name, "!"):
			return "${" + name[1:] + "}"
		case ok:
			s, err = e.str(v)
		case strings.Contains(name, ".") && !strings.HasPrefix(name, "AWS::"):
			s = "<" + name + ">"
		default:
			s, err = e.ref(name)
		}
		if err != nil && firstErr == nil {
			firstErr = err
		}
		return s
	})
	return out, firstErr
}

// itemAt is args[i], nil past its end.
func itemAt(args []any, i int) any {
	if i < len(args) {
		return args[i]
	}
	return nil
}
