package jobs

// SpecSHA256 is the digest of a spec an intent's row holds, for a test that
// writes one by hand.
var SpecSHA256 = specHash
