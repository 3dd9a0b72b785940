package pipeline

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// Functions are the pipeline's functions, by the name of their directory
// under functions/ (template.yaml's CodeUri).
var Functions = []string{"intake", "relay", "worker", "projector", "sweeper"}

// BuildFlags are the flags every bootstrap is built with, as `sam build`'s
// Go builder builds them when GOFLAGS carries them (see the README): no RPC
// shim, no HTTP/2 in net/http (nethttpomithttp2: the bootstraps speak
// HTTP/1.1 only, as the Lambda runtime API does and the AWS endpoints they
// call accept, and the bundle is 0.33 to 0.46 MB of each arm64 bootstrap,
// docs/BENCHMARKS.md), no cgo, no symbol table or DWARF (-s implies the
// linker's -w, so `-ldflags=-s -w`, which GOFLAGS could not carry as one
// value, would change nothing), no local paths, and the AWS SDK's service
// clients compiled without inlining: their generated serializers,
// deserializers and endpoint rules are most of what the SDK adds, and
// inlined they are 0.39 to 0.46 MB more of intake's, the sweeper's and the
// consumers' bootstraps (the SQS relay's one client fits its 64 KiB step),
// for no CPU a request measurably spends on them (an UpdateItem to a
// loopback server: the same CPU time either way, docs/BENCHMARKS.md).
var BuildFlags = []string{"-tags", "lambda.norpc,nethttpomithttp2", "-ldflags", "-s", "-trimpath", "-gcflags", "github.com/aws/aws-sdk-go-v2/service/...=-l"}

// KafkaTag is the build tag that picks each function's Kafka wiring
// (functions/<name>/main_kafka.go): template-kafka.yaml's bootstraps are
// built with it (docs/KAFKA.md; `make bootstraps TRANSPORT=kafka`).
const KafkaTag = "kafka"

// KafkaGCFlags are the compiler flags a Kafka template's bootstraps are
// built with beside BuildFlags: franz-go's client package (kgo) compiled
// without inlining. Only the relay links it, and it is the bootstrap
// nearest the 10 MB goal: this takes 131 KB (two 64 KiB steps) off it,
// for no measurable cost where the relay spends its time (producing 100
// records a round to an in-process broker, about 2 µs a record either way,
// against a network round trip of milliseconds; docs/BENCHMARKS.md).
var KafkaGCFlags = []string{"-gcflags", "github.com/twmb/franz-go/pkg/kgo=-l"}

// PostgresTag is the build tag that picks each function's PostgreSQL
// wiring (functions/<name>/main_postgres.go) and builds functions/migrate:
// template-postgres.yaml's bootstraps are built with it (`make bootstraps
// STORE=postgres`).
const PostgresTag = "postgres"

// StoreTags are the build tags a template's bootstraps need for its STORE:
// none for DynamoDB ("" or "dynamodb"), PostgresTag for "postgres".
func StoreTags(store string) []string {
	if store == PostgresTag {
		return []string{PostgresTag}
	}
	return nil
}

// TransportTags are the build tags a template's bootstraps need for its
// TRANSPORT: none for SQS ("" or "sqs", template.yaml's), KafkaTag for
// "kafka".
func TransportTags(transport string) []string {
	if transport == KafkaTag {
		return []string{KafkaTag}
	}
	return nil
}

// BootstrapConfig says what BuildBootstrapsFor builds. Root and Dir are
// required.
type BootstrapConfig struct {
	Root string // the module's root, built from
	Dir  string // each bootstrap goes to Dir/<name>/bootstrap
	// GOARCH is the bootstraps' architecture (default runtime.GOARCH:
	// template.yaml deploys arm64, the RIE runs the host's).
	GOARCH string
	// Tags are build tags beside BuildFlags' (default none):
	// TransportTags of the template's transport.
	Tags []string
}

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig.
func (c BootstrapConfig) Validate() error {
	switch {
	case c.Root == "":
		return fmt.Errorf("%w: Root is empty", ErrInvalidConfig)
	case c.Dir == "":
		return fmt.Errorf("%w: Dir is empty", ErrInvalidConfig)
	}
	for i, tag := range c.Tags {
		// go build takes the tags as one comma-separated value.
		if tag == "" || strings.ContainsAny(tag, ", \t") || slices.Contains(strings.Split(BuildFlags[1], ","), tag) {
			return fmt.Errorf("%w: Tags[%d] %q is not one more build tag (no comma or space, not one of BuildFlags' again)", ErrInvalidConfig, i, tag)
		}
	}
	return nil
}

// flags are BuildFlags with c's tags added to its -tags, and
// KafkaGCFlags with the kafka tag.
func (c BootstrapConfig) flags() []string {
	flags := slices.Clone(BuildFlags)
	if len(c.Tags) > 0 {
		i := slices.Index(flags, "-tags")
		flags[i+1] = strings.Join(append([]string{flags[i+1]}, c.Tags...), ",")
	}
	if slices.Contains(c.Tags, KafkaTag) {
		flags = append(flags, KafkaGCFlags...)
	}
	return flags
}

// Describe is the build as a person reads it in progress lines: the
// environment and the flags BuildBootstrapsFor passes to go build, so that
// what `make demo RIE=1` says it builds cannot drift from what it builds.
func (c BootstrapConfig) Describe() string {
	return "CGO_ENABLED=0 go build " + strings.Join(c.flags(), " ")
}

// BuildBootstraps builds each function's bootstrap into dir/<name>/bootstrap
// for Linux on goarch (runtime.GOARCH when empty), from the module at root,
// for template.yaml (no tag beyond BuildFlags'): BuildBootstrapsFor with
// those fields.
func BuildBootstraps(ctx context.Context, root, dir, goarch string) (map[string]string, error) {
	return BuildBootstrapsFor(ctx, BootstrapConfig{Root: root, Dir: dir, GOARCH: goarch})
}

// BuildBootstrapsFor builds each function's bootstrap as cfg says and
// returns their paths by function name, or an error (wrapping
// ErrInvalidConfig for a bad cfg).
func BuildBootstrapsFor(ctx context.Context, cfg BootstrapConfig) (map[string]string, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(Functions))
	for _, fn := range Functions {
		bin, err := buildBootstrap(ctx, cfg, fn)
		if err != nil {
			return nil, err
		}
		out[fn] = bin
	}
	return out, nil
}

// buildBootstrap builds functions/<fn>'s bootstrap as cfg (valid) says,
// into cfg.Dir/<fn>/bootstrap, for Linux on cfg.GOARCH.
func buildBootstrap(ctx context.Context, cfg BootstrapConfig, fn string) (string, error) {
	goarch := cfg.GOARCH
	if goarch == "" {
		goarch = runtime.GOARCH
	}
	bin := filepath.Join(cfg.Dir, fn, "bootstrap")
	cmd := exec.CommandContext(ctx, "go", slices.Concat([]string{"build"}, cfg.flags(), []string{"-o", bin, "./functions/" + fn})...)
	cmd.Dir = cfg.Root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("pipeline: build %s: %w\n%s", fn, err, b)
	}
	return bin, nil
}
