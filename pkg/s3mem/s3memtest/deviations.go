package s3memtest

// Deviation names a way a server is known to differ from AWS S3. Run
// checks AWS's behaviour unless the server is declared to deviate; then
// it checks the server's own, as described here, so that a server that is
// fixed is noticed too, and the declaration can go.
type Deviation string

// The deviations of the S3 emulator of this repository's local stack
// (gofakes3, at the version internal/dev/localstack pins), found by
// TestIntegrationConformance. No caller in this repository relies on what
// they change: s3mem, which declares none, does what AWS does.
const (
	// IfNoneMatchIgnored: a put with If-None-Match other than "*" is
	// made as if it had none, where S3 refuses it with 501 NotImplemented.
	IfNoneMatchIgnored Deviation = "If-None-Match other than * is ignored"
	// ChecksumsAsPlainHeaders: a put's checksums (ChecksumSHA256, or the
	// CRC32 the SDK adds) are kept like any other x-amz- header: checked
	// against nothing, so a put whose checksum does not match its body is
	// stored (S3 refuses it with 400 BadDigest), left out of the put's
	// answer (S3 returns them), and returned by every HeadObject, whether
	// or not it asks with ChecksumMode ENABLED (S3 returns them only then).
	ChecksumsAsPlainHeaders Deviation = "checksums are plain headers"
	// MaxKeysBelowOneIgnored: a listing with MaxKeys 0 or below lists a
	// page of the default size, where S3 lists nothing for 0 and refuses
	// a negative MaxKeys with 400 InvalidArgument.
	MaxKeysBelowOneIgnored Deviation = "MaxKeys below 1 is ignored"
	// FullPageNamesANextToken: a page of exactly MaxKeys keys names a
	// next token even when it ends the listing, and says it is truncated
	// when any key follows it in the bucket, under the prefix or not; S3
	// does neither, and names a token only on a truncated page. (The page
	// after such a token is then empty.)
	FullPageNamesANextToken Deviation = "a full page names a next token"
	// ListEntriesLoose: a listing's entries give LastModified to the
	// millisecond, where S3's listings, and the emulator's own HeadObject
	// and GetObject, give the whole second; and no StorageClass, where S3
	// gives STANDARD.
	ListEntriesLoose Deviation = "a listing's entries are loose"
	// ReplaceKeepsMetadata: a put over an object keeps the old object's
	// user metadata and checksums where it sets none of its own, where S3
	// replaces the whole object. An object put with a SHA-256 checksum
	// and then replaced without one keeps the old checksum, so the SDK
	// fails every read of it to the end.
	ReplaceKeepsMetadata Deviation = "a replacing put keeps the old metadata"
)

var knownDeviations = []Deviation{
	IfNoneMatchIgnored, ChecksumsAsPlainHeaders, MaxKeysBelowOneIgnored, FullPageNamesANextToken, ListEntriesLoose,
	ReplaceKeepsMetadata,
}
