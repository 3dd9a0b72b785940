package candidate

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// MaxPageSize is the most keys one ListObjectsV2 request returns, and so
// the most a Page holds.
const MaxPageSize = 1000

// Page is one page of a listing of every candidate in the bucket, in key
// order (by job id, then generation, then attempt id).
type Page struct {
	// Entries are the objects whose keys are candidate keys.
	Entries []Entry
	// Unparsable are the objects under Prefix whose keys ParseKey refuses:
	// nothing this package writes, so nothing a sweeper may decide about
	// (a folder marker, an object put by hand, a key of a future layout).
	// They are reported here so that whoever lists can count and log them,
	// and are never candidates for deletion.
	Unparsable []Object
	// Next is the key to list after for the next page: the last key this
	// page examined, parsable or not. It is "" when the listing reached the
	// end of Prefix.
	Next string
}

// Object is an object listed under Prefix.
type Object struct {
	Key          string
	Size         int64
	LastModified time.Time
	Err          error // why ParseKey refused the key (wraps ErrInvalidKey)
}

// ListPage lists at most limit objects under Prefix whose keys come after
// startAfter ("" for the beginning), with one ListObjectsV2 request (limit
// is capped at MaxPageSize). It is the sweeper's walk over the whole
// bucket: a run examines a bounded number of pages and keeps Next as its
// cursor, so the next run continues there. startAfter need not be a
// candidate key, nor an existing one; a key beyond Prefix yields an empty
// last page.
func (s *Store) ListPage(ctx context.Context, startAfter string, limit int) (Page, error) {
	if limit < 1 {
		return Page{}, fmt.Errorf("candidate: list page: limit %d is not positive", limit)
	}
	in := &s3.ListObjectsV2Input{
		Bucket:  aws.String(s.bucket),
		Prefix:  aws.String(Prefix),
		MaxKeys: aws.Int32(int32(min(limit, MaxPageSize))),
	}
	if startAfter != "" {
		in.StartAfter = aws.String(startAfter)
	}
	out, err := s.api.ListObjectsV2(ctx, in)
	if err != nil {
		return Page{}, fmt.Errorf("candidate: list %s after %q: %w", Prefix, startAfter, classify(err))
	}
	var p Page
	for _, obj := range out.Contents {
		key := aws.ToString(obj.Key)
		k, err := ParseKey(key)
		if err != nil {
			p.Unparsable = append(p.Unparsable, Object{
				Key: key, Size: aws.ToInt64(obj.Size), LastModified: aws.ToTime(obj.LastModified), Err: err,
			})
			continue
		}
		p.Entries = append(p.Entries, Entry{
			Key:          k,
			Size:         aws.ToInt64(obj.Size),
			ETag:         aws.ToString(obj.ETag),
			LastModified: aws.ToTime(obj.LastModified),
		})
	}
	if aws.ToBool(out.IsTruncated) {
		if len(out.Contents) == 0 {
			return Page{}, fmt.Errorf("candidate: list %s after %q: a truncated page without keys", Prefix, startAfter)
		}
		p.Next = aws.ToString(out.Contents[len(out.Contents)-1].Key)
	}
	return p, nil
}
