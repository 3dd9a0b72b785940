package task

import "slices"

// SpecCheck is a task's spec check on its own: what Task.ValidateSpec
// answers, as a function that needs nothing the task needs to run (no
// client, no table). A program that only checks specs (the service's
// intake) holds its tasks' SpecChecks in a Checker and builds no task.
type SpecCheck func(spec map[string]string) error

// CheckerConfig configures a Checker: the same names and default as the
// RegistryConfig of the tasks whose specs it checks.
type CheckerConfig struct {
	// Checks maps each task's name to its spec check. Required: at least
	// one, none nil. A name is 1 to MaxNameLength bytes of lower-case
	// letters, digits, '-' and '_'.
	Checks map[string]SpecCheck
	// Default is the name of the task of a spec without SpecTask. It must
	// be a name in Checks. Default "": none, and such a spec is refused
	// (ErrUnknownTask).
	Default string
}

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig, by the rules of RegistryConfig.Validate.
func (c CheckerConfig) Validate() error {
	return validateCatalog("Checks", c.Checks, c.Default, func(f SpecCheck) string {
		if f == nil {
			return "is nil"
		}
		return ""
	})
}

// Checker checks a spec by the task it names, knowing only the tasks'
// spec checks: Registry.ValidateSpec without the tasks. It is safe for
// concurrent use and does not change after NewChecker.
type Checker struct {
	checks catalog[SpecCheck]
}

// NewChecker returns the checker of cfg's checks, or an error wrapping
// ErrInvalidConfig.
func NewChecker(cfg CheckerConfig) (*Checker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Checker{checks: newCatalog(cfg.Checks, cfg.Default)}, nil
}

// ValidateSpec reports why no task can run a job of spec, in the words of
// Registry.ValidateSpec: the spec names an unknown task (an error wrapping
// ErrUnknownTask), or the check of the task it names refuses it (its
// error, prefixed with the task's name). Only the named task's check is
// asked.
func (c *Checker) ValidateSpec(spec map[string]string) error {
	name, check, err := c.checks.lookup(spec)
	if err != nil {
		return err
	}
	return refused(name, check(spec))
}

// Names returns the names of the tasks it checks, sorted.
func (c *Checker) Names() []string { return slices.Clone(c.checks.names) }
