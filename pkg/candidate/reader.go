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
// SHA-256 and size. The check is made by the Read that completes the
// recorded size, so a caller that reads exactly Info().Size bytes (with
// io.ReadFull, say) and never asks for more still learns of a mismatch; that
// Read also looks one byte past the size, so a body longer than recorded is
// a mismatch too. A mismatch is a *ChecksumError (ErrChecksumMismatch),
// returned without data, instead of io.EOF.
//
// Close returns a mismatch again, and finds the one a Read could not (the
// whole size was read, but the end of the body was not seen). A Reader
// closed before the whole size was read has checked nothing and reports
// nothing: reading only the head of a candidate is legitimate. A Reader is
// not safe for concurrent use.
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
// has been read and matched its recorded SHA-256 and size. A Read that
// returns a *ChecksumError returns no data with it: io.ReadFull, for one,
// drops an error that comes with the last bytes it asked for.
func (r *Reader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.body.Read(p)
	r.count(p[:n])
	if err == nil && r.read == r.info.Size {
		// The whole recorded size is here: judge it now, since a caller
		// that asked for exactly that much may never call Read again.
		err = r.probe()
	}
	r.err = r.judge(err)
	if errors.Is(r.err, ErrChecksumMismatch) {
		return 0, r.err
	}
	return n, r.err
}

func (r *Reader) count(b []byte) {
	r.hash.Write(b)
	r.read += int64(len(b))
}

// probe reads one byte past the recorded size: io.EOF there is the end the
// check needs, a byte is a body longer than recorded.
func (r *Reader) probe() error {
	var b [1]byte
	n, err := r.body.Read(b[:])
	r.count(b[:n])
	return err
}

// judge returns the verdict on what has been read, given the body's last
// error: nil while the content goes on, io.EOF or a *ChecksumError at its
// end, or the body's error.
func (r *Reader) judge(bodyErr error) error {
	switch {
	case r.read > r.info.Size:
		return r.mismatch()
	case bodyErr == nil && r.read == r.info.Size:
		// The body has not shown its end yet, but content that does not
		// match is wrong whatever follows.
		return r.contentMismatch()
	case bodyErr == nil:
		return nil
	case errors.Is(bodyErr, io.EOF):
		return r.verify()
	default:
		return r.bodyFailed(bodyErr)
	}
}

// verify runs at the end of the body.
func (r *Reader) verify() error {
	if r.read != r.info.Size {
		return r.mismatch()
	}
	if err := r.contentMismatch(); err != nil {
		return err
	}
	return io.EOF
}

// contentMismatch compares the hash of the whole size, once read, with the
// recorded one.
func (r *Reader) contentMismatch() error {
	if got := hex.EncodeToString(r.hash.Sum(nil)); got != r.info.SHA256 {
		return &ChecksumError{Key: r.info.Key, Want: r.info.SHA256, Got: got, WantSize: r.info.Size, GotSize: r.read}
	}
	return nil
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
// any, so that a caller checking only Close still learns of it. When the
// whole recorded size has been read but the end of the body has not been
// seen (or the size is 0 and nothing was read), Close looks for that end
// first, and reports a body that goes on past the size or content that
// does not match its SHA-256. Before the whole size has been read it checks
// nothing.
func (r *Reader) Close() error {
	var found error // an outcome no Read has returned
	if r.err == nil && r.read == r.info.Size {
		r.err = r.judge(r.probe())
		if !errors.Is(r.err, io.EOF) {
			found = r.err
		}
	}
	err := r.body.Close()
	switch {
	case errors.Is(r.err, ErrChecksumMismatch):
		return r.err
	case found != nil:
		return found
	case err != nil:
		return fmt.Errorf("candidate: close %s: %w", r.info.Key, err)
	}
	return nil
}
