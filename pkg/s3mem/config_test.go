package s3mem_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/s3mem"
)

// New and NewFaultyS3 refuse a Config they cannot serve with an error that
// wraps ErrInvalidConfig and names the field; they never panic.
func TestNewRefusesAnInvalidConfig(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, field string
		cfg         s3mem.Config
	}{
		{"no bucket", "Buckets", s3mem.Config{}},
		{"an empty bucket name", "Buckets[1]", s3mem.Config{Buckets: []string{"a", ""}}},
		{"a bucket twice", "Buckets[2]", s3mem.Config{Buckets: []string{"a", "b", "a"}}},
	} {
		_, err := s3mem.New(c.cfg)
		require.ErrorIs(t, err, s3mem.ErrInvalidConfig, c.name)
		require.ErrorContains(t, err, c.field, c.name)
		_, err = s3mem.NewFaultyS3(c.cfg)
		require.ErrorIs(t, err, s3mem.ErrInvalidConfig, c.name)
		require.ErrorContains(t, err, c.field, c.name)
	}
}

// A nil Now is time.Now; a Now given is what LastModified reads.
func TestConfigNow(t *testing.T) {
	t.Parallel()
	m, err := s3mem.New(s3mem.Config{Buckets: []string{"b"}})
	require.NoError(t, err)
	before := time.Now().Truncate(time.Second)
	_, err = m.PutObject(t.Context(), put("k", "x"))
	require.NoError(t, err)
	got, err := m.HeadObject(t.Context(), head("k"))
	require.NoError(t, err)
	require.False(t, got.LastModified.Before(before), "time.Now: %v before %v", got.LastModified, before)
	require.False(t, got.LastModified.After(time.Now()))

	at := time.Date(2026, 3, 1, 12, 0, 0, 900_000_000, time.UTC)
	m, err = s3mem.New(s3mem.Config{Buckets: []string{"b"}, Now: func() time.Time { return at }})
	require.NoError(t, err)
	_, err = m.PutObject(t.Context(), put("k", "x"))
	require.NoError(t, err)
	got, err = m.HeadObject(t.Context(), head("k"))
	require.NoError(t, err)
	require.Equal(t, at.Truncate(time.Second), *got.LastModified)
}
