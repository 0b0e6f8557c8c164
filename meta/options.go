package meta

// QueueOptions are a queue's options with spec section 2.2 units: seconds unless
// the name or comment says otherwise.
type QueueOptions struct {
	LeaseTime                 int64 // s; 0 means the 60 s fallback at pop time
	RetryLimit                int64 // count of explicit failed releases before the DLQ
	RetryDelay                int64 // ms; stored and echoed only
	MaxSize                   int64 // messages pending after the __QUEUE_MODE__ cursor; 0 = unlimited
	TTL                       int64 // s; stored and echoed only
	Priority                  int64
	DelayedProcessing         int64 // s
	WindowBuffer              int64 // s
	MinPopWaitTime            int64 // ms, clamped to 0..60000
	RetentionSeconds          int64
	CompletedRetentionSeconds int64
	MaxWaitTimeSeconds        int64
	RetentionEnabled          bool
	EncryptionEnabled         bool
	DeadLetterQueue           bool
	DLQAfterMaxRetries        bool
}

// DefaultQueueOptions are the options of an auto-created queue and of every option
// a configure request leaves out (spec 1.3, 2.2).
func DefaultQueueOptions() QueueOptions {
	return QueueOptions{LeaseTime: 300, RetryLimit: 3, RetryDelay: 1000, TTL: 3600}
}

// optionInts lists the integer options in their on-disk order. Appending a new
// option at the end keeps old journals readable (a shorter list decodes with
// defaults for the missing tail).
func optionInts(o *QueueOptions) []*int64 {
	return []*int64{&o.LeaseTime, &o.RetryLimit, &o.RetryDelay, &o.MaxSize, &o.TTL, &o.Priority,
		&o.DelayedProcessing, &o.WindowBuffer, &o.MinPopWaitTime, &o.RetentionSeconds,
		&o.CompletedRetentionSeconds, &o.MaxWaitTimeSeconds}
}

func optionFlags(o *QueueOptions) []*bool {
	return []*bool{&o.RetentionEnabled, &o.EncryptionEnabled, &o.DeadLetterQueue, &o.DLQAfterMaxRetries}
}
