// Package testenv gives the service's integration tests (internal/app,
// internal/lambdawire, internal/dev, cmd, test) what they need beyond
// pkg/awstest, whose clients, names, request counter and lost-response
// fault they use directly: the IAM recorder that holds template.yaml's
// roles to the requests the functions make, a part of the template to
// deploy (Only) and its teardown (Teardown), the local stack the run was
// given (Stack), and a Buffer for logs. Only tests import it; the
// libraries' own tests use pkg/awstest alone, so that they reach no
// development tooling.
//
// Endpoints come from the standard variables (AWS_ENDPOINT_URL, or
// AWS_ENDPOINT_URL_SQS, _DYNAMODB, _DYNAMODB_STREAMS and _S3). Integration
// tests carry the build tag "integration"; make test starts the stack, sets
// these variables and runs them. A test that asks for a client without an
// endpoint fails: it never skips, and it never reaches a real account by
// accident.
package testenv
