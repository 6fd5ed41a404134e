package disk

import (
	"bytes"
	"io"

	"github.com/cockroachdb/pebble/v2"
)

// chunkReader is where the ops of one pipeline chunk read their records. A
// record that no earlier op of the chunk touched is read through one DB
// iterator kept for the whole chunk; one that an earlier op may have
// written, through the chunk's indexed batch, which shows that write.
//
// Why not the indexed batch for every read: pebble's Get builds an
// iterator over the memtables and every level for each key, opening a
// point iterator on each sstable it looks at (its index and filter blocks
// from the cache): at pipeline 16 reads were 42 % of the sidecar's CPU,
// the sstable iterators' set-up about half of it. An iterator kept for the
// chunk opens each sstable once, and a prefix seek still consults its
// bloom filter. Measured (docs/benchmarks.md, "The embedded store's
// speed"): 0.79x the sidecar's CPU per request at pipeline 16, 0.91x at 1;
// in-process, batches of 32 and 256 PREPAREs 0.83x and 0.75x of the CPU,
// 8 about the same, 4 about 5 % more: hence chunkIterMin.
//
// The view is exact: the chunk holds the stripe of every key it reads, so
// nobody else writes them while it runs, and every write that held them
// before was committed (and published) before it let them go.
type chunkReader struct {
	b       *pebble.Batch
	it      *pebble.Iterator
	touched map[string]struct{} // record keys of the chunk's earlier ops
}

var noClose io.Closer = nopCloser{}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// Get implements reader.
func (r *chunkReader) Get(key []byte) ([]byte, io.Closer, error) {
	if _, ok := r.touched[string(key)]; ok {
		return r.b.Get(key)
	}
	if !r.it.SeekPrefixGE(key) || !bytes.Equal(r.it.Key(), key) {
		if err := r.it.Error(); err != nil {
			return nil, nil, err
		}
		return nil, nil, pebble.ErrNotFound
	}
	v, err := r.it.ValueAndErr()
	if err != nil {
		return nil, nil, err
	}
	return v, noClose, nil
}

// touch records that the op just run may have written keys.
func (r *chunkReader) touch(keys ...[]byte) {
	for _, k := range keys {
		if k != nil {
			r.touched[string(k)] = struct{}{}
		}
	}
}
