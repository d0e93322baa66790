// A Rust program with a poll(2) loop, for tests/test-programs.py (scenario
// rust) and tests/test-demangle-rust.py.  Its arguments are steps, KIND:MS,
// one per loop iteration.  Each step prints "step KIND begin
// NS" / "step KIND end NS" with CLOCK_MONOTONIC nanoseconds, as the C apps
// do (tests/apps/steps.h).  Only the standard library: its generic code
// (HashMap, sort, format!) is compiled into the program, so the stall's
// frames carry Rust's manglings, legacy or v0, whichever the toolchain uses.
use std::collections::HashMap;

#[repr(C)]
struct PollFd {
    fd: i32,
    events: i16,
    revents: i16,
}

#[repr(C)]
struct Timespec {
    sec: i64,
    nsec: i64,
}

extern "C" {
    fn poll(fds: *mut PollFd, n: u64, timeout: i32) -> i32;
    fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
}

fn now_ns() -> u64 {
    let mut ts = Timespec { sec: 0, nsec: 0 };
    unsafe { clock_gettime(1, &mut ts) }; // CLOCK_MONOTONIC
    ts.sec as u64 * 1_000_000_000 + ts.nsec as u64
}

// Keys hashed, sorted and formatted until ms milliseconds have passed.
#[inline(never)]
fn handle_event(ms: u64) -> usize {
    let end = now_ns() + ms * 1_000_000;
    let mut total = 0;
    while now_ns() < end {
        let mut m: HashMap<String, u64> = HashMap::new();
        for i in 0..2000u64 {
            m.insert(format!("key{}", i ^ total as u64), i);
        }
        let mut v: Vec<u64> = m.values().copied().collect();
        v.sort_unstable();
        total += v.len();
    }
    total
}

// Numbers sorted until ms milliseconds have passed: another hang.
#[inline(never)]
fn sort_numbers(ms: u64) -> usize {
    let end = now_ns() + ms * 1_000_000;
    let mut total = 0;
    let mut x = 88172645463325252u64;
    while now_ns() < end {
        let mut v: Vec<u64> = (0..20000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            })
            .collect();
        v.sort();
        total += v.len();
    }
    total
}

fn main() {
    let mut fds = [PollFd { fd: -1, events: 0, revents: 0 }]; // a wait, never ready
    let mut done = 0;
    for arg in std::env::args().skip(1) {
        unsafe { poll(fds.as_mut_ptr(), 1, 200) };
        let (kind, ms) = arg.split_once(':').expect("steps are KIND:MS");
        let ms: u64 = ms.parse().expect("MS is a number");
        println!("step {} begin {}", kind, now_ns());
        // steps named sort* sort numbers, the others fill maps
        done += if kind.starts_with("sort") { sort_numbers(ms) } else { handle_event(ms) };
        println!("step {} end {}", kind, now_ns());
    }
    unsafe { poll(fds.as_mut_ptr(), 1, 200) };
    println!("done {}", done > 0);
}
