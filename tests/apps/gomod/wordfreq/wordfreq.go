// Package wordfreq is a dependency of stallapp-cgo (stallapp-cgo-dep.go),
// served to the go command from a module proxy in a folder by
// test-programs.py go, so that it lands in the module cache as a real
// dependency does: GOMODCACHE/example.com/wordfreq@v1.0.0/wordfreq.go.
package wordfreq

import "time"

var sink int

// Tally counts words for ms milliseconds; ranked spends most of it ranking
// them, else splitting text into words.
func Tally(ms int, ranked bool) int {
	end := time.Now().Add(time.Duration(ms) * time.Millisecond)
	n := 0
	for time.Now().Before(end) {
		if ranked {
			n += rank(split(64))
		} else {
			n += len(split(4096))
		}
	}
	return n + sink
}

// split makes n words, each from the bytes of the one before.
//
//go:noinline
func split(n int) []uint32 {
	words := make([]uint32, n)
	h := uint32(2166136261)
	for i := range words {
		for k := 0; k < 16; k++ {
			h = (h ^ uint32(i+k)) * 16777619
		}
		words[i] = h
	}
	return words
}

// rank orders the words by a slow insertion sort, many times over.
//
//go:noinline
func rank(words []uint32) int {
	for round := 0; round < 64; round++ {
		w := append([]uint32(nil), words...)
		for i := 1; i < len(w); i++ {
			for j := i; j > 0 && w[j] < w[j-1]; j-- {
				w[j], w[j-1] = w[j-1], w[j]
			}
		}
		sink += int(w[0] & 1)
	}
	return len(words)
}
