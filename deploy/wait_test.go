package deploy_test

import (
	"bytes"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"
)

// timeout bounds every wait: generous, for a loaded machine.
const timeout = 2 * time.Minute

// waitOK polls url until it answers 200, and fails the test at timeout
// with the last answer.
func waitOK(t *testing.T, url string) {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(timeout)
	last := "no answer"
	for time.Now().Before(deadline) {
		resp, err := client.Get(url)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Logf("GET %s: %d %q", url, resp.StatusCode, body)
				return
			}
			last = resp.Status + " " + string(body)
		} else {
			last = err.Error()
		}
		time.Sleep(50 * time.Millisecond) // poll interval, not synchronisation
	}
	t.Fatalf("GET %s: not 200 within %v; last: %s", url, timeout, last)
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
