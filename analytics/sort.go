package analytics

import "sort"

func sortByName(qs []QueueSeries) {
	sort.Slice(qs, func(i, j int) bool { return qs[i].Name < qs[j].Name })
}
