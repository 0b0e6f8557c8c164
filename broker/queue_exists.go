package broker

// QueueExists reports whether a queue of this name exists now (configured, or made by a push),
// for the HTTP layer to say why a pop found nothing (issue 25). It takes only the registry's
// read lock; a closed broker answers true (nothing to add to the answer).
func (b *Broker) QueueExists(name string) bool {
	if err := b.enter(); err != nil {
		return true
	}
	defer b.leave()
	return b.lookupQueue(name) != nil
}
