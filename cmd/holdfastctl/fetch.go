package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/holdfast-go/holdfast/admin"
)

// target is where the admin handler is served.
type target struct {
	base string      // URL without a trailing slash; endpoint paths are appended
	name string      // how errors name it: the -addr the user gave
	tls  *tls.Config // client TLS for https (nil: the system roots, no client certificate)
	// plain is the http URL to fall back to when the node serves plain
	// HTTP and TLS was not asked for (the default directory's files were
	// found); "" otherwise.
	plain string
}

// newTarget accepts HOST:PORT or an http(s) URL (whose path is the prefix
// the handler is mounted under). Errors are *usageError.
func newTarget(addr string) (target, error) {
	addr = strings.TrimSpace(addr)
	bad := func(why string) (target, error) {
		return target{}, &usageError{fmt.Sprintf("-addr %q: %s; want HOST:PORT or http://HOST:PORT[/prefix]", addr, why)}
	}
	if !strings.Contains(addr, "://") {
		if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
			return bad("no port")
		}
		return target{base: "http://" + addr, name: addr}, nil
	}
	u, err := url.Parse(addr)
	switch {
	case err != nil:
		return bad("not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return bad("scheme " + u.Scheme)
	case u.Host == "":
		return bad("no host")
	case u.RawQuery != "" || u.Fragment != "":
		return bad("a query or fragment")
	}
	base := strings.TrimRight(u.String(), "/")
	return target{base: base, name: base}, nil
}

// fetch GETs path (with query, if any) from t and returns the JSON body of
// a 200 answer. Every error names t.
func fetch(t target, path string, timeout time.Duration) ([]byte, error) {
	return exchange(t, http.MethodGet, path, nil, timeout)
}

// post sends req as the JSON body of a POST to path (an admin action) and
// returns the JSON body of a 200 answer. Every error names t.
func post(t target, path string, req any, timeout time.Duration) ([]byte, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	return exchange(t, http.MethodPost, path, b, timeout)
}

// exchange sends one request to t (body nil: none) and returns the JSON
// body of a 200 answer, or an error naming t: unreachable, an error
// answer (with the admin.Error's text), or an answer that is not JSON.
func exchange(t target, method, path string, body []byte, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	answer, err := exchangeOnce(ctx, t, method, path, body, timeout)
	if t.plain != "" && isPlainHTTP(err) {
		t.base, t.tls, t.plain = t.plain, nil, ""
		return exchangeOnce(ctx, t, method, path, body, timeout)
	}
	return answer, err
}

// exchangeOnce is one attempt of exchange.
func exchangeOnce(ctx context.Context, t target, method, path string, body []byte, timeout time.Duration) ([]byte, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if t.tls != nil {
		tr.TLSClientConfig = t.tls.Clone()
	}
	defer tr.CloseIdleConnections()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.name, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "holdfastctl")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return nil, &reachError{fmt.Errorf("cannot reach %s: %s%s", t.name, reachCause(err, timeout), reachHint(t, err)), err}
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s: reading the answer to %s: %s", t.name, path, reachCause(err, timeout))
	}
	isJSON := false
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err == nil {
		isJSON = mt == "application/json"
	}
	if resp.StatusCode != http.StatusOK {
		what := path
		if method != http.MethodGet {
			what = method + " " + path
		}
		if hint := statusHint(t, resp.StatusCode, answer); hint != "" {
			return nil, errors.New(hint)
		}
		return nil, fmt.Errorf("%s answered %s to %s: %s", t.name, resp.Status, what, errorText(answer, isJSON))
	}
	if !isJSON || !json.Valid(answer) {
		return nil, fmt.Errorf("%s answered %s with Content-Type %q, not JSON: is the holdfast admin handler served there?",
			t.name, path, resp.Header.Get("Content-Type"))
	}
	return answer, nil
}

// reachCause says in a few words why a request failed: the innermost
// network error ("connection refused"), or that the timeout passed.
func reachCause(err error, timeout time.Duration) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("no answer within %v", timeout)
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		inner := op.Err
		for u := errors.Unwrap(inner); u != nil; u = errors.Unwrap(inner) {
			inner = u
		}
		return inner.Error()
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// errorText extracts the message of an error answer: the admin.Error's, or
// the first line of a text body, shortened.
func errorText(body []byte, isJSON bool) string {
	var e admin.Error
	if isJSON && json.Unmarshal(body, &e) == nil && e.Error != "" {
		return e.Error
	}
	s, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if s == "" {
		return "(empty body)"
	}
	return s
}
