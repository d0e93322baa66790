// A Go program whose main thread runs a GLib main loop through cgo, as Go
// GUI bindings (gotk3, gtk4 bindings) do, for test-programs.py go:
//
//	stallapp-cgo STEP...
//
// Each STEP, KIND:MS, runs in its own iteration of the loop, 200 ms apart,
// in a Go callback the loop calls: "sort" steps (sort, sort2, ...) spend MS
// in sortNumbers, "count" steps in countWords (a map).  Each prints
// "step KIND begin NS" and "step KIND end NS elapsed_ms=X" with
// CLOCK_MONOTONIC nanoseconds, as tests/apps/steps.c does; a goroutine keeps
// Go's scheduler busy on other threads all along.  Ends with "done true".
// Built with -tags stallwatch_dep in a module, stallapp-cgo-dep.go adds
// "tally" steps, which spend MS in a dependency (tests/apps/gomod/wordfreq).
package main

/*
#cgo pkg-config: glib-2.0
#include <glib.h>
#include <time.h>

extern gboolean goStep(gpointer);

// one-shot: a repeating timeout's next time counts from before a long callback
static gboolean on_timeout(gpointer loop)
{
	if (goStep(loop))
		g_timeout_add(200, on_timeout, loop);
	return G_SOURCE_REMOVE;
}

static void run_loop(void)
{
	GMainLoop *loop = g_main_loop_new(NULL, FALSE);
	g_timeout_add(200, on_timeout, loop);
	g_main_loop_run(loop);
	g_main_loop_unref(loop);
}

static void quit_loop(gpointer loop) { g_main_loop_quit((GMainLoop *)loop); }

static long long mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
*/
import "C"

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The main goroutine stays on the main thread, where the loop runs.
func init() { runtime.LockOSThread() }

var steps []string
var next int
var sink int

// The steps other files of the program add, by kind without its digits.
var moreSteps = map[string]func(kind string, ms int){}

//go:noinline
func sortNumbers(ms int) {
	end := time.Now().Add(time.Duration(ms) * time.Millisecond)
	for time.Now().Before(end) {
		xs := make([]int, 4096)
		for i := range xs {
			xs[i] = (i * 7919) % 4099
		}
		sort.Ints(xs)
		sink += xs[0]
	}
}

//go:noinline
func countWords(ms int) {
	end := time.Now().Add(time.Duration(ms) * time.Millisecond)
	for time.Now().Before(end) {
		counts := map[string]int{}
		for i := 0; i < 4096; i++ {
			counts["w"+strconv.Itoa(i%1021)]++
		}
		sink += len(counts)
	}
}

//go:noinline
func handleStep(step string) {
	kind, arg, _ := strings.Cut(step, ":")
	ms, _ := strconv.Atoi(arg)
	begin := int64(C.mono_ns())
	fmt.Printf("step %s begin %d\n", kind, begin)
	if more := moreSteps[strings.TrimRight(kind, "0123456789")]; more != nil {
		more(kind, ms)
	} else if strings.HasPrefix(kind, "count") {
		countWords(ms)
	} else {
		sortNumbers(ms)
	}
	end := int64(C.mono_ns())
	fmt.Printf("step %s end %d elapsed_ms=%.1f\n", kind, end, float64(end-begin)/1e6)
}

//export goStep
func goStep(loop C.gpointer) C.gboolean {
	if next == len(steps) {
		C.quit_loop(loop)
		return 0
	}
	handleStep(steps[next])
	next++
	return 1
}

func main() {
	steps = os.Args[1:]
	go func() {
		for {
			time.Sleep(time.Millisecond)
		}
	}()
	fmt.Printf("ready pid=%d\n", os.Getpid())
	C.run_loop()
	fmt.Println("done", next == len(steps))
}
