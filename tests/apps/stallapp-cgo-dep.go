//go:build stallwatch_dep

// The steps of stallapp-cgo that spend their time in a dependency: built
// with -tags stallwatch_dep in a module that requires example.com/wordfreq
// (tests/apps/gomod/wordfreq), as test-programs.py go does.  "tally" steps
// call it one way, "tally2" steps another, so that a different one of its
// functions is heaviest: the same hang of the app's tallyWords either way.
package main

import "example.com/wordfreq"

func init() { moreSteps["tally"] = tallyWords }

//go:noinline
func tallyWords(kind string, ms int) {
	sink += wordfreq.Tally(ms, kind == "tally2")
}
