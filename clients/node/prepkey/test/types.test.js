// index.d.ts is written by hand: tsc checks it against test/types/usage.ts,
// which uses every operation with real ioredis and node-redis clients and
// marks the calls the types must refuse. Needs `npm ci` in this package
// (TypeScript and @types/node, pinned in its package-lock.json).
'use strict';
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { execFile } = require('node:child_process');
const path = require('node:path');

test('index.d.ts type-checks against real clients', async () => {
  let tsc;
  try {
    tsc = require.resolve('typescript/bin/tsc', { paths: [path.join(__dirname, '..')] });
  } catch {
    assert.fail('TypeScript is not installed: run `npm ci` in clients/node/prepkey');
  }
  const project = path.join(__dirname, 'types');
  const { code, output } = await new Promise((resolve) => {
    execFile(process.execPath, [tsc, '-p', project], (err, stdout, stderr) => {
      resolve({ code: err ? err.code : 0, output: stdout + stderr });
    });
  });
  assert.equal(code, 0, `tsc -p test/types failed:\n${output}`);
  assert.equal(output, '');
});
