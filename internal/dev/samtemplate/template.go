package samtemplate

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Template is a parsed SAM or CloudFormation template.
type Template struct {
	Globals    map[string]any // SAM's Globals section
	Parameters map[string]Parameter
	Conditions map[string]any
	// Mappings are the template's lookup tables: map name, top-level key,
	// second-level key, value (Fn::FindInMap).
	Mappings  map[string]any
	Resources map[string]Resource
	Outputs   map[string]any
	// Rules are the template's rules: each a mapping with an optional
	// RuleCondition and its Assertions (RefusedBy).
	Rules map[string]any
}

// Parameter is a template parameter. MinValue and MaxValue are a Number
// parameter's bounds, nil when the template sets none, and AllowedValues
// the values it may take, nil when the template lists none: the values a
// deployment can give it, where Default is only the one it gets unless told
// otherwise. AllowedPattern is a String parameter's pattern ("" for none),
// and Description what the template says of it.
type Parameter struct {
	Type           string
	Default        any
	MinValue       any
	MaxValue       any
	AllowedValues  []any
	AllowedPattern string
	Description    string
}

// Resource is one entry of Resources.
type Resource struct {
	Type       string
	Properties map[string]any
	Metadata   map[string]any // SAM reads BuildMethod here
	// Attributes are the entry's other keys: DependsOn, Condition,
	// DeletionPolicy, UpdateReplacePolicy, ... (nil when it has none).
	Attributes map[string]any
}

// Load reads and parses the template at path.
func Load(path string) (*Template, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("samtemplate: %w", err)
	}
	t, err := Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("samtemplate: %s: %w", path, err)
	}
	return t, nil
}

// Parse parses a template.
func Parse(raw []byte) (*Template, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("empty template")
	}
	w := &walker{budget: maxNodes}
	v, err := w.value(doc.Content[0], 0)
	if err != nil {
		return nil, err
	}
	top, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("template is not a mapping")
	}
	t := &Template{Parameters: map[string]Parameter{}, Resources: map[string]Resource{}}
	if ps, ok := top["Parameters"].(map[string]any); ok {
		for name, p := range ps {
			pm, _ := p.(map[string]any)
			typ, _ := pm["Type"].(string)
			allowed, _ := pm["AllowedValues"].([]any)
			pattern, _ := pm["AllowedPattern"].(string)
			desc, _ := pm["Description"].(string)
			t.Parameters[name] = Parameter{Type: typ, Default: pm["Default"], MinValue: pm["MinValue"], MaxValue: pm["MaxValue"],
				AllowedValues: allowed, AllowedPattern: pattern, Description: desc}
		}
	}
	rs, ok := top["Resources"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("template has no Resources mapping")
	}
	for name, r := range rs {
		rm, ok := r.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("resource %s is not a mapping", name)
		}
		typ, _ := rm["Type"].(string)
		if typ == "" {
			return nil, fmt.Errorf("resource %s has no Type", name)
		}
		props, _ := rm["Properties"].(map[string]any)
		if props == nil {
			props = map[string]any{}
		}
		meta, _ := rm["Metadata"].(map[string]any)
		var attrs map[string]any
		for k, v := range rm {
			if k != "Type" && k != "Properties" && k != "Metadata" {
				if attrs == nil {
					attrs = map[string]any{}
				}
				attrs[k] = v
			}
		}
		t.Resources[name] = Resource{Type: typ, Properties: props, Metadata: meta, Attributes: attrs}
	}
	t.Conditions, _ = top["Conditions"].(map[string]any)
	t.Mappings, _ = top["Mappings"].(map[string]any)
	t.Outputs, _ = top["Outputs"].(map[string]any)
	t.Globals, _ = top["Globals"].(map[string]any)
	t.Rules, _ = top["Rules"].(map[string]any)
	return t, nil
}

// OfType returns the names of the resources of type typ, sorted.
func (t *Template) OfType(typ string) []string {
	var names []string
	for name, r := range t.Resources {
		if r.Type == typ {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// intrinsics maps short tags to the long forms of their functions.
var intrinsics = map[string]string{
	"!Ref": "Ref", "!Condition": "Condition",
	"!GetAtt": "Fn::GetAtt", "!Sub": "Fn::Sub", "!Join": "Fn::Join", "!Select": "Fn::Select",
	"!Split": "Fn::Split", "!If": "Fn::If", "!Equals": "Fn::Equals", "!Not": "Fn::Not",
	"!And": "Fn::And", "!Or": "Fn::Or", "!FindInMap": "Fn::FindInMap", "!Base64": "Fn::Base64",
	"!Cidr": "Fn::Cidr", "!GetAZs": "Fn::GetAZs", "!ImportValue": "Fn::ImportValue",
	"!Transform": "Fn::Transform",
}

// Limits against hostile YAML: a recursive alias would never end, and
// aliases of aliases can expand a few lines into billions of nodes.
const (
	maxDepth = 64
	maxNodes = 1 << 20
)

type walker struct {
	budget int // nodes left to visit
}

func (w *walker) value(n *yaml.Node, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("line %d: nested deeper than %d levels (a recursive alias?)", n.Line, maxDepth)
	}
	if w.budget--; w.budget < 0 {
		return nil, fmt.Errorf("line %d: more than %d nodes once aliases are expanded", n.Line, maxNodes)
	}
	if fn, ok := intrinsics[n.Tag]; ok {
		inner := *n
		inner.Tag = ""
		if n.Kind == yaml.ScalarNode {
			inner.Tag = "!!str"
		}
		v, err := w.value(&inner, depth+1)
		if err != nil {
			return nil, err
		}
		if s, ok := v.(string); ok && fn == "Fn::GetAtt" {
			// !GetAtt Resource.Attribute is Fn::GetAtt: [Resource, Attribute].
			res, attr, found := strings.Cut(s, ".")
			if !found {
				return nil, fmt.Errorf("line %d: !GetAtt %q is not Resource.Attribute", n.Line, s)
			}
			v = []any{res, attr}
		}
		return map[string]any{fn: v}, nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := w.value(n.Content[i+1], depth+1)
			if err != nil {
				return nil, err
			}
			m[n.Content[i].Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := w.value(c, depth+1)
			if err != nil {
				return nil, err
			}
			s = append(s, v)
		}
		return s, nil
	case yaml.AliasNode:
		return w.value(n.Alias, depth+1)
	case yaml.ScalarNode:
		if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
			return nil, fmt.Errorf("line %d: unknown tag %s", n.Line, n.Tag)
		}
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		return v, nil
	}
	return nil, fmt.Errorf("line %d: unexpected YAML node", n.Line)
}
