package cfnschema_test

// The registry schemas are files of the module rainModule names, which
// registrySchemas reads from the module cache at the version go.mod
// requires. This import keeps that requirement there: go mod tidy keeps a
// module that a test of the main module imports, and this package's test
// binary is the only build that links it (TestTheCLIDoesNotLinkTheValidator
// checks the CLI's). The package is the module's smallest: it needs only
// gopkg.in/yaml.v3.
import _ "github.com/aws-cloudformation/rain/cft/visitor"
