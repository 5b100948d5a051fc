package partitioners

import "math"

// sketch estimates the recent load of every key in fixed memory: a
// Count-Min sketch (Cormode and Muthukrishnan, 2005) with conservative
// update holds every key's count, and a small table holds the heaviest keys
// by name, the candidates for being hot. Counts are forward-decayed (see
// decay): the caller passes weights and rescales both parts together.
//
// The table works like Space-Saving (Metwally, Agrawal, El Abbadi, 2005)
// with the sketch's estimate as the count: a key whose estimate passes the
// admission level takes a free entry or evicts the entry with the lowest
// estimate, if its own is higher. Keys that stop arriving keep their old
// (decaying) estimate and so sink to the bottom and are evicted.
//
// Not safe for concurrent use; the skew-aware task guards it with a lock.
type sketch struct {
	width uint64
	depth int
	cells []float64 // depth rows of width counters

	heavy   []heavyEntry
	index   map[uint64]int32 // key → position in heavy
	maxKeys int
	minAt   int  // position of the entry with the lowest estimate
	minOK   bool // minAt is current
	// floor is at most every entry's estimate (estimates only grow), so a
	// key estimated below it and below the admission level is not in the
	// table and needs no lookup: the common case, kept off the map.
	floor float64
}

type heavyEntry struct {
	key uint64
	est float64
}

func newSketch(width, depth, heavy int) *sketch {
	return &sketch{
		width:   uint64(width),
		depth:   depth,
		cells:   make([]float64, width*depth),
		heavy:   make([]heavyEntry, 0, heavy),
		index:   make(map[uint64]int32, heavy),
		maxKeys: heavy,
	}
}

// add counts weight w more for key and returns the key's new estimate. A
// key whose estimate reaches admit competes for a place in the heavy table.
func (s *sketch) add(key uint64, w, admit float64) float64 {
	// Row j uses h1 + j*h2 (Kirsch and Mitzenmacher, 2006): depth
	// independent-enough positions from one 64-bit hash.
	h := mix64(key ^ 0x6a09e667f3bcc909)
	h1, h2 := uint32(h), uint32(h>>32)|1
	var pos [maxDepth]uint64
	est := math.Inf(1)
	for j := range s.depth {
		p := uint64(j)*s.width + (uint64(h1+uint32(j)*h2)*s.width)>>32
		pos[j] = p
		est = min(est, s.cells[p])
	}
	// Conservative update: raise only the counters below the new estimate;
	// the estimate stays an upper bound, with far less overcount.
	est += w
	for _, p := range pos[:s.depth] {
		if s.cells[p] < est {
			s.cells[p] = est
		}
	}
	s.offer(key, est, admit)
	return est
}

func (s *sketch) offer(key uint64, est, admit float64) {
	if est < admit && (len(s.heavy) == 0 || est < s.floor) {
		return
	}
	if i, ok := s.index[key]; ok {
		s.heavy[i].est = est
		if int(i) == s.minAt {
			s.minOK = false
		}
		return
	}
	if est < admit {
		return
	}
	if len(s.heavy) < s.maxKeys {
		if len(s.heavy) == 0 || est < s.floor {
			s.floor = est
		}
		s.index[key] = int32(len(s.heavy))
		s.heavy = append(s.heavy, heavyEntry{key: key, est: est})
		s.minOK = false
		return
	}
	if !s.minOK {
		s.minAt = 0
		for i, e := range s.heavy {
			if e.est < s.heavy[s.minAt].est {
				s.minAt = i
			}
		}
		s.minOK = true
		s.floor = s.heavy[s.minAt].est
	}
	if m := &s.heavy[s.minAt]; est > m.est {
		delete(s.index, m.key)
		*m = heavyEntry{key: key, est: est}
		s.index[key] = int32(s.minAt)
		s.minOK = false
	}
}

// estimate returns key's estimated weight without counting it.
func (s *sketch) estimate(key uint64) float64 {
	h := mix64(key ^ 0x6a09e667f3bcc909)
	h1, h2 := uint32(h), uint32(h>>32)|1
	est := math.Inf(1)
	for j := range s.depth {
		est = min(est, s.cells[uint64(j)*s.width+(uint64(h1+uint32(j)*h2)*s.width)>>32])
	}
	return est
}

// scale multiplies every count by f (a decay rescale).
func (s *sketch) scale(f float64) {
	scaleAll(s.cells, f)
	s.floor *= f
	for i := range s.heavy {
		s.heavy[i].est *= f
	}
}
