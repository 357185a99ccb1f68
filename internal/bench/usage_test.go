package bench

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// blockBuf stands for a message block's buffer in the embedded server.
type blockBuf [1 << 20]byte

// blockCache stands for a message block's cache, which holds its buffer.
type blockCache struct{ buf *blockBuf }

// TestCollectHeapEmptiesPools holds collectHeap to what the embedded server
// does with its block buffers: one put back in its pool directly (a deleted
// block), one put back by a cleanup once its cache is collected (a dropped
// block). A timed phase must find neither, or it would run on the memory of
// the phase before it.
func TestCollectHeapEmptiesPools(t *testing.T) {
	var made atomic.Int32
	pool := sync.Pool{New: func() any { made.Add(1); return new(blockBuf) }}

	c := &blockCache{buf: pool.Get().(*blockBuf)}
	runtime.AddCleanup(c, func(b *blockBuf) { pool.Put(b) }, c.buf)
	runtime.KeepAlive(c)
	pool.Put(pool.Get())
	require.EqualValues(t, 2, made.Load())

	CollectHeap()
	pool.Get()
	pool.Get()
	require.EqualValues(t, 4, made.Load(), "a block buffer was still pooled after collectHeap")
}
