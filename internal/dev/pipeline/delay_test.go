package pipeline

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDelayProxyHoldsTheFirstMatchAndDeliversItOnRelease(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, string(b))
		mu.Unlock()
		_, _ = w.Write([]byte("answer to " + string(b)))
	}))
	defer target.Close()
	p, err := NewDelayProxy(target.URL, func(_ string, b []byte) bool { return strings.Contains(string(b), "accept") })
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()

	post := func(ctx context.Context, body string) (string, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.URL, bytes.NewReader([]byte(body)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", err
		}
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	got, err := post(context.Background(), "claim g1")
	require.NoError(t, err)
	require.Equal(t, "answer to claim g1", got)

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = post(ctx, "accept g1")
	require.True(t, errors.Is(err, context.DeadlineExceeded), "the held request gets no answer: %v", err)
	require.True(t, p.Held())

	got, err = post(context.Background(), "accept g2")
	require.NoError(t, err, "only the first match is held")
	require.Equal(t, "answer to accept g2", got)

	mu.Lock()
	require.Equal(t, []string{"claim g1", "accept g2"}, seen, "the held request has not reached the target")
	mu.Unlock()
	res := p.Release(context.Background())
	require.NoError(t, res.Err)
	require.Equal(t, http.StatusOK, res.Status)
	require.Equal(t, "answer to accept g1", res.Body)
	mu.Lock()
	require.Equal(t, []string{"claim g1", "accept g2", "accept g1"}, seen)
	mu.Unlock()
	require.Error(t, p.Release(context.Background()).Err, "released once")
}
