package fsm

// EncodeSnapshotIndex returns the encoding of the FSM's current state, as
// Snapshot would persist it, and the index of the view it encodes: a
// replica fed outside raft restores it and continues with the commands
// after that index.
func (f *FSM) EncodeSnapshotIndex() ([]byte, uint64, error) {
	v := f.view.Load()
	b, err := encodeSnapshot(snapshotData{Index: v.index, State: v.st})
	return b, v.index, err
}
