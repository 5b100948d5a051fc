package maintenance

import (
	"slices"
	"testing"
)

func simCount(sel selection, steps, every int, small int64) (amp float64, med, mx int) {
	var files []int64
	var rewritten, added int64
	var counts []int
	for step := 1; step <= steps; step++ {
		files = append(files, small)
		added += small
		if step > steps/2 {
			counts = append(counts, len(files))
		}
		if step%every != 0 {
			continue
		}
		slices.Sort(files)
		var cands, rest []int64
		for _, f := range files {
			if f < sel.done {
				cands = append(cands, f)
			} else {
				rest = append(rest, f)
			}
		}
		n := sel.tieredTake(cands)
		if n == 0 {
			continue
		}
		var sum int64
		for _, f := range cands[:n] {
			sum += f
		}
		rewritten += sum
		for ; sum > sel.target; sum -= sel.target {
			rest = append(rest, sel.target)
		}
		files = append(append(rest, cands[n:]...), sum)
	}
	slices.Sort(counts)
	return float64(rewritten) / float64(added), counts[len(counts)/2], counts[len(counts)-1]
}

func TestZZSim(t *testing.T) {
	for _, target := range []int64{128 << 20} {
		for _, ratio := range []float64{2, 3, 4} {
			for _, every := range []int{3, 4, 6} {
				for _, minIn := range []int{2, 3, 5} {
					sel := selection{strategy: strategyTiered, target: target, done: smallFileLimit(target), ratio: ratio, minInput: minIn}
					amp, med, mx := simCount(sel, 900, every, 240<<10)
					t.Logf("target %3dMiB ratio %g every %d min %d: amp %.1f median %d max %d", target>>20, ratio, every, minIn, amp, med, mx)
				}
			}
		}
	}
}
