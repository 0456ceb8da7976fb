package shards

import "github.com/holdfast-go/holdfast/fsm"

// maxChunkItems bounds the items per command, and maxChunkBytes their
// estimated encoded size, so a command stays far below fsm.MaxCommandSize
// whatever the session IDs' length.
const (
	maxChunkItems = 1024
	maxChunkBytes = fsm.MaxCommandSize / 2
)

// chunkItems splits items, in order, into commands' worth.
func chunkItems(items []fsm.ShardItem) [][]fsm.ShardItem {
	var out [][]fsm.ShardItem
	start, size := 0, 0
	for i, it := range items {
		n := 32 + len(it.Session) + len(it.To) // keys, shard, token and headers at most
		if i > start && (i-start == maxChunkItems || size+n > maxChunkBytes) {
			out = append(out, items[start:i])
			start, size = i, 0
		}
		size += n
	}
	if start < len(items) {
		out = append(out, items[start:])
	}
	return out
}
