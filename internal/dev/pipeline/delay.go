package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// DelayProxy stands between a function and DynamoDB on 127.0.0.1 and holds
// back one request that Match picks: the caller sees no answer (its own
// deadline ends the call), and the request reaches DynamoDB only when
// Release is called. It is the network fault behind the running example:
// worker A's accept is still on its way when A's lease ends, arrives after
// generation 2's accept, and the table's condition refuses it. Every other
// request passes through unchanged.
type DelayProxy struct {
	URL    string // what the function uses as its DynamoDB endpoint
	target *url.URL
	match  func(target string, body []byte) bool
	srv    *http.Server
	client *http.Client

	mu      sync.Mutex
	held    *heldRequest
	matched bool
}

type heldRequest struct {
	header http.Header
	body   []byte
}

// DelayedResult is what DynamoDB answered to the held request once released.
type DelayedResult struct {
	Status int
	Body   string
	Err    error
}

// NewDelayProxy listens on 127.0.0.1 and forwards to target. match is called
// with each request's operation (its X-Amz-Target header, such as
// "DynamoDB_20120810.UpdateItem") and body until it first returns true.
func NewDelayProxy(target string, match func(operation string, body []byte) bool) (*DelayProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("pipeline: proxy target %q: %w", target, err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("pipeline: proxy: %w", err)
	}
	p := &DelayProxy{URL: "http://" + l.Addr().String(), target: u, match: match,
		client: &http.Client{Timeout: 30 * time.Second}}
	p.srv = &http.Server{Handler: http.HandlerFunc(p.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(l) }()
	return p, nil
}

func (p *DelayProxy) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	p.mu.Lock()
	hold := !p.matched && p.match(r.Header.Get("X-Amz-Target"), body)
	if hold {
		p.matched = true
		p.held = &heldRequest{header: r.Header.Clone(), body: body}
	}
	p.mu.Unlock()
	if hold {
		<-r.Context().Done() // no answer: the caller gives up at its deadline
		return
	}
	status, hdr, respBody, err := p.forward(r.Context(), r.Header, body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	for k, vs := range hdr {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(status)
	_, _ = w.Write(respBody)
}

func (p *DelayProxy) forward(ctx context.Context, header http.Header, body []byte) (int, http.Header, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.target.String(), bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header = header.Clone()
	req.Host = p.target.Host
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, err
}

// Held reports whether the request has been caught.
func (p *DelayProxy) Held() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held != nil
}

// Release sends the held request to DynamoDB now and returns its answer.
// The signature of a request stays valid for 5 minutes, so a release soon
// after the hold is what the table would have seen from a slow network.
func (p *DelayProxy) Release(ctx context.Context) DelayedResult {
	p.mu.Lock()
	h := p.held
	p.held = nil
	p.mu.Unlock()
	if h == nil {
		return DelayedResult{Err: errors.New("pipeline: no request is held")}
	}
	status, _, body, err := p.forward(ctx, h.header, h.body)
	return DelayedResult{Status: status, Body: string(body), Err: err}
}

// Close stops the proxy.
func (p *DelayProxy) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return p.srv.Shutdown(ctx)
}
