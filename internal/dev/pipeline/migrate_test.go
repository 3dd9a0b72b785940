package pipeline

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// BuildMigrateBootstrap refuses, before it runs the compiler, a config
// BuildBootstrapsFor refuses and one without the postgres tag (migrate has
// no file to build without it), naming the field.
func TestBuildMigrateBootstrapRefusesABuildWithoutThePostgresTag(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		cfg   BootstrapConfig
		field string
	}{
		"no root":          {BootstrapConfig{Dir: "out", Tags: StoreTags(StorePostgres)}, "Root"},
		"no tag":           {BootstrapConfig{Root: ".", Dir: "out"}, "Tags"},
		"kafka alone":      {BootstrapConfig{Root: ".", Dir: "out", Tags: TransportTags(KafkaTag)}, "Tags"},
		"a tag with comma": {BootstrapConfig{Root: ".", Dir: "out", Tags: []string{"postgres,kafka"}}, "Tags[0]"},
	} {
		_, err := BuildMigrateBootstrap(t.Context(), tc.cfg)
		require.ErrorIs(t, err, ErrInvalidConfig, name)
		require.ErrorContains(t, err, tc.field, name)
	}
}

// The pipeline runs MigrateFunction only under the emulator, on a
// PostgreSQL template, with its bootstrap given.
func TestThePipelineRunsMigrateOnlyUnderTheRIEOnPostgresWhenGivenItsBootstrap(t *testing.T) {
	t.Parallel()
	pg, err := samtemplate.Load("../../../template-postgres.yaml")
	require.NoError(t, err)
	ddb, err := samtemplate.Load("../../../template.yaml")
	require.NoError(t, err)
	with := map[string]string{MigrateFunction: "bin/migrate/bootstrap"}
	for _, tc := range []struct {
		cfg  Config
		runs bool
	}{
		{Config{Template: pg, Mode: UnderRIE, Bootstraps: with}, true},
		{Config{Template: pg, Mode: UnderRIE, Bootstraps: map[string]string{"relay": "bin/relay/bootstrap"}}, false},
		{Config{Template: pg, Mode: InProcess, Bootstraps: with}, false},
		{Config{Template: ddb, Mode: UnderRIE, Bootstraps: with}, false},
	} {
		require.Equal(t, tc.runs, tc.cfg.runsMigrate(), "%+v", tc.cfg.Mode)
	}
}
