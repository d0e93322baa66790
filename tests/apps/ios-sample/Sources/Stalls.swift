// The stalls, one function each, so each tree's heaviest path ends in a
// name CHECKLIST.md can give in advance.
import Foundation

enum Stalls {
    /// Busy: counts primes on the main thread for about 600 ms.
    @inline(never)
    static func busyPrimes(for duration: TimeInterval = 0.6) -> Int {
        let end = Date().addingTimeInterval(duration)
        var found = 0
        var n = 2
        while Date() < end {
            if isPrime(n) { found += 1 }
            n += 1
        }
        return found
    }

    @inline(never)
    static func isPrime(_ n: Int) -> Bool {
        if n < 4 { return n > 1 }
        var d = 2
        while d * d <= n {
            if n % d == 0 { return false }
            d += 1
        }
        return true
    }

    /// Blocked: waits 800 ms on a semaphore a worker signals.
    @inline(never)
    static func waitForWorker(_ delay: TimeInterval = 0.8) {
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            Thread.sleep(forTimeInterval: delay)
            done.signal()
        }
        done.wait()
    }

    /// Blocked in the kernel: writes and syncs 64 MB to the caches folder.
    @inline(never)
    static func writeCache() {
        let url = FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask)[0]
            .appendingPathComponent("stallsample.bin")
        let data = Data(count: 64 << 20)
        try? data.write(to: url, options: .atomic)
        try? FileManager.default.removeItem(at: url)
    }

    /// Blocked: a synchronous hop to a queue that is busy for 500 ms.
    @inline(never)
    static func syncToWorker() {
        let queue = DispatchQueue(label: "dev.stallwatch.sample.worker")
        queue.async { Thread.sleep(forTimeInterval: 0.5) }
        queue.sync {}
    }

    /// A 120 ms hitch: under the 250 ms threshold, never reported.
    @inline(never)
    static func hitch() {
        Thread.sleep(forTimeInterval: 0.12)
    }
}
