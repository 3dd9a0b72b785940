package localdeploy

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// LocalAccountID is the account id the emulators use in ARNs.
const LocalAccountID = "000000000000"

// resolver turns intrinsic functions into values, given what has been
// created so far.
type resolver struct {
	tpl       *samtemplate.Template
	stackName string
	region    string
	refs      map[string]string            // logical id -> Ref value
	attrs     map[string]map[string]string // logical id -> attribute -> value
	params    map[string]string            // parameter -> the deployment's value, where not its default (localParameters)
}

func (r *resolver) pseudo(name string) (string, bool) {
	switch name {
	case "AWS::StackName":
		return r.stackName, true
	case "AWS::Region":
		return r.region, true
	case "AWS::AccountId":
		return LocalAccountID, true
	case "AWS::Partition":
		return "aws", true
	case "AWS::URLSuffix":
		return "amazonaws.com", true
	}
	return "", false
}

func (r *resolver) ref(name string) (string, error) {
	if v, ok := r.pseudo(name); ok {
		return v, nil
	}
	if p, ok := r.tpl.Parameters[name]; ok {
		v, given := r.params[name]
		if !given && p.Default == nil {
			return "", fmt.Errorf("parameter %s has no default", name)
		}
		if !given {
			v = fmt.Sprint(p.Default)
		}
		if err := allowed(p, v); err != nil {
			return "", fmt.Errorf("parameter %s: %w", name, err)
		}
		return v, nil
	}
	if v, ok := r.refs[name]; ok {
		return v, nil
	}
	return "", fmt.Errorf("unresolved Ref %s: no such parameter or created resource", name)
}

// CheckParameter refuses a value the parameter p does not allow, as
// CloudFormation refuses the deployment (see allowed): a command that
// takes a parameter's value from its user checks it before it starts
// anything.
func CheckParameter(p samtemplate.Parameter, v string) error { return allowed(p, v) }

// allowed refuses a parameter value the template does not allow, as
// CloudFormation refuses the deployment: one not among AllowedValues, or
// a number outside MinValue and MaxValue.
func allowed(p samtemplate.Parameter, v string) error {
	if len(p.AllowedValues) > 0 && !slices.ContainsFunc(p.AllowedValues, func(a any) bool { return fmt.Sprint(a) == v }) {
		return fmt.Errorf("%s is not one of its allowed values %v", v, p.AllowedValues)
	}
	if p.Type != "Number" || (p.MinValue == nil && p.MaxValue == nil) {
		return nil
	}
	n, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return fmt.Errorf("%s is not a number", v)
	}
	if lo, ok := number(p.MinValue); ok && n < lo {
		return fmt.Errorf("%s is below its MinValue %v", v, p.MinValue)
	}
	if hi, ok := number(p.MaxValue); ok && n > hi {
		return fmt.Errorf("%s is above its MaxValue %v", v, p.MaxValue)
	}
	return nil
}

// listParameter says whether a parameter of type typ is a list:
// CommaDelimitedList, List<Number> or an AWS-specific List<...>.
func listParameter(typ string) bool {
	return typ == "CommaDelimitedList" || strings.HasPrefix(typ, "List<")
}

func number(v any) (float64, bool) {
	if v == nil {
		return 0, false
	}
	n, err := strconv.ParseFloat(fmt.Sprint(v), 64)
	return n, err == nil
}

func (r *resolver) getAtt(res, attr string) (string, error) {
	if v, ok := r.attrs[res][attr]; ok {
		return v, nil
	}
	return "", fmt.Errorf("Fn::GetAtt %s.%s: not available locally", res, attr)
}

var subVar = regexp.MustCompile(`\$\{([^}!][^}]*)\}`)

func (r *resolver) sub(s string, vars map[string]any) (string, error) {
	var firstErr error
	out := subVar.ReplaceAllStringFunc(s, func(m string) string {
		name := m[2 : len(m)-1]
		var v string
		var err error
		if x, ok := vars[name]; ok {
			var rv any
			if rv, err = r.resolveChosen(x); err == nil {
				v = fmt.Sprint(rv)
			}
		} else if res, attr, dotted := strings.Cut(name, "."); dotted && !strings.HasPrefix(name, "AWS::") {
			v, err = r.getAtt(res, attr)
		} else {
			v, err = r.ref(name)
		}
		if err != nil && firstErr == nil {
			firstErr = err
		}
		return v
	})
	return strings.ReplaceAll(out, "${!", "${"), firstErr
}

// resolve returns v with every intrinsic function replaced by its value:
// each Fn::If by the branch its condition picks, decided on the
// parameters' defaults, and each value that is Ref AWS::NoValue dropped
// (a v that is itself AWS::NoValue gives nil).
func (r *resolver) resolve(v any) (any, error) {
	chosen, present, err := r.tpl.Choose(v, r.ref)
	if err != nil || !present {
		return nil, err
	}
	return r.resolveChosen(chosen)
}

// resolveChosen resolves a value whose Fn::If are decided.
func (r *resolver) resolveChosen(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 1 {
			for k, arg := range x {
				if k == "Ref" || strings.HasPrefix(k, "Fn::") {
					return r.intrinsic(k, arg)
				}
			}
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			rv, err := r.resolveChosen(e)
			if err != nil {
				return nil, err
			}
			out[k] = rv
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			rv, err := r.resolveChosen(e)
			if err != nil {
				return nil, err
			}
			out[i] = rv
		}
		return out, nil
	}
	return v, nil
}

func (r *resolver) intrinsic(fn string, arg any) (any, error) {
	switch fn {
	case "Ref":
		name, _ := arg.(string)
		v, err := r.ref(name)
		if err != nil || !listParameter(r.tpl.Parameters[name].Type) {
			return v, err
		}
		// A list parameter is a list where it is read whole, as
		// CloudFormation gives it (Fn::Join, a property of list type).
		var items []any
		for _, s := range strings.Split(v, ",") {
			items = append(items, s)
		}
		return items, nil
	case "Fn::GetAtt":
		parts, _ := arg.([]any)
		if len(parts) != 2 {
			return nil, fmt.Errorf("Fn::GetAtt needs [resource, attribute], got %v", arg)
		}
		return r.getAtt(fmt.Sprint(parts[0]), fmt.Sprint(parts[1]))
	case "Fn::Sub":
		switch a := arg.(type) {
		case string:
			return r.sub(a, nil)
		case []any:
			if len(a) == 2 {
				s, _ := a[0].(string)
				vars, _ := a[1].(map[string]any)
				return r.sub(s, vars)
			}
		}
		return nil, fmt.Errorf("Fn::Sub: unexpected argument %v", arg)
	case "Fn::Join":
		a, _ := arg.([]any)
		if len(a) != 2 {
			return nil, fmt.Errorf("Fn::Join needs [delimiter, list]")
		}
		list, err := r.resolveChosen(a[1])
		if err != nil {
			return nil, err
		}
		items, _ := list.([]any)
		parts := make([]string, len(items))
		for i, it := range items {
			parts[i] = fmt.Sprint(it)
		}
		return strings.Join(parts, fmt.Sprint(a[0])), nil
	case "Fn::FindInMap":
		a, _ := arg.([]any)
		if len(a) != 3 {
			return nil, fmt.Errorf("Fn::FindInMap needs [map, top-level key, second-level key], got %v", arg)
		}
		keys := make([]string, 3)
		for i, k := range a {
			rk, err := r.resolveChosen(k)
			if err != nil {
				return nil, err
			}
			keys[i] = fmt.Sprint(rk)
		}
		return r.tpl.FindInMap(keys[0], keys[1], keys[2])
	}
	return nil, fmt.Errorf("%s is not supported by the local deployer", fn)
}

// dependencies returns the logical ids of resources that v refers to.
func dependencies(v any, resources map[string]samtemplate.Resource, into map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, arg := range x {
			switch k {
			case "Ref":
				if name, ok := arg.(string); ok {
					if _, isRes := resources[name]; isRes {
						into[name] = true
					}
				}
			case "Fn::GetAtt":
				if parts, ok := arg.([]any); ok && len(parts) == 2 {
					into[fmt.Sprint(parts[0])] = true
				}
			case "Fn::Sub":
				s, _ := arg.(string)
				if a, ok := arg.([]any); ok && len(a) > 0 {
					s, _ = a[0].(string)
					dependencies(a[1:], resources, into)
				}
				for _, m := range subVar.FindAllStringSubmatch(s, -1) {
					name, _, _ := strings.Cut(m[1], ".")
					if _, isRes := resources[name]; isRes {
						into[name] = true
					}
				}
			default:
				dependencies(arg, resources, into)
			}
		}
	case []any:
		for _, e := range x {
			dependencies(e, resources, into)
		}
	}
}

// order returns the resources' logical ids so that each comes after every
// resource it refers to; ties in name order. A cycle is an error.
func order(resources map[string]samtemplate.Resource) ([]string, error) {
	deps := map[string]map[string]bool{}
	names := make([]string, 0, len(resources))
	for name, r := range resources {
		deps[name] = map[string]bool{}
		dependencies(r.Properties, resources, deps[name])
		names = append(names, name)
	}
	sort.Strings(names)
	var out []string
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(string, []string) error
	visit = func(n string, path []string) error {
		switch state[n] {
		case 1:
			return fmt.Errorf("dependency cycle: %s", strings.Join(append(path, n), " -> "))
		case 2:
			return nil
		}
		state[n] = 1
		ds := make([]string, 0, len(deps[n]))
		for d := range deps[n] {
			ds = append(ds, d)
		}
		sort.Strings(ds)
		for _, d := range ds {
			if _, ok := resources[d]; !ok {
				return fmt.Errorf("%s refers to unknown resource %s", n, d)
			}
			if err := visit(d, append(path, n)); err != nil {
				return err
			}
		}
		state[n] = 2
		out = append(out, n)
		return nil
	}
	for _, n := range names {
		if err := visit(n, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Resolve returns v, a part of tpl such as a function's Environment or an
// event source's Properties, with its intrinsic functions resolved against
// what res created for stack stackName in region and the parameter values
// it gave (Result.Parameters). A Ref to a resource that was not deployed
// locally is an error.
func Resolve(tpl *samtemplate.Template, res *Result, stackName, region string, v any) (any, error) {
	r := &resolver{tpl: tpl, stackName: stackName, region: region, refs: res.Resources, attrs: res.Attributes, params: res.Parameters}
	return r.resolve(v)
}
