package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestConsumerSources(t *testing.T) {
	cases := []struct {
		name                 string
		n, queues, partition int
		want                 [][2]any // queue, partitions
	}{
		{"4 consumers split 8 partitions round robin", 4, 1, 8,
			[][2]any{{0, []int{0, 4}}, {0, []int{1, 5}}, {0, []int{2, 6}}, {0, []int{3, 7}}}},
		{"more consumers than partitions share them", 3, 1, 2,
			[][2]any{{0, []int{0}}, {0, []int{1}}, {0, []int{0}}}},
		{"consumers spread over queues first", 4, 2, 2,
			[][2]any{{0, []int{0}}, {1, []int{0}}, {0, []int{1}}, {1, []int{1}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := consumerSources(tc.n, tc.queues, tc.partition, Source{Group: "g", Max: 7})
			assert.Len(t, got, tc.n)
			for i, s := range got {
				assert.Equal(t, tc.want[i][0], s.Queue, "consumer %d queue", i)
				assert.Equal(t, tc.want[i][1], s.Partitions, "consumer %d partitions", i)
				assert.Equal(t, "g", s.Group)
				assert.Equal(t, 7, s.Max)
			}
		})
	}
}

func TestAllDests(t *testing.T) {
	assert.Equal(t, []Dest{{0, 0}, {0, 1}, {1, 0}, {1, 1}}, allDests(2, 2))
}
