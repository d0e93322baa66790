// A minimal Swift program whose main thread runs RunLoop.main (Core
// Foundation's run loop, as in an iOS app), for the run-loop detector on
// Linux.  Each argument is one step, run from a Timer 200 ms after the one
// before:
//
//   busy:MS     a Timer callback computes for MS ms
//   blocked:MS  a block posted with DispatchQueue.main.async waits MS ms on
//               a semaphore another thread signals
//   hitch:MS    a short callback (under the threshold: not a stall)
//
// Each step prints "step KIND begin NS" / "step KIND end NS elapsed_ms=X"
// with CLOCK_MONOTONIC nanoseconds, as the C apps do (tests/apps/steps.c),
// on standard error: `stallwatch run` prints its NDJSON on standard output,
// and a line of ours written into the middle of a long one would spoil both.
import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

func say(_ line: String) {
    fputs(line + "\n", stderr)
}

func monotonicNS() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

func step(_ kind: String, _ body: () -> Void) {
    let t0 = monotonicNS()
    say("step \(kind) begin \(t0)")
    body()
    let t1 = monotonicNS()
    say("step \(kind) end \(t1) elapsed_ms=\(Double(t1 - t0) / 1e6)")
}

var sink: UInt64 = 0

@inline(never)
func spin(_ ms: Int) {
    let end = monotonicNS() + Int64(ms) * 1_000_000
    var x: UInt64 = 1
    while monotonicNS() < end {
        x = x &* 6_364_136_223_846_793_005 &+ 1
    }
    sink = x
}

@inline(never)
func waitOnSemaphore(_ ms: Int) {
    let done = DispatchSemaphore(value: 0)
    DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(ms)) { done.signal() }
    done.wait()
}

var script = Array(CommandLine.arguments.dropFirst())

func runNext() {
    guard !script.isEmpty else {
        // idle a while first, so the last stall ends in a wait, not at exit
        _ = Timer.scheduledTimer(withTimeInterval: 0.2, repeats: false) { _ in
            say("done")
            exit(0)
        }
        return
    }
    let parts = script.removeFirst().split(separator: ":")
    guard parts.count == 2, let ms = Int(parts[1]) else {
        fputs("runloop-swift: bad step\n", stderr)
        exit(2)
    }
    let kind = String(parts[0])
    _ = Timer.scheduledTimer(withTimeInterval: 0.2, repeats: false) { _ in
        switch kind {
        case "blocked":
            DispatchQueue.main.async {
                step("blocked") { waitOnSemaphore(ms) }
                runNext()
            }
        default:
            step(kind) { spin(ms) }
            runNext()
        }
    }
}

runNext()
RunLoop.main.run()
