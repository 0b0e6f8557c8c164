package ready

// entryHeap is a container/heap of entries ordered by readyKey, or by until
// for the deferred heap; each entry knows its index so it can be fixed or
// removed in place.
type entryHeap[P comparable] struct {
	items    []*entry[P]
	byExpiry bool
}

func (h *entryHeap[P]) Len() int { return len(h.items) }
func (h *entryHeap[P]) Less(i, j int) bool {
	if h.byExpiry {
		return h.items[i].until < h.items[j].until
	}
	return h.items[i].readyKey < h.items[j].readyKey
}
func (h *entryHeap[P]) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].idx = i
	h.items[j].idx = j
}
func (h *entryHeap[P]) Push(x any) {
	e := x.(*entry[P])
	e.idx = len(h.items)
	h.items = append(h.items, e)
}
func (h *entryHeap[P]) Pop() any {
	n := len(h.items) - 1
	e := h.items[n]
	h.items[n] = nil
	h.items = h.items[:n]
	e.idx = -1
	return e
}
