package keyring

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/holdfast-go/holdfast/internal/wire"
)

// open opens the keyring of dir configured with keys.
func open(t *testing.T, dir string, keys ...[]byte) (*Store, [][]byte) {
	t.Helper()
	s, got, err := Open(FileOptions{DataDir: dir, ConfigKeys: keys})
	if err != nil {
		t.Fatal(err)
	}
	return s, got
}

// TestKeyringFileReloaded: a change persisted by Apply is what a restart
// with the same configuration starts from; changing the configuration
// makes it win and rewrites the file.
func TestKeyringFileReloaded(t *testing.T) {
	dir := t.TempDir()
	oldK, newK := key(1), key(2)
	s, got := open(t, dir, oldK)
	if !slices.EqualFunc(got, [][]byte{oldK}, bytes.Equal) || s.Generation() != 1 {
		t.Fatalf("first start: keys %x generation %d, want the configured key, generation 1", got, s.Generation())
	}
	c := newCluster(t, 0)
	k := c.add("n0", got, s)
	for _, r := range []wire.KeyringRequest{
		{Op: wire.KeyringInstall, Key: newK}, {Op: wire.KeyringUse, Key: newK},
		{Op: wire.KeyringStatus, Key: newK}, {Op: wire.KeyringRemove, Key: oldK},
	} {
		if _, err := k.Apply(r); err != nil {
			t.Fatal(err)
		}
	}
	if s.Generation() != 4 {
		t.Errorf("generation %d after three changes and a status, want 4", s.Generation())
	}
	if _, got := open(t, dir, oldK); !slices.EqualFunc(got, [][]byte{newK}, bytes.Equal) {
		t.Fatalf("restart with unchanged configuration: keys %x, want the rotated %x", got, newK)
	}
	other := key(3)
	s2, got := open(t, dir, other)
	if !slices.EqualFunc(got, [][]byte{other}, bytes.Equal) || s2.Generation() != 5 {
		t.Fatalf("restart with new configuration: keys %x generation %d, want the configured key, generation 5", got, s2.Generation())
	}
	if _, got := open(t, dir, other); !slices.EqualFunc(got, [][]byte{other}, bytes.Equal) {
		t.Fatalf("second restart: keys %x, want %x", got, other)
	}
}

// TestKeyringFileAtomic: a write replaces the file whole (a reader holding
// the old file still reads all of it), leaves no temporary file, and
// keeps the keys private (0600).
func TestKeyringFileAtomic(t *testing.T) {
	dir := t.TempDir()
	s, _ := open(t, dir, key(1))
	path := filepath.Join(dir, FileName)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	before, _ := os.ReadFile(path)
	if err := s.Write([][]byte{key(1), key(2), key(3)}); err != nil {
		t.Fatal(err)
	}
	held, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(held, before) {
		t.Errorf("the file open before the write now reads %q, want its old content %q: written in place", held, before)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("data dir holds %v, want only %s", entries, FileName)
	}
}

// TestKeyringFileCorrupt: a file that is not JSON, or holds bad keys,
// fails Open with an error naming DataDir and the file.
func TestKeyringFileCorrupt(t *testing.T) {
	for _, tc := range []struct{ name, content, want string }{
		{"not JSON", "{\"generation\": 3, \"keys\": [", "is malformed"},
		{"short key", `{"generation":1,"config":"x","keys":["AAAA"]}`, "is invalid: Gossip.Keys[0]: 3 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, FileName)
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, _, err := Open(FileOptions{DataDir: dir, ConfigKeys: [][]byte{key(1)}})
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != "DataDir" || !strings.Contains(fe.Msg, path) || !strings.Contains(fe.Msg, tc.want) {
				t.Fatalf("Open = %v; want a DataDir error naming %s and saying %q", err, path, tc.want)
			}
		})
	}
}

// TestKeyringMemoryOnly: without a data dir, or without keys and file,
// nothing is written.
func TestKeyringMemoryOnly(t *testing.T) {
	s, got := open(t, "", key(1))
	if err := s.Write([][]byte{key(2)}); err != nil || len(got) != 1 {
		t.Fatalf("memory-only store: keys %x, write %v", got, err)
	}
	dir := t.TempDir()
	s, got = open(t, dir)
	if err := s.Write([][]byte{key(2)}); err != nil || got != nil {
		t.Fatalf("unencrypted node: keys %x, write %v", got, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("an unencrypted node wrote %v", entries)
	}
}

// TestCheckKeys: sizes and duplicates.
func TestCheckKeys(t *testing.T) {
	for _, tc := range []struct {
		keys [][]byte
		want string
	}{
		{nil, ""},
		{[][]byte{key(1)[:16], key(2)[:24], key(3)}, ""},
		{[][]byte{key(1)[:17]}, "Gossip.Keys[0]: 17 bytes; must be 16, 24 or 32"},
		{[][]byte{key(1), key(2), key(1)}, "Gossip.Keys[2]: duplicate of Gossip.Keys[0]"},
	} {
		err := CheckKeys(tc.keys)
		if (tc.want == "" && err != nil) || (tc.want != "" && (err == nil || err.Error() != tc.want)) {
			t.Errorf("CheckKeys(%d keys) = %v, want %q", len(tc.keys), err, tc.want)
		}
	}
}
