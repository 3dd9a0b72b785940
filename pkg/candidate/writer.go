package candidate

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"mime"
	"os"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"

	"github.com/fifoworker/fifoworker/internal/base/backoff"
)

// Result describes a stored candidate: what the job store records when it
// accepts it.
type Result struct {
	Key    Key
	SHA256 string // hex
	Size   int64
	ETag   string
	// AlreadyExisted is true when the key already held an object with this
	// SHA-256 and size: an earlier send of this same write had succeeded
	// (its response was lost, or the task ran twice with the same attempt
	// id and produced the same bytes). The stored object is the one
	// described, so the write is treated as done.
	AlreadyExisted bool
}

// Writer spools one candidate to a temporary file and uploads it on
// Commit. The task writes the content into it; memory use does not depend
// on the size. Close without Commit discards the content; Close after
// Commit does nothing, so
//
//	w, err := store.Create(ctx, key)
//	if err != nil { ... }
//	defer w.Close()
//	... write ...
//	res, err := w.Commit()
//
// never leaves a spool file behind. A Writer is not safe for concurrent use.
type Writer struct {
	s    *Store
	ctx  context.Context
	key  Key
	file SpoolFile
	room *Reservation // given back by Close
	buf  *bufio.Writer
	hash hash.Hash
	size int64
	err  error // sticky: the first failed Write
	done bool  // committed or closed
}

// Create starts a candidate at key: Reserve, then the reservation's
// Create, whose room the Writer gives back when it is closed. ctx bounds
// the wait for room and the whole write: a Write after ctx is done fails,
// and Commit's upload stops with it.
func (s *Store) Create(ctx context.Context, key Key) (*Writer, error) {
	if err := key.Validate(); err != nil {
		return nil, err
	}
	r, err := s.Reserve(ctx)
	if err != nil {
		return nil, fmt.Errorf("candidate: create %s: %w", key, err)
	}
	w, err := r.Create(ctx, key)
	if err != nil {
		r.Release()
		return nil, err
	}
	return w, nil
}

// create opens a spool for key.
func (s *Store) create(ctx context.Context, key Key) (*Writer, error) {
	if err := key.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("candidate: create %s: %w", key, err)
	}
	f, err := s.cfg.Spool.Create()
	if err != nil {
		return nil, fmt.Errorf("candidate: create %s: spool: %w", key, err)
	}
	return &Writer{s: s, ctx: ctx, key: key, file: f, buf: bufio.NewWriterSize(f, spoolBufferSize), hash: sha256.New()}, nil
}

// Put writes everything r yields as the candidate at key. It is Create,
// io.Copy and Commit; see Commit for the outcomes.
func (s *Store) Put(ctx context.Context, key Key, r io.Reader) (Result, error) {
	w, err := s.Create(ctx, key)
	if err != nil {
		return Result{}, err
	}
	defer func() { _ = w.Close() }() // after Commit a no-op; before, the discard of a failed write
	if _, err := io.Copy(w, r); err != nil {
		if w.err != nil {
			return Result{}, err // already says what and where
		}
		return Result{}, fmt.Errorf("candidate: put %s: read content: %w", key, err)
	}
	return w.Commit()
}

// Key returns the key the writer will store.
func (w *Writer) Key() Key { return w.key }

// Size returns how many bytes have been written so far.
func (w *Writer) Size() int64 { return w.size }

// Err returns the error of the first failed Write, which every later Write
// and Commit return too, or nil. A task may drop a Write's error; its
// caller still learns why the candidate cannot be committed (ErrTooLarge,
// a full spool).
func (w *Writer) Err() error { return w.err }

// Write appends p to the spool. After a failed Write, every later Write
// and Commit fails with the same error.
func (w *Writer) Write(p []byte) (int, error) {
	switch {
	case w.done:
		return 0, fmt.Errorf("candidate: write %s: %w", w.key, os.ErrClosed)
	case w.err != nil:
		return 0, w.err
	}
	if err := w.ctx.Err(); err != nil {
		w.err = fmt.Errorf("candidate: write %s: %w", w.key, err)
		return 0, w.err
	}
	if int64(len(p)) > w.s.cfg.MaxSize-w.size {
		w.err = fmt.Errorf("candidate: write %s: more than %d bytes: %w", w.key, w.s.cfg.MaxSize, ErrTooLarge)
		return 0, w.err
	}
	n, err := w.buf.Write(p)
	w.hash.Write(p[:n])
	w.size += int64(n)
	if err != nil {
		w.err = fmt.Errorf("candidate: write %s: spool: %w", w.key, err)
		return n, w.err
	}
	return n, nil
}

// Commit uploads the spooled content with If-None-Match: * and removes the
// spool, whatever the outcome. It returns an error wrapping
//   - ErrExists (an *ExistsError) when the key holds an object with other
//     content; that object is left unchanged;
//   - the context's error when ctx ended first;
//   - the S3 error otherwise, including a 409 ConditionalRequestConflict
//     that persisted through every retry.
//
// When the key already holds an object with the same SHA-256 and size,
// Commit succeeds with Result.AlreadyExisted set. A Writer commits once.
func (w *Writer) Commit() (Result, error) {
	if w.done {
		return Result{}, fmt.Errorf("candidate: commit %s: %w", w.key, os.ErrClosed)
	}
	// The outcome is the upload's: a failure to close a spool whose content
	// has been uploaded, or discarded, changes nothing in S3.
	defer func() { _ = w.Close() }()
	if w.err != nil {
		return Result{}, w.err
	}
	if err := w.buf.Flush(); err != nil {
		return Result{}, fmt.Errorf("candidate: commit %s: spool: %w", w.key, err)
	}
	var sum [sha256.Size]byte
	w.hash.Sum(sum[:0])
	return w.s.upload(w.ctx, w.key, w.file, w.size, sum)
}

// Close discards the content unless it was committed, and removes the
// spool. It may be called more than once.
func (w *Writer) Close() error {
	if w.done {
		return nil
	}
	w.done = true
	err := w.file.Close()
	if w.room != nil {
		w.room.free()
	}
	if err != nil {
		return fmt.Errorf("candidate: close %s: %w", w.key, err)
	}
	return nil
}

// upload sends the spool in one PutObject, retrying on 409. The retry is
// this loop rather than the SDK's retryer: it holds for any S3API, not only
// an *s3.Client; its attempts count 409s alone, where the retryer's
// MaxAttempts also counts throttling and 5xx retries of the same call; and
// it takes nothing from the client-wide retry quota that every other call
// of the client draws on.
func (s *Store) upload(ctx context.Context, key Key, spool io.ReaderAt, size int64, sum [sha256.Size]byte) (Result, error) {
	hexSum := hex.EncodeToString(sum[:])
	contentType := mime.TypeByExtension("." + key.Ext)
	if contentType == "" {
		contentType = "application/octet-stream"
	}
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return Result{}, fmt.Errorf("candidate: put %s: %w", key, err)
		}
		out, err := s.api.PutObject(ctx, &s3.PutObjectInput{
			Bucket:         aws.String(s.bucket),
			Key:            aws.String(key.String()),
			Body:           io.NewSectionReader(spool, 0, size), // a fresh reader per send
			ContentLength:  aws.Int64(size),
			ContentType:    aws.String(contentType),
			IfNoneMatch:    aws.String("*"),
			ChecksumSHA256: aws.String(base64.StdEncoding.EncodeToString(sum[:])),
			Metadata: map[string]string{
				metaJobID:      key.JobID,
				metaGeneration: strconv.FormatInt(key.Generation, 10),
				metaAttemptID:  key.AttemptID,
				metaSHA256:     hexSum,
			},
		}, signWithHash(hexSum))
		switch {
		case err == nil:
			return Result{Key: key, SHA256: hexSum, Size: size, ETag: aws.ToString(out.ETag)}, nil
		case isAPIError(err, codePreconditionFailed, 412):
			return s.existing(ctx, key, hexSum, size)
		case isAPIError(err, codeConflict, 409) && attempt < s.cfg.ConflictAttempts:
			if err := backoff.Sleep(ctx, backoff.Delay(s.cfg.ConflictBackoff, maxConflictBackoff, attempt)); err != nil {
				return Result{}, fmt.Errorf("candidate: put %s: waiting to retry after a conflict: %w", key, err)
			}
		case isAPIError(err, codeConflict, 409):
			return Result{}, fmt.Errorf("candidate: put %s: still conflicting after %d attempts: %w", key, attempt, err)
		default:
			return Result{}, fmt.Errorf("candidate: put %s: %w", key, err)
		}
	}
}

// existing decides what a 412 means: our own earlier success when the
// object in S3 has our hash and size, ErrExists otherwise.
func (s *Store) existing(ctx context.Context, key Key, sum string, size int64) (Result, error) {
	info, err := s.Head(ctx, key)
	if err != nil {
		return Result{}, fmt.Errorf("%w (comparing with it failed: %w)", &ExistsError{Key: key, Ours: sum}, err)
	}
	if info.SHA256 == sum && info.Size == size {
		return Result{Key: key, SHA256: sum, Size: size, ETag: info.ETag, AlreadyExisted: true}, nil
	}
	return Result{}, &ExistsError{Key: key, SHA256: info.SHA256, Ours: sum}
}

// signWithHash has the SDK sign the upload with the SHA-256 computed while
// spooling, instead of reading the whole spool once more to compute it
// (which it does for a plain-HTTP endpoint). S3 checks the signed hash
// against the body it receives.
func signWithHash(sum string) func(*s3.Options) {
	mw := middleware.InitializeMiddlewareFunc("candidate.PayloadHash",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			return next.HandleInitialize(v4.SetPayloadHash(ctx, sum), in)
		})
	return func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Initialize.Add(mw, middleware.After)
		})
	}
}
