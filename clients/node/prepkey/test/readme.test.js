// The README's examples run as written: every ```js block of the README
// that ships with the package is written to a file beside this one, run
// with node against the sidecar (PREPKEY_URL), and what it prints is
// compared with the ```text block that follows it.
'use strict';
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { execFile } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const readme = path.join(path.dirname(require.resolve('prepkey/package.json')), 'README.md');
const blocks = [...fs.readFileSync(readme, 'utf8').matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1], text: m[2] }));
const examples = blocks.flatMap((b, i) => (b.lang === 'js' ? [{ code: b.text, output: blocks[i + 1]?.lang === 'text' ? blocks[i + 1].text : null }] : []));

test('the README has examples, each with its output', () => {
  assert.ok(examples.length >= 3, `${examples.length} examples in ${readme}`);
  for (const e of examples) assert.notEqual(e.output, null, `no \`\`\`text after:\n${e.code}`);
});

const url = `redis://:${encodeURIComponent(process.env.PREPKEY_PASSWORD)}@${process.env.PREPKEY_HOST || '127.0.0.1'}:${process.env.PREPKEY_PORT}`;

examples.forEach(({ code, output }, i) => {
  test(`README example ${i + 1}`, async () => {
    // Beside the tests, so that require('prepkey') finds this package (or
    // the installed one) and the client libraries theirs.
    const dir = fs.mkdtempSync(path.join(__dirname, '.readme-'));
    const file = path.join(dir, `example-${i + 1}.js`);
    fs.writeFileSync(file, code);
    try {
      const { err, stdout, stderr } = await new Promise((resolve) => {
        execFile(process.execPath, [file], { env: { ...process.env, PREPKEY_URL: url }, timeout: 30000 },
          (e, out, errOut) => resolve({ err: e, stdout: out, stderr: errOut }));
      });
      assert.equal(err, null, `example ${i + 1} failed:\n${stderr}`);
      assert.equal(stderr, '');
      assert.equal(stdout, output);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
