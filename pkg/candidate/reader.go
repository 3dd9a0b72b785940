package candidate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Reader streams a candidate's content and checks it against the recorded
// SHA-256 and size: at the end of the content, Read returns a
// *ChecksumError (ErrChecksumMismatch) instead of io.EOF when they do not
// match, and Close returns that error again. A Reader closed before the end
// has checked nothing. It is not safe for concurrent use.
type Reader struct {
	info Info
	body io.ReadCloser
	hash hash.Hash
	read int64
	err  error // sticky: io.EOF, a mismatch or the body's error
}

// Open starts reading the candidate at key. It fails with ErrNotFound when
// there is no object at the key and with ErrInvalidMetadata when the object
// was not written by a Store for this key. The caller must Close the
// Reader.
func (s *Store) Open(ctx context.Context, key Key) (*Reader, error) {
	if err := key.Validate(); err != nil {
		return nil, err
	}
	out, err := s.api.GetObject(ctx, &s3.GetObjectInput{
		Bucket:       aws.String(s.bucket),
		Key:          aws.String(key.String()),
		ChecksumMode: types.ChecksumModeEnabled,
	})
	if err != nil {
		return nil, fmt.Errorf("candidate: open %s: %w", key, classify(err))
	}
	info, err := infoFrom(key, out.Metadata, out.ContentLength, out.ETag, out.LastModified, out.ChecksumSHA256)
	if err != nil {
		_ = out.Body.Close() // the metadata error is the one to report
		return nil, err
	}
	return &Reader{info: info, body: out.Body, hash: sha256.New()}, nil
}

// Info returns the candidate's metadata.
func (r *Reader) Info() Info { return r.info }

// Read reads the content. It returns io.EOF only after the whole content
// has been read and matched its recorded SHA-256 and size.
func (r *Reader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.body.Read(p)
	r.hash.Write(p[:n])
	r.read += int64(n)
	switch {
	case r.read > r.info.Size:
		err = r.mismatch()
	case errors.Is(err, io.EOF):
		err = r.verify()
	case err != nil:
		err = r.bodyFailed(err)
	}
	r.err = err
	return n, err
}

// verify runs at the end of the body.
func (r *Reader) verify() error {
	if r.read != r.info.Size {
		return r.mismatch()
	}
	if got := hex.EncodeToString(r.hash.Sum(nil)); got != r.info.SHA256 {
		return &ChecksumError{Key: r.info.Key, Want: r.info.SHA256, Got: got, WantSize: r.info.Size, GotSize: r.read}
	}
	return io.EOF
}

// bodyFailed wraps an error from the body. The SDK checks S3's own
// checksum of the object, which Open found equal to the recorded SHA-256,
// and fails the read at the end of the body with an error of its own: a
// mismatch found there is reported as this package reports it.
func (r *Reader) bodyFailed(err error) error {
	if r.read == r.info.Size {
		if v := r.verify(); !errors.Is(v, io.EOF) {
			return fmt.Errorf("%w (the S3 client failed the read too: %w)", v, err)
		}
	}
	return fmt.Errorf("candidate: read %s: %w", r.info.Key, err)
}

func (r *Reader) mismatch() error {
	return &ChecksumError{Key: r.info.Key, Want: r.info.SHA256, WantSize: r.info.Size, GotSize: r.read}
}

// Close releases the connection. It returns the mismatch Read reported, if
// any, so that a caller checking only Close still learns of it.
func (r *Reader) Close() error {
	err := r.body.Close()
	if errors.Is(r.err, ErrChecksumMismatch) {
		return r.err
	}
	if err != nil {
		return fmt.Errorf("candidate: close %s: %w", r.info.Key, err)
	}
	return nil
}
