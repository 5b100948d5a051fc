package maintenance

import "fmt"

// partitionLabel prints a partition key.
func partitionLabel(k string) string {
	if k == "" {
		return "(unpartitioned)"
	}
	return k
}

// bytesIEC prints a byte count.
func bytesIEC(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
