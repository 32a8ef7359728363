package lockview

// Tracked is how many keys v's hot-key table holds and how many its index
// holds (tests only).
func Tracked(v *View) (keys, index int) { return v.rec.tracked() }
