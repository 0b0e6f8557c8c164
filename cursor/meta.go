package cursor

// subKey names one (queue, group) subscription record.
type subKey struct{ queue, group string }

// subChange is one subscription change.
type subChange struct {
	key subKey
	sub Subscription
}

// Subscription returns the stored record of group on queue (spec 3.8).
func (e *Engine) Subscription(queue, group string) (Subscription, bool) {
	e.subMu.Lock()
	s, ok := e.subs[subKey{queue, group}]
	e.subMu.Unlock()
	return s, ok
}

// SetSubscription stores the record in memory at once; durable
// with the next checkpoint.
func (e *Engine) SetSubscription(queue, group string, s Subscription) {
	k := subKey{queue, group}
	e.subMu.Lock()
	e.subs[k] = s
	e.subDirty[k] = struct{}{}
	e.subMu.Unlock()
	e.markChanged()
}

// DeleteSubscription removes the record, so the next first contact decides
// again (spec 3.8, 7.3); durable with the next checkpoint.
func (e *Engine) DeleteSubscription(queue, group string) {
	k := subKey{queue, group}
	e.subMu.Lock()
	_, ok := e.subs[k]
	if ok {
		delete(e.subs, k)
		e.subDirty[k] = struct{}{}
	}
	e.subMu.Unlock()
	if ok {
		e.markChanged()
	}
}

// RangeSubscriptions calls fn for every record until fn returns false; fn runs
// without the lock held.
func (e *Engine) RangeSubscriptions(fn func(queue, group string, s Subscription) bool) {
	e.subMu.Lock()
	all := make([]subChange, 0, len(e.subs))
	for k, s := range e.subs {
		all = append(all, subChange{key: k, sub: s})
	}
	e.subMu.Unlock()
	for _, c := range all {
		if !fn(c.key.queue, c.key.group, c.sub) {
			return
		}
	}
}
