package pgopen

// IAMConfig is iamConfig, for the tests of package pgopen_test.
var IAMConfig = iamConfig
