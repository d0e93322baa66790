// The Swift variant of stallapp: the main thread runs RunLoop.main, as an
// iOS app's does, and stalls in the ways iOS apps stall, one step at a time:
//
//   timer:MS      a Timer callback computes for MS ms (busy)
//   semaphore:MS  a block posted with DispatchQueue.main.async waits on a
//                 semaphore another thread signals after MS ms (blocked)
//   fileio:MS     a Timer callback reads a FIFO synchronously; the writer
//                 closes it after MS ms (blocked)
//   actor:MS      a @MainActor task computes for MS ms (busy)
//   pump:MS       a Timer callback computes for MS ms and lets the run loop
//                 handle its sources every 5 ms, which polls with a zero
//                 timeout: still one busy stall, as no turn of it waits
//   hitch:MS      a short Timer callback (under the threshold: not a stall)
//   idle:MS       nothing happens for MS ms
//
// Each step prints "step KIND begin NS" / "step KIND end NS elapsed_ms=X"
// with CLOCK_MONOTONIC nanoseconds, like the C apps (tests/apps/steps.c), so
// the test can match stalls to what really happened.  Built with swiftc -g
// -Onone by the tests; the functions are kept out of line on purpose so the
// stacks show them.
import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

setvbuf(stdout, nil, _IOLBF, 0)

@inline(never)
func monotonicNS() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

/// Prints the begin and end lines around body.
func step(_ kind: String, _ body: () -> Void) {
    let t0 = monotonicNS()
    print("step \(kind) begin \(t0)")
    body()
    let t1 = monotonicNS()
    print("step \(kind) end \(t1) elapsed_ms=\(String(format: "%.3f", Double(t1 - t0) / 1e6))")
}

/// Work that cannot be optimised away, for ms milliseconds.
@inline(never)
func crunch(milliseconds ms: Int) -> UInt64 {
    let end = monotonicNS() + Int64(ms) * 1_000_000
    var acc: UInt64 = 0x9e37_79b9_7f4a_7c15
    while monotonicNS() < end {
        for i in 0..<100 {
            acc = (acc ^ UInt64(i)) &* 0x100_0000_01b3
        }
    }
    return acc
}

var sink: UInt64 = 0

final class Stalls {
    @inline(never)
    func timerFired(_ ms: Int) {
        step("timer") { sink &+= crunch(milliseconds: ms) }
    }

    @inline(never)
    func computeWhilePumping(_ ms: Int) {
        step("pump") {
            let end = monotonicNS() + Int64(ms) * 1_000_000
            while monotonicNS() < end {
                sink &+= crunch(milliseconds: 5)
                RunLoop.current.run(until: Date())
            }
        }
    }

    @inline(never)
    func hitch(_ ms: Int) {
        step("hitch") { sink &+= crunch(milliseconds: ms) }
    }

    @inline(never)
    func waitForWorker(_ ms: Int) {
        let done = DispatchSemaphore(value: 0)
        step("semaphore") {
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(ms)) {
                done.signal()
            }
            done.wait()
        }
    }

    @inline(never)
    func readSlowFile(_ ms: Int) {
        let path = NSTemporaryDirectory() + "stallapp-swift-\(getpid()).fifo"
        unlink(path)
        guard mkfifo(path, 0o600) == 0 else {
            print("fileio unavailable")
            return
        }
        defer { unlink(path) }
        let writer = Thread {
            let fd = open(path, O_WRONLY)
            usleep(useconds_t(ms * 1000))
            _ = write(fd, "x", 1)
            close(fd)
        }
        writer.start()
        step("fileio") {
            let file = FileHandle(forReadingAtPath: path)
            let data = file?.readDataToEndOfFile()
            sink &+= UInt64(data?.count ?? 0)
            try? file?.close()
        }
    }
}

@MainActor
@inline(never)
func computeOnMainActor(_ ms: Int) async -> UInt64 {
    var r: UInt64 = 0
    step("actor") { r = crunch(milliseconds: ms) }
    return r
}

let stalls = Stalls()
var script = Array(CommandLine.arguments.dropFirst())
let gapMS = 200

/// Runs the next step of the script from the run loop, then schedules the one after.
func next(after ms: Int) {
    _ = Timer.scheduledTimer(withTimeInterval: Double(ms) / 1000, repeats: false) { _ in
        runNext()
    }
}

func runNext() {
    guard !script.isEmpty else {
        print("done")
        exit(0)
    }
    let arg = script.removeFirst()
    let parts = arg.split(separator: ":")
    guard parts.count == 2, let ms = Int(parts[1]) else {
        fputs("stallapp-swift: bad step '\(arg)'\n", stderr)
        exit(2)
    }
    switch parts[0] {
    case "timer":
        stalls.timerFired(ms)
        next(after: gapMS)
    case "pump":
        stalls.computeWhilePumping(ms)
        next(after: gapMS)
    case "hitch":
        stalls.hitch(ms)
        next(after: gapMS)
    case "fileio":
        stalls.readSlowFile(ms)
        next(after: gapMS)
    case "semaphore":
        DispatchQueue.main.async {
            stalls.waitForWorker(ms)
            next(after: gapMS)
        }
    case "actor":
        Task { @MainActor in
            sink &+= await computeOnMainActor(ms)
            next(after: gapMS)
        }
    case "idle":
        next(after: ms)
    default:
        fputs("stallapp-swift: unknown step '\(arg)'\n", stderr)
        exit(2)
    }
}

print("ready pid=\(getpid())")
next(after: gapMS)
RunLoop.main.run()
