package analytics

// ring holds the newest len(pts) buckets of one resolution: the bucket of
// unit index t (minutes, hours or days since the Unix epoch) is pts[t mod
// len(pts)], valid while last-len(pts) < t <= last. Buckets nothing was added
// to read as zero. pts is nil until the first add (an idle queue costs
// nothing).
type ring struct {
	size int
	last int64
	pts  []Point
}

func newRing(size int) ring { return ring{size: size} }

// slot returns t's bucket index, or -1 when t is outside the window.
func (r *ring) slot(t int64) int {
	if r.pts == nil || t > r.last || t <= r.last-int64(r.size) || t < 0 {
		return -1
	}
	return int(t % int64(r.size))
}

// add merges p into bucket t, moving the window forward (and clearing the
// buckets it passes) when t is newer than every bucket held. A t older than
// the window is dropped.
func (r *ring) add(t int64, p Point) {
	if p.IsZero() || t < 0 {
		return
	}
	if r.pts == nil {
		r.pts = make([]Point, r.size)
		r.last = t
	}
	if t > r.last {
		for u := r.last + 1; u <= t && u <= r.last+int64(r.size); u++ {
			r.pts[u%int64(r.size)] = Point{}
		}
		r.last = t
	}
	if i := r.slot(t); i >= 0 {
		r.pts[i].add(p)
	}
}

// get returns bucket t (zero outside the window).
func (r *ring) get(t int64) Point {
	if i := r.slot(t); i >= 0 {
		return r.pts[i]
	}
	return Point{}
}
