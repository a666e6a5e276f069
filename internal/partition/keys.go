package partition

import (
	"cmp"
	"sync"

	"github.com/forecastd/forecastd/runner"
)

// keyParts maps series keys to the partition their points came from, for
// the checkpointer calls that name a key only (Saved, Save, Forget). It is
// bounded: keys are noted in the current generation, and once it holds
// max keys it becomes the previous one and a new one starts, so that at
// most 2·max keys are held however many a publisher invents. A key is
// forgotten only after max other keys were noted since its last point;
// max exceeds the series a runner holds plus the points it can queue, so
// that a live series, or one whose point is in flight, keeps its key.
type keyParts struct {
	mu        sync.Mutex
	max       int
	cur, prev map[string]*part
}

// KeysBound is Config.Keys for a runner of [pipeline] max_series, shards
// and queue_size (0: the runner's defaults): max_series, plus the points
// the shards' queues hold, plus one message's points.
func KeysBound(maxSeries, shards, queueSize int) int {
	shards = cmp.Or(shards, runner.DefaultShards())
	queue := cmp.Or(queueSize, runner.DefaultQueueSize)
	return cmp.Or(maxSeries, runner.DefaultMaxSeries) + shards*queue + 1<<16
}

// note records that key's point came from pt.
func (k *keyParts) note(key string, pt *part) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cur[key] == pt {
		return
	}
	if len(k.cur) >= k.max {
		k.prev, k.cur = k.cur, make(map[string]*part, len(k.cur))
	}
	if k.cur == nil {
		k.cur = map[string]*part{}
	}
	k.cur[key] = pt
}

// get returns key's partition, nil if none is noted.
func (k *keyParts) get(key string) *part {
	k.mu.Lock()
	defer k.mu.Unlock()
	if pt, ok := k.cur[key]; ok {
		return pt
	}
	return k.prev[key]
}

// len returns the keys held.
func (k *keyParts) len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.cur) + len(k.prev)
}
