package pgopen

// IAMConfig is iamConfig, for the tests of package pgopen_test.
var IAMConfig = iamConfig

// Bound is bound, for the tests of package pgopen_test.
var Bound = bound
