package testenv

import (
	"fmt"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// Only returns a template of the named resources alone, with everything
// their values may refer to besides other resources (parameters,
// conditions, mappings, globals): what a test deploys of template.yaml.
func Only(tpl *samtemplate.Template, logicalIDs ...string) (*samtemplate.Template, error) {
	out := &samtemplate.Template{Globals: tpl.Globals, Parameters: tpl.Parameters, Conditions: tpl.Conditions,
		Mappings: tpl.Mappings, Resources: make(map[string]samtemplate.Resource, len(logicalIDs))}
	for _, id := range logicalIDs {
		r, ok := tpl.Resources[id]
		if !ok {
			return nil, fmt.Errorf("testenv: the template declares no %s", id)
		}
		out.Resources[id] = r
	}
	return out, nil
}
