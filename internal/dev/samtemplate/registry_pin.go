//go:build cfnregistryschemas

// No build sets this file's tag, so it is never compiled. Its import keeps
// github.com/aws-cloudformation/rain in go.mod and go.sum at a pinned
// version: that module ships the CloudFormation registry schemas which
// registry_test.go checks template.yaml against (read from the module
// cache, under internal/aws/cfn/schemas), and go mod tidy, which considers
// every build tag, keeps a requirement that some file imports. The package
// imported is the module's smallest (it needs only gopkg.in/yaml.v3).

package samtemplate

import _ "github.com/aws-cloudformation/rain/cft/visitor"
