#!/usr/bin/env node
"use strict";
// door-access-sim: local simulator of the Door Unlock Access Service (see --help).
let cli;
try {
  cli = require("../dist/src/simulator/cli.js");
} catch (err) {
  if (err && err.code === "MODULE_NOT_FOUND") {
    process.stderr.write("door-access-sim: compiled files not found; run `npm run build` first\n");
    process.exit(1);
  }
  throw err;
}
cli.main(process.argv.slice(2)).catch((err) => {
  process.stderr.write(`door-access-sim: ${err && err.message ? err.message : err}\n`);
  process.exit(1);
});
