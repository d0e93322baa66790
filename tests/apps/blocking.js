// Blocking calls inside Node callbacks, for the agent's tests.
//
//     node blocking.js KIND...
//
// The loop ticks every 10 ms; every 300 ms the next KIND runs inside a
// timer callback, between "step KIND begin NS" and "step KIND end NS":
//
//     execSync    child_process.execSync("sleep 0.4"): a second libuv loop
//     spawnSync   child_process.spawnSync("sleep", ["0.4"])
//     timer       a 400 ms timer: the loop waits, no stall
'use strict';
const child = require('child_process');

function stamp(kind, what) {
  console.log(`step ${kind} ${what} ${process.hrtime.bigint()}`);
}

const kinds = process.argv.slice(2);
const tick = setInterval(() => {}, 10);
console.log('ready');

function next(i) {
  if (i === kinds.length) {
    setTimeout(() => { clearInterval(tick); console.log('done'); }, 300);
    return;
  }
  const kind = kinds[i];
  setTimeout(() => {
    stamp(kind, 'begin');
    if (kind === 'execSync') {
      child.execSync('sleep 0.4');
    } else if (kind === 'spawnSync') {
      child.spawnSync('sleep', ['0.4']);
    } else if (kind === 'timer') {
      setTimeout(() => { stamp(kind, 'end'); next(i + 1); }, 400);
      return;
    }
    stamp(kind, 'end');
    next(i + 1);
  }, 300);
}
next(0);
