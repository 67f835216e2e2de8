package cache

import (
	"container/list"
	"sync"
)

// LRU is a map bounded by the bytes of its values: adding past the bound
// drops the least recently used. It is safe for concurrent use.
type LRU[V any] struct {
	mu    sync.Mutex
	max   int64
	used  int64
	items map[string]*list.Element
	order *list.List // of *lruItem[V], most recently used first
}

type lruItem[V any] struct {
	key   string
	value V
	size  int64
}

// NewLRU returns an empty LRU holding at most max bytes.
func NewLRU[V any](max int64) *LRU[V] {
	return &LRU[V]{max: max, items: map[string]*list.Element{}, order: list.New()}
}

// Get returns the value under key, marking it used.
func (l *LRU[V]) Get(key string) (V, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.items[key]; ok {
		l.order.MoveToFront(e)
		return e.Value.(*lruItem[V]).value, true
	}
	var zero V
	return zero, false
}

// Add puts v of size bytes under key (replacing what was there) and
// returns the values dropped to stay within the bound (v itself when it
// is larger than the bound).
func (l *LRU[V]) Add(key string, v V, size int64) (dropped []V) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.removeLocked(key)
	l.items[key] = l.order.PushFront(&lruItem[V]{key, v, size})
	l.used += size
	for l.used > l.max && l.order.Len() > 0 {
		old := l.order.Back().Value.(*lruItem[V])
		l.removeLocked(old.key)
		dropped = append(dropped, old.value)
	}
	return dropped
}

// Remove drops key.
func (l *LRU[V]) Remove(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.removeLocked(key)
}

func (l *LRU[V]) removeLocked(key string) {
	if e, ok := l.items[key]; ok {
		l.used -= e.Value.(*lruItem[V]).size
		l.order.Remove(e)
		delete(l.items, key)
	}
}

// Used returns the bytes held.
func (l *LRU[V]) Used() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.used
}
