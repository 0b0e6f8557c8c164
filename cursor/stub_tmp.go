package cursor

type journal struct{}

func (j *journal) close() error { return nil }

func (e *Engine) recover() (*RecoveryReport, error) { e.j = &journal{}; return &RecoveryReport{}, nil }

func (e *Engine) writeLoop() {
	defer close(e.done)
	for {
		select {
		case <-e.kick:
		case <-e.stop:
			return
		}
		e.mu.Lock()
		e.durableGen = e.wantGen
		e.nextGen = e.wantGen + 1
		e.changed.Store(false)
		e.cond.Broadcast()
		e.mu.Unlock()
	}
}
