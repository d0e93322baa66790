// A stall in JIT-compiled code (tests/test-programs.py jit-node): run with
// --perf-basic-prof, V8 writes /tmp/perf-PID.map, which names the frames.
"use strict";

function fib(n) {
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

function spinFib(ms) {
	const end = Date.now() + ms;
	let x = 0;
	while (Date.now() < end)
		x += fib(18);
	return x;
}

console.log("pid " + process.pid);
setTimeout(() => spinFib(600), 100);
