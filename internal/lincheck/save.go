package lincheck

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/anishathalye/porcupine"
)

// savedOp is one operation of a saved history.
type savedOp struct {
	Client       int
	Call, Return int64
	Input        Input
	Output       Output
}

// Save writes the history ops (as Recorder.Finish returned it) to
// dir/name.json and returns its path; Load reads it back, so that a
// rejected or undecided history can be checked again (with a longer
// timeout, or after a change to the model) without the run that made it.
func Save(ops []porcupine.Operation, dir, name string) (string, error) {
	saved := make([]savedOp, len(ops))
	for i, op := range ops {
		in, ok1 := op.Input.(Input)
		out, ok2 := op.Output.(Output)
		if !ok1 || !ok2 {
			return "", fmt.Errorf("lincheck: operation %d is not a lincheck operation", i)
		}
		saved[i] = savedOp{Client: op.ClientId, Call: op.Call, Return: op.Return, Input: in, Output: out}
	}
	b, err := json.Marshal(saved)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, sanitize(name)+".json")
	return path, os.WriteFile(path, b, 0o644)
}

// Load reads a history Save wrote.
func Load(path string) ([]porcupine.Operation, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var saved []savedOp
	if err := json.Unmarshal(b, &saved); err != nil {
		return nil, fmt.Errorf("lincheck: %s: %w", path, err)
	}
	ops := make([]porcupine.Operation, len(saved))
	for i, s := range saved {
		ops[i] = porcupine.Operation{ClientId: s.Client, Call: s.Call, Return: s.Return, Input: s.Input, Output: s.Output}
	}
	return ops, nil
}
