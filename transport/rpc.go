package transport

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"time"
)

// maxIdlePerAddr is how many idle RPC connections are pooled per address.
const maxIdlePerAddr = 4

// Handler serves inbound RPC.
type Handler interface {
	// ServeRPC handles one request and returns the response body (msgpack,
	// as made by Encode) or an error; returning a *RemoteError sets the code
	// the caller sees. It is called concurrently from many goroutines (one
	// per inbound connection; requests on one connection are served in
	// order). ctx ends when the caller's deadline passes or the Transport
	// closes; Close waits for ServeRPC to return. A panic is recovered and
	// reported to the caller as CodeInternal.
	ServeRPC(ctx context.Context, method string, body []byte) ([]byte, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, method string, body []byte) ([]byte, error)

// ServeRPC calls f.
func (f HandlerFunc) ServeRPC(ctx context.Context, method string, body []byte) ([]byte, error) {
	return f(ctx, method, body)
}

// rpcRequest is the msgpack body of a request frame.
type rpcRequest struct {
	ID      uint64 `msgpack:"i"`
	Method  string `msgpack:"m"`
	Timeout int64  `msgpack:"t,omitempty"` // caller's remaining time in ns; 0: none
	Body    []byte `msgpack:"b"`
	// Cluster is the caller's cluster ID (Config.Cluster), "" when unknown
	// or from a release before it; a receiver of another cluster refuses.
	Cluster string `msgpack:"k,omitempty"`
}

// rpcResponse is the msgpack body of a response frame; Code is empty on
// success.
type rpcResponse struct {
	ID    uint64 `msgpack:"i"`
	Code  string `msgpack:"c,omitempty"`
	Error string `msgpack:"e,omitempty"`
	Body  []byte `msgpack:"b"`
}

// appendFrame appends the frame header (4-byte big-endian length) and body.
func appendFrame(dst, body []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(body)))
	return append(dst, body...)
}

// readFrame reads one frame of at most limit bytes. The body is allocated
// only after the length is checked. It returns an error wrapping
// ErrFrameTooLarge for a bigger length, io.EOF at a clean end before a
// frame, and io.ErrUnexpectedEOF for a truncated one.
func readFrame(r io.Reader, limit int) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if uint64(n) > uint64(limit) {
		return nil, fmt.Errorf("length %d exceeds %d: %w", n, limit, ErrFrameTooLarge)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return body, nil
}

// readRequest reads and decodes one request frame.
func readRequest(r io.Reader, limit int) (rpcRequest, error) {
	var req rpcRequest
	frame, err := readFrame(r, limit)
	if err != nil {
		return req, err
	}
	if err := Decode(frame, &req); err != nil {
		return req, fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	return req, nil
}

// serveRPC serves the requests of one inbound RPC connection in order until
// the connection fails or the Transport closes.
func (t *Transport) serveRPC(c *trackedConn) {
	defer c.Close()
	r := bufio.NewReader(c)
	remote := c.RemoteAddr().String()
	for {
		req, err := readRequest(r, t.cfg.MaxFrameSize)
		switch {
		case err == nil:
		case errors.Is(err, ErrFrameTooLarge):
			t.stats.oversizedFrames.Add(1)
			t.log.Warn("transport: oversized RPC frame", "remote", remote, "error", err)
			return
		case errors.Is(err, ErrProtocol):
			t.stats.badFrames.Add(1)
			t.log.Warn("transport: bad RPC frame", "remote", remote, "error", err)
			return
		default:
			if !errors.Is(err, io.EOF) && !t.isClosed() {
				t.log.Debug("transport: RPC read failed", "remote", remote, "error", err)
			}
			return
		}
		out := appendFrame(nil, t.encodeResponse(t.handle(req)))
		_ = c.SetWriteDeadline(time.Now().Add(t.cfg.DefaultCallTimeout))
		if _, err := c.Write(out); err != nil {
			t.log.Debug("transport: RPC write failed", "remote", remote, "error", err)
			return
		}
	}
}

// handle runs the Handler for one request, bounded by the caller's deadline
// and the Transport's lifetime.
func (t *Transport) handle(req rpcRequest) (resp rpcResponse) {
	resp.ID = req.ID
	box := t.handler.Load()
	if box == nil {
		resp.Code, resp.Error = CodeUnavailable, "no handler"
		return resp
	}
	if msg := t.foreign(req); msg != "" {
		resp.Code, resp.Error = CodeForeignCluster, msg
		return resp
	}
	ctx, cancel := t.ctx, context.CancelFunc(func() {})
	if req.Timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.Timeout))
	}
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			t.log.Error("transport: RPC handler panicked", "method", req.Method, "panic", r)
			resp.Body, resp.Code, resp.Error = nil, CodeInternal, fmt.Sprintf("handler panic: %v", r)
		}
	}()
	body, err := box.h.ServeRPC(ctx, req.Method, req.Body)
	if err != nil {
		resp.Code, resp.Error = toRemoteError(err)
		return resp
	}
	resp.Body = body
	return resp
}

// foreign says why a request from a node of another cluster is refused, or
// "" when it is not: either side's cluster unknown, the same cluster, or a
// method of Config.AnyCluster.
func (t *Transport) foreign(req rpcRequest) string {
	if req.Cluster == "" || t.cfg.Cluster == nil {
		return ""
	}
	local := t.cfg.Cluster()
	if local == "" || local == req.Cluster || slices.Contains(t.cfg.AnyCluster, req.Method) {
		return ""
	}
	t.stats.foreignCluster.Add(1)
	t.log.Warn("transport: refusing a call from a node of another cluster", "method", req.Method,
		"caller_cluster", req.Cluster, "cluster", local)
	return fmt.Sprintf("this node belongs to cluster %s, the caller to cluster %s", local, req.Cluster)
}

// encodeResponse encodes resp, replacing it with an error response when it
// cannot be encoded or would exceed MaxFrameSize.
func (t *Transport) encodeResponse(resp rpcResponse) []byte {
	b, err := Encode(resp)
	if err == nil && len(b) <= t.cfg.MaxFrameSize {
		return b
	}
	if err == nil {
		t.stats.oversizedFrames.Add(1)
		err = fmt.Errorf("response of %d bytes: %w", len(b), ErrFrameTooLarge)
	}
	b, _ = Encode(rpcResponse{ID: resp.ID, Code: CodeInternal, Error: err.Error()})
	return b
}

// Call sends method with req (msgpack-encoded by Encode) to the Transport at
// addr ("host:port") and decodes the response body into resp unless resp is
// nil or the handler returned an empty body. The call is bounded by ctx, or by Config.DefaultCallTimeout when ctx
// has no deadline; cancelling ctx aborts a blocked call promptly and returns
// an error wrapping ctx.Err(). When the remote handler fails, the error is a
// *RemoteError. It returns ErrClosed after Close and ErrFrameTooLarge (sending
// nothing) for a request over Config.MaxFrameSize. Connections are pooled per
// address, one call in flight on each; a connection that saw any error is
// closed, not reused. Calls are not retried: a call on a pooled connection to
// a peer that restarted since fails once. With Config.TLS, a new connection
// completes a TLS handshake first; the error wraps ErrWrongPeer when the
// server's certificate names another node than TLS.PeerName expects at addr.
// A new connection is never cut off half open because ctx ended: Call
// returns, and the dial (TCP, handshake, preamble) completes in the
// background within Config.HandshakeTimeout and pools the connection, so
// the peer never counts a caller's impatience as a refused handshake.
func (t *Transport) Call(ctx context.Context, addr, method string, req, resp any) error {
	body, err := Encode(req)
	if err != nil {
		return err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.cfg.DefaultCallTimeout)
		defer cancel()
	}
	out, err := t.roundTrip(ctx, addr, method, body)
	if err != nil {
		return fmt.Errorf("transport: call %s on %s: %w", method, addr, err)
	}
	if out.Code != "" {
		return &RemoteError{Code: out.Code, Message: out.Error}
	}
	if resp != nil && len(out.Body) > 0 {
		if err := Decode(out.Body, resp); err != nil {
			return fmt.Errorf("transport: call %s on %s: response: %w", method, addr, err)
		}
	}
	return nil
}

// roundTrip sends one request frame on a pooled or new connection and reads
// its response, under ctx's deadline.
func (t *Transport) roundTrip(ctx context.Context, addr, method string, body []byte) (rpcResponse, error) {
	var resp rpcResponse
	if t.isClosed() {
		return resp, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return resp, err
	}
	deadline, _ := ctx.Deadline()
	id := t.nextID.Add(1)
	remaining := max(time.Until(deadline), time.Millisecond)
	req := rpcRequest{ID: id, Method: method, Timeout: int64(remaining), Body: body}
	if t.cfg.Cluster != nil {
		req.Cluster = t.cfg.Cluster()
	}
	frame, err := Encode(req)
	if err != nil {
		return resp, err
	}
	if len(frame) > t.cfg.MaxFrameSize {
		return resp, fmt.Errorf("request of %d bytes: %w", len(frame), ErrFrameTooLarge)
	}
	c, err := t.getConn(ctx, addr)
	if err != nil {
		return resp, err
	}
	out := appendFrame(make([]byte, 0, 4+len(frame)), frame)

	_ = c.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	resp, err = t.exchange(c, id, out)
	if !stop() {
		// ctx ended meanwhile: the deadline may be poisoned; drop the conn.
		_ = c.Close()
		if err != nil {
			return resp, ctxError(ctx, deadline, err)
		}
		return resp, nil
	}
	if err != nil {
		_ = c.Close()
		return resp, ctxError(ctx, deadline, err)
	}
	t.putConn(addr, c)
	return resp, nil
}

// exchange writes out and reads the response to request id.
func (t *Transport) exchange(c net.Conn, id uint64, out []byte) (rpcResponse, error) {
	var resp rpcResponse
	if _, err := c.Write(out); err != nil {
		return resp, err
	}
	frame, err := readFrame(c, t.cfg.MaxFrameSize)
	if err != nil {
		if errors.Is(err, ErrFrameTooLarge) {
			t.stats.oversizedFrames.Add(1)
		}
		return resp, err
	}
	if err := Decode(frame, &resp); err != nil {
		t.stats.badFrames.Add(1)
		return resp, fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	if resp.ID != id {
		t.stats.badFrames.Add(1)
		return resp, fmt.Errorf("%w: response ID %d for request %d", ErrProtocol, resp.ID, id)
	}
	return resp, nil
}

// getConn pops an idle connection to addr or dials a new one (dialRPC).
func (t *Transport) getConn(ctx context.Context, addr string) (*trackedConn, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, ErrClosed
	}
	var c *trackedConn
	if pool := t.idle[addr]; len(pool) > 0 {
		c = pool[len(pool)-1]
		pool[len(pool)-1] = nil
		if len(pool) == 1 {
			delete(t.idle, addr)
		} else {
			t.idle[addr] = pool[:len(pool)-1]
		}
	}
	t.mu.Unlock()
	if c != nil {
		return c, nil
	}
	return t.dialRPC(ctx, addr)
}

// putConn returns a healthy connection to the idle pool, or closes it when
// the pool is full or the Transport closed.
func (t *Transport) putConn(addr string, c *trackedConn) {
	_ = c.SetDeadline(time.Time{})
	t.mu.Lock()
	if !t.closed && len(t.idle[addr]) < maxIdlePerAddr {
		t.idle[addr] = append(t.idle[addr], c)
		c = nil
	}
	t.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
}

// ctxError wraps the context's error around an I/O error caused by the
// context ending, so callers can test errors.Is(err, context.Canceled) or
// context.DeadlineExceeded. The conn deadline equals ctx's, so the I/O may
// time out just before ctx reports it.
func ctxError(ctx context.Context, deadline time.Time, err error) error {
	cerr := ctx.Err()
	if cerr == nil && errors.Is(err, os.ErrDeadlineExceeded) && !time.Now().Before(deadline) {
		cerr = context.DeadlineExceeded
	}
	if cerr == nil {
		return err
	}
	return fmt.Errorf("%w (%v)", cerr, err)
}
