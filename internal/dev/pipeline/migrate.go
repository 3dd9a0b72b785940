package pipeline

import (
	"context"
	"fmt"
	"slices"
)

// MigrateFunction is functions/migrate, a PostgreSQL template's
// MigrateFunction: the provider of its DatabaseSchema custom resource,
// which CloudFormation invokes with the stack's Create, Update and Delete,
// not an event source. It is not one of Functions: a local deployment
// applies the schema itself (localdeploy), so the pipeline runs it only
// when asked, under the runtime interface emulator, with
// Config.Bootstraps[MigrateFunction] given (BuildMigrateBootstrap), for
// the tests of its bootstrap; Invoke(ctx, MigrateFunction, request, nil)
// then reaches it, with the settings the template gives it.
const MigrateFunction = "migrate"

// runsMigrate says whether the pipeline runs MigrateFunction: under the
// emulator, on a PostgreSQL template, with its bootstrap given.
func (c *Config) runsMigrate() bool {
	return c.Mode == UnderRIE && c.Bootstraps[MigrateFunction] != "" && TemplateStore(c.Template) == StorePostgres
}

// BuildMigrateBootstrap builds MigrateFunction's bootstrap as cfg says,
// into cfg.Dir/migrate/bootstrap, and returns its path, or an error
// (wrapping ErrInvalidConfig for a bad cfg, or one whose Tags lack
// PostgresTag: functions/migrate is PostgreSQL's alone, and has no file
// to build without it).
func BuildMigrateBootstrap(ctx context.Context, cfg BootstrapConfig) (string, error) {
	if err := cfg.Validate(); err != nil {
		return "", err
	}
	if !slices.Contains(cfg.Tags, PostgresTag) {
		return "", fmt.Errorf("%w: Tags %v lack %q: functions/%s is PostgreSQL's alone", ErrInvalidConfig, cfg.Tags, PostgresTag, MigrateFunction)
	}
	return buildBootstrap(ctx, cfg, MigrateFunction)
}
