package main

import (
	"slices"
	"testing"
)

// Each kind of request goes round the replicas that serve it: the kinds
// every replica serves round all four, the HTTP-only ones round the HTTP
// replicas, the streams to the gRPC one, whichever client sends them.
func TestRotation(t *testing.T) {
	h, g := &httpTarget{}, &grpcTarget{}
	turns := newRotation([]target{h, h, h, g})
	for o, want := range map[op][]int{
		opPay:         {0, 1, 2, 3, 0, 1, 2, 3},
		opSettingsPut: {0, 1, 2, 0, 1, 2, 0, 1},
		opImport:      {3, 3, 3, 3, 3, 3, 3, 3},
	} {
		var got []int
		for range want {
			got = append(got, turns.next(o))
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s went to %v, want %v", opPaths[o], got, want)
		}
	}
}
