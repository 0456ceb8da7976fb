package keyring

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestKeyringLoadedMessage: a restart with unchanged Config.Gossip.Keys
// says it uses the keyring kept in DataDir and why, in words that do not
// contradict themselves (it used to say the keyring was "newer" than keys
// "unchanged since it was written").
func TestKeyringLoadedMessage(t *testing.T) {
	dir := t.TempDir()
	open(t, dir, key(1))
	var buf bytes.Buffer
	if _, _, err := Open(FileOptions{DataDir: dir, ConfigKeys: [][]byte{key(1)}, Log: slog.New(slog.NewTextHandler(&buf, nil))}); err != nil {
		t.Fatal(err)
	}
	want := `msg="using the gossip keyring kept in DataDir: it holds the keys as last rotated, and Config.Gossip.Keys has not changed since it was written"`
	if !strings.Contains(buf.String(), want) {
		t.Fatalf("log %q lacks %s", buf.String(), want)
	}
	if strings.Contains(buf.String(), "newer") {
		t.Errorf("log still says newer: %q", buf.String())
	}
}
