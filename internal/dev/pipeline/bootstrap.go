package pipeline

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// Functions are the pipeline's functions, by the name of their directory
// under functions/ (template.yaml's CodeUri).
var Functions = []string{"intake", "relay", "worker", "projector", "sweeper"}

// BuildFlags are the flags every bootstrap is built with, as `sam build`'s
// Go builder builds them when GOFLAGS carries them (see the README): no RPC
// shim, no cgo, no symbol table or DWARF (-s implies the linker's -w, so
// `-ldflags=-s -w`, which GOFLAGS could not carry as one value, would
// change nothing), no local paths.
var BuildFlags = []string{"-tags", "lambda.norpc", "-ldflags", "-s", "-trimpath"}

// BuildBootstraps builds each function's bootstrap into dir/<name>/bootstrap
// for Linux on goarch (runtime.GOARCH when empty; template.yaml deploys
// arm64, the RIE runs the host's), from the module at root.
func BuildBootstraps(ctx context.Context, root, dir, goarch string) (map[string]string, error) {
	if goarch == "" {
		goarch = runtime.GOARCH
	}
	out := make(map[string]string, len(Functions))
	for _, fn := range Functions {
		bin := filepath.Join(dir, fn, "bootstrap")
		args := append([]string{"build"}, BuildFlags...)
		args = append(args, "-o", bin, "./functions/"+fn)
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
		if b, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("pipeline: build %s: %w\n%s", fn, err, b)
		}
		out[fn] = bin
	}
	return out, nil
}
