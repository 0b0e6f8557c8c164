package entrylog

// Damaged reports whether some file holds damage Open refuses (the tests' question of a
// CheckReport; fsck reads each file's Damage itself).
func (r *CheckReport) Damaged() bool {
	for _, f := range r.Files {
		if f.Damage != nil {
			return true
		}
	}
	return false
}
