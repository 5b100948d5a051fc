package partitioners

import (
	"math"
	"testing"
)

// TestSketchHeavyHitters: over a Zipf stream the table holds the heaviest
// keys, and every estimate is an upper bound within the Count-Min error
// bound e/width of the total.
func TestSketchHeavyHitters(t *testing.T) {
	const width, depth, heavy = 2048, 4, 64
	s := newSketch(width, depth, heavy)
	keys := zipfKeys(9, 1.1, 200_000)
	exact := map[uint64]float64{}
	total := 0.0
	for _, k := range keys {
		key := mix64(uint64(k))
		exact[key]++
		total++
		s.add(key, 1, total*0.002)
	}
	bound := math.E / width * total
	for k := range 200 {
		key := mix64(uint64(k))
		est := s.estimate(key)
		if est < exact[key] || est > exact[key]+bound {
			t.Errorf("k%d: estimate %.0f, exact %.0f, bound +%.0f", k, est, exact[key], bound)
		}
	}
	in := map[uint64]bool{}
	for _, e := range s.heavy {
		in[e.key] = true
	}
	for k := range 20 {
		if !in[mix64(uint64(k))] {
			t.Errorf("k%d (%.0f of %.0f) not in the heavy table", k, exact[mix64(uint64(k))], total)
		}
	}
}

// TestSketchDecay: forward decay through the task's decay clock, rescales
// included, halves a key's weight relative to the total per half-life.
func TestSketchDecay(t *testing.T) {
	d := newDecay(1000)
	s := newSketch(64, 2, 4)
	total := 0.0
	add := func(key uint64, n int) {
		for range n {
			w := d.weight
			s.add(key, w, 0)
			total += w
			if f := d.advance(1); f != 0 {
				s.scale(f)
				total *= f
			}
		}
	}
	add(1, 1000)
	add(2, 1000)
	// Key 1 arrived one half-life before key 2: about half its weight.
	r := s.estimate(1) / s.estimate(2)
	if r < 0.45 || r > 0.55 {
		t.Errorf("weight ratio after one half-life %.3f, want 0.5", r)
	}
	add(2, 200_000) // forces rescales (weight passes 2^60 at ~60 half-lives)
	if share := s.estimate(1) / total; share > 1e-30 {
		t.Errorf("key 1 still has share %g after 200 half-lives", share)
	}
	if share := s.estimate(2) / total; share < 0.999 || share > 1.001 {
		t.Errorf("key 2 share %g, want 1", share)
	}
}
