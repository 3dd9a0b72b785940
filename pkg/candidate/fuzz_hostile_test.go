package candidate

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/base/checksum"
)

// FuzzInfoFrom: an object's metadata, which anyone who can write to the
// bucket controls, is read without a panic. It is accepted only when it
// names the key's job, generation and attempt and a hex SHA-256 that
// agrees with S3's own checksum, if S3 gave a full-object one; anything
// else is refused with ErrInvalidMetadata or ErrChecksumMismatch. The
// metadata the writer records for a key is accepted with its hash.
func FuzzInfoFrom(f *testing.F) {
	sum := checksum.SHA256Hex([]byte("x\n"))
	raw, _ := hex.DecodeString(sum)
	s3sum := base64.StdEncoding.EncodeToString(raw)
	f.Add("job-42", int64(2), "attempt-b", "job-42", "2", "attempt-b", sum, int64(2), s3sum, "Job-Id")
	f.Add("job-42", int64(2), "attempt-b", "job-42", "02", "attempt-b", sum, int64(2), "", "job-id")
	f.Add("job-42", int64(1), "a", "job-42", "1", "a", strings.ToUpper(sum), int64(-1), s3sum+"-3", "JOB-ID")
	f.Add("job-42", int64(1), "a", "job-43", "1", "a", sum, int64(0), "not base64", "job-id")
	f.Fuzz(func(t *testing.T, jobID string, gen int64, attempt, metaJob, metaGen, metaAttempt, metaSum string, size int64, s3Checksum, jobKey string) {
		key, err := NewKey(jobID, gen, attempt, "ndjson")
		if err != nil {
			return
		}
		meta := map[string]string{jobKey: metaJob, metaGeneration: metaGen, metaAttemptID: metaAttempt, metaSHA256: metaSum}
		modified := time.Unix(1793782950, 0).UTC()
		info, err := infoFrom(key, meta, &size, aws.String(`"etag"`), &modified, &s3Checksum)
		if err != nil {
			require.True(t, errors.Is(err, ErrInvalidMetadata) || errors.Is(err, ErrChecksumMismatch), err.Error())
		} else {
			require.Equal(t, key, info.Key)
			require.True(t, checksum.IsSHA256Hex(info.SHA256))
			require.Equal(t, metaSum, info.SHA256)
			require.Equal(t, size, info.Size)
			require.GreaterOrEqual(t, info.Size, int64(0))
			require.True(t, strings.EqualFold(jobKey, metaJobID) && metaJob == key.JobID, "accepted another job's metadata")
			require.Equal(t, strconv.FormatInt(key.Generation, 10), metaGen)
			require.Equal(t, key.AttemptID, metaAttempt)
		}
		_, err = infoFrom(key, meta, nil, nil, nil, nil)
		require.ErrorIs(t, err, ErrInvalidMetadata, "no content length")

		// What the writer records.
		recorded := map[string]string{metaJobID: key.JobID, metaGeneration: strconv.FormatInt(key.Generation, 10), metaAttemptID: key.AttemptID, metaSHA256: sum}
		info, err = infoFrom(key, recorded, aws.Int64(2), nil, nil, aws.String(s3sum))
		require.NoError(t, err)
		require.Equal(t, sum, info.SHA256)
	})
}
